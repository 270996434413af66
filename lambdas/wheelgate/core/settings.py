"""The promoter's settings: one model, written into the function's environment by the stack and
read from it by the promoter (and by local mode, which writes it too), so the two cannot
disagree.

Each field is read from the variable of :mod:`wheelgate.core.env_names` its alias names and
written back to it by :meth:`PromoterSettings.to_env`. The settings a gate cannot do without
have no default: with the trusted reporter id, the allowed index directories or the verdict
key missing the promoter refuses to start, naming each missing variable at once, instead of
accepting any writer, any directory or releasing files unsigned.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic_core import PydanticUndefined

from wheelgate.core.env_names import (
    ENV_ALLOW_BUILD_TAG_RERELEASES,
    ENV_ALLOW_NEW_LOCAL_LABELS,
    ENV_ALLOWED_INDEXES,
    ENV_BLOCK_ALL_ON_FAILURE,
    ENV_BREAK_GLASS_ID,
    ENV_DASHBOARD_URL,
    ENV_DEAD_LETTER_QUEUE_URL,
    ENV_FANOUT_COPY_CONCURRENCY,
    ENV_FANOUT_MIN_BYTES,
    ENV_FANOUT_MIN_FILES,
    ENV_FANOUT_STATE_MACHINE_ARN,
    ENV_IMPORT_SOURCES,
    ENV_LISTING_RETENTION,
    ENV_MANIFEST_QUEUE_URL,
    ENV_NIGHTLY_BASE_URL,
    ENV_NIGHTLY_BUCKET,
    ENV_NIGHTLY_DISTRIBUTION_ID,
    ENV_NIGHTLY_PAGE_RETENTION_DAYS,
    ENV_NIGHTLY_RETENTION_MODE,
    ENV_REPOSITORY_URL,
    ENV_REQUIRED_TESTS,
    ENV_RUN_EXPIRY_DAYS,
    ENV_STAGING_BASE_URL,
    ENV_STAGING_BUCKET,
    ENV_TEST_URL_HOSTS,
    ENV_TRUSTED_DEPS_ID,
    ENV_TRUSTED_REPORTER_ID,
    ENV_VERDICT_KEY_ARN,
)
from wheelgate.core.import_sources import ImportSource
from wheelgate.core.layout import base_url
from wheelgate.core.setting_parsers import (
    DEFAULT_TEST_URL_HOSTS,
    REQUIRED_HINTS,
    is_deferred,
    parse_allowed_indexes,
    parse_dashboard_url,
    parse_import_sources,
    parse_listing_retention,
    parse_new_local_labels,
    parse_repository_url,
    parse_required_tests,
    parse_retention_days,
    parse_retention_mode,
    parse_test_url_hosts,
    write_flag,
    write_indexes,
    write_sorted,
    write_sources,
    write_tests,
)
from wheelgate.core.setting_values import (
    ListingRetention,
    NewLocalLabels,
    PageRetention,
    SettingProblem,
    SettingsError,
)

#: Defaults of the fan-out thresholds (``fanout`` in cdk.json overrides them).
DEFAULT_FANOUT_MIN_FILES = 100
DEFAULT_FANOUT_MIN_BYTES = 32 * 1024**3
#: Files the state machine hashes, and copies, at once: each Distributed Map's MaxConcurrency
#: (the ``fanout`` setting's ``hash_concurrency`` and ``copy_concurrency``). 200 promotes 2,000
#: files of 2-8 GB in about 10 minutes in bench/fanout_cost.py's model (20 at half its assumed
#: throughputs) with a fifth of Lambda's default account concurrency of 1,000; docs/deploy.md
#: weighs them against the quotas they touch.
DEFAULT_FANOUT_HASH_CONCURRENCY = 200
DEFAULT_FANOUT_COPY_CONCURRENCY = 200


def _env_name(info: ValidationInfo) -> str:
    name = info.field_name or ""
    alias = PromoterSettings.model_fields[name].validation_alias if name else None
    return alias if isinstance(alias, str) else name


def _text(value: object, info: ValidationInfo) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SettingsError(f"{_env_name(info)} must be a non-empty string, not {value!r}")
    return value.strip()


def _flag(value: object, info: ValidationInfo) -> bool:
    if isinstance(value, bool):
        return value
    raw = str(value).strip().lower()
    if raw not in ("true", "false"):
        raise SettingsError(f"{_env_name(info)} must be true or false, not {raw!r}")
    return raw == "true"


def _count(value: object, info: ValidationInfo) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raw = str(value).strip()
    if not (isinstance(value, str) and raw.isascii() and raw.isdigit()):
        raise SettingsError(f"{_env_name(info)} must be a non-negative integer, not {raw!r}")
    return int(raw)


def _base_url(value: object, info: ValidationInfo) -> str:
    # A token is kept whole: a slash added to it would land after the deployed value.
    return str(value) if is_deferred(value) else base_url(_text(value, info))


def _concurrency(value: object, info: ValidationInfo) -> int:
    return max(1, _count(value, info))


Text = Annotated[str, PlainValidator(_text)]
BaseUrl = Annotated[str, PlainValidator(_base_url)]
Flag = Annotated[bool, PlainValidator(_flag), PlainSerializer(write_flag, return_type=str)]
Count = Annotated[int, PlainValidator(_count), PlainSerializer(str, return_type=str)]


def _var(name: str, default: Any = PydanticUndefined) -> Any:
    """A field read from, and written to, the variable ``name``."""
    return Field(default, validation_alias=name, serialization_alias=name)


class PromoterSettings(BaseModel):
    """Everything the promoter needs to know about its deployment, one field per variable.

    Built from the environment (:meth:`from_env`, the promoter at cold start) or by keyword
    (the stack, within :func:`deferring`; local mode; tests), and written back to variables by
    :meth:`to_env`. Raises ``pydantic.ValidationError`` for a bad keyword value.
    """

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")

    staging_bucket: Text = _var(ENV_STAGING_BUCKET)
    nightly_bucket: Text = _var(ENV_NIGHTLY_BUCKET)
    #: Public base URL of the nightly index, ending in ``/``.
    nightly_base_url: BaseUrl = _var(ENV_NIGHTLY_BASE_URL)
    #: Public base URL of the staging index, ending in ``/``: the status pages link each
    #: directory's run history under it (``history/<dir>/``); ``None``: no such link.
    staging_base_url: BaseUrl | None = _var(ENV_STAGING_BASE_URL, None)
    nightly_distribution_id: Text | None = _var(ENV_NIGHTLY_DISTRIBUTION_ID, None)
    trusted_reporter_id: Text = _var(ENV_TRUSTED_REPORTER_ID)
    trusted_deps_id: Text | None = _var(ENV_TRUSTED_DEPS_ID, None)
    required_tests: Annotated[
        Mapping[str, tuple[str, ...]],
        PlainValidator(parse_required_tests),
        PlainSerializer(write_tests, return_type=str),
    ] = _var(ENV_REQUIRED_TESTS, {})
    #: Where sets may be promoted to; empty: any directory (local mode's :data:`ANY_INDEX`).
    allowed_indexes: Annotated[
        frozenset[str],
        PlainValidator(parse_allowed_indexes),
        PlainSerializer(write_indexes, return_type=str),
    ] = _var(ENV_ALLOWED_INDEXES)
    break_glass_id: Text | None = _var(ENV_BREAK_GLASS_ID, None)
    block_all_on_failure: Flag = _var(ENV_BLOCK_ALL_ON_FAILURE, True)
    allow_build_tag_rereleases: Flag = _var(ENV_ALLOW_BUILD_TAG_RERELEASES, False)
    allow_new_local_labels: Annotated[
        NewLocalLabels,
        PlainValidator(parse_new_local_labels),
        PlainSerializer(NewLocalLabels.to_json, return_type=str),
    ] = _var(ENV_ALLOW_NEW_LOCAL_LABELS, NewLocalLabels())
    test_url_hosts: Annotated[
        frozenset[str],
        PlainValidator(parse_test_url_hosts),
        PlainSerializer(write_sorted, return_type=str),
    ] = _var(ENV_TEST_URL_HOSTS, frozenset(DEFAULT_TEST_URL_HOSTS))
    #: Console URL of the stack's dashboard (the status page links it); ``None``: no link.
    dashboard_url: Annotated[str, PlainValidator(parse_dashboard_url)] | None = _var(
        ENV_DASHBOARD_URL, None
    )
    #: Days after which staging's lifecycle expires a run's files (``runs/``): the run
    #: history's ``expires_at`` of each staged file. ``None``: unknown, none recorded.
    run_expiry_days: Count | None = _var(ENV_RUN_EXPIRY_DAYS, None)
    #: The repository's web URL: the run history page links commits under it; ``None``: no
    #: link.
    repository_url: Annotated[str, PlainValidator(parse_repository_url)] | None = _var(
        ENV_REPOSITORY_URL, None
    )
    #: The fan-out state machine; ``None``: every run is promoted in one invocation.
    fanout_state_machine_arn: Text | None = _var(ENV_FANOUT_STATE_MACHINE_ARN, None)
    fanout_min_files: Count = _var(ENV_FANOUT_MIN_FILES, DEFAULT_FANOUT_MIN_FILES)
    fanout_min_bytes: Count = _var(ENV_FANOUT_MIN_BYTES, DEFAULT_FANOUT_MIN_BYTES)
    #: The copy map's concurrency, as the stack sets it. The promoter no longer paces by it:
    #: copy steps sign nothing, the publish step signs at the fan-out share (core/quotas.py).
    fanout_copy_concurrency: Annotated[
        int, PlainValidator(_concurrency), PlainSerializer(str, return_type=str)
    ] = _var(ENV_FANOUT_COPY_CONCURRENCY, DEFAULT_FANOUT_COPY_CONCURRENCY)
    #: Where a failed fan-out execution sends its manifest's event back (see
    #: ``FANOUT_MAX_EXECUTIONS``).
    manifest_queue_url: Text | None = _var(ENV_MANIFEST_QUEUE_URL, None)
    dead_letter_queue_url: Text | None = _var(ENV_DEAD_LETTER_QUEUE_URL, None)
    #: The lock nightly index pages are written with: both or neither (``None``: the bucket's
    #: default); see :attr:`page_retention`.
    nightly_retention_mode: Annotated[str, PlainValidator(parse_retention_mode)] | None = _var(
        ENV_NIGHTLY_RETENTION_MODE, None
    )
    nightly_page_retention_days: (
        Annotated[int, PlainValidator(parse_retention_days), PlainSerializer(str, return_type=str)]
        | None
    ) = _var(ENV_NIGHTLY_PAGE_RETENTION_DAYS, None)
    listing_retention: Annotated[
        ListingRetention,
        PlainValidator(parse_listing_retention),
        PlainSerializer(ListingRetention.to_json, return_type=str),
    ] = _var(ENV_LISTING_RETENTION, ListingRetention())
    #: The KMS key that signs verdicts (a new ARN is a key rotation).
    verdict_key_arn: Text = _var(ENV_VERDICT_KEY_ARN)
    #: Where import requests may read from (``import_sources``); empty: nowhere.
    import_sources: Annotated[
        tuple[ImportSource, ...],
        PlainValidator(parse_import_sources),
        PlainSerializer(write_sources, return_type=str),
    ] = _var(ENV_IMPORT_SOURCES, ())

    @model_validator(mode="after")
    def _page_lock_is_whole(self) -> PromoterSettings:
        if (self.nightly_retention_mode is None) != (self.nightly_page_retention_days is None):
            missing = (
                ENV_NIGHTLY_RETENTION_MODE
                if self.nightly_retention_mode is None
                else ENV_NIGHTLY_PAGE_RETENTION_DAYS
            )
            raise SettingsError.of([SettingProblem(missing, _half_a_page_lock(missing))])
        return self

    @property
    def page_retention(self) -> PageRetention | None:
        """The lock nightly index pages are written with (``None``: the bucket's default)."""
        if self.nightly_retention_mode is None or self.nightly_page_retention_days is None:
            return None
        return PageRetention(self.nightly_retention_mode, self.nightly_page_retention_days)

    @classmethod
    def env_names(cls) -> tuple[str, ...]:
        """Every variable the settings are read from and written to."""
        return tuple(str(f.validation_alias) for f in cls.model_fields.values())

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> PromoterSettings:
        """Read settings from ``environ`` (a blank variable is an unset one); raise
        :class:`SettingsError` naming every missing or bad variable (its ``problems``, one per
        variable)."""
        values = {
            name: environ[name].strip() for name in cls.env_names() if environ.get(name, "").strip()
        }
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise SettingsError.of(_problems(exc)) from None

    def to_env(self) -> dict[str, str]:
        """The variables that :meth:`from_env` reads back as these settings (an unset optional
        setting is left out)."""
        written = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        return {name: str(value) for name, value in written.items()}


def _problems(exc: ValidationError) -> list[SettingProblem]:
    """Each error of ``exc`` as the problem of its variable, in the order of the fields."""
    problems: list[SettingProblem] = []
    for error in exc.errors():
        name = str(error["loc"][0]) if error["loc"] else ""
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, SettingsError) and cause.problems:
            problems.extend(cause.problems)
        elif error["type"] == "missing":
            hint = REQUIRED_HINTS.get(name)
            suffix = f": set it to {hint}" if hint else ""
            problems.append(SettingProblem(name, f"environment variable {name} is not set{suffix}"))
        elif isinstance(cause, SettingsError):
            problems.append(SettingProblem(name, str(cause)))
        else:
            problems.append(SettingProblem(name, f"{name}: {error['msg']}"))
    return problems


_T = TypeVar("_T")


def _read(environ: Mapping[str, str], name: str, parse: Callable[[object], _T], unset: _T) -> _T:
    raw = environ.get(name, "").strip()
    return parse(raw) if raw else unset


def test_url_hosts_from_env(environ: Mapping[str, str]) -> frozenset[str]:
    """The hosts of ``WHEELGATE_TEST_URL_HOSTS``, or :data:`DEFAULT_TEST_URL_HOSTS` when it is
    unset. Raises :class:`SettingsError` for a value that is not a non-empty list of names."""
    return _read(
        environ, ENV_TEST_URL_HOSTS, parse_test_url_hosts, frozenset(DEFAULT_TEST_URL_HOSTS)
    )


def allowed_indexes_from_env(environ: Mapping[str, str]) -> frozenset[str]:
    """The index directories of ``WHEELGATE_ALLOWED_INDEXES`` for the CLI, which refuses what
    the promoter would: empty (any) when it is unset or :data:`ANY_INDEX` (the promoter itself
    refuses to start without it). Raises :class:`SettingsError` for an invalid, repeated or
    nested directory."""
    return _read(environ, ENV_ALLOWED_INDEXES, parse_allowed_indexes, frozenset())


def dashboard_url_from_env(environ: Mapping[str, str]) -> str | None:
    """The ``https`` URL of ``WHEELGATE_DASHBOARD_URL``, ``None`` when unset or empty.

    Raises :class:`SettingsError` for a value that is not an absolute ``https`` URL.
    """
    return _read(environ, ENV_DASHBOARD_URL, parse_dashboard_url, None)


def listing_retention_from_env(environ: Mapping[str, str]) -> ListingRetention:
    """The rules of ``WHEELGATE_LISTING_RETENTION`` (unset: every page lists every file).
    Raises :class:`SettingsError` naming the bad key."""
    return _read(environ, ENV_LISTING_RETENTION, parse_listing_retention, ListingRetention())


def import_sources_from_env(environ: Mapping[str, str]) -> tuple[ImportSource, ...]:
    """The allow-list of ``WHEELGATE_IMPORT_SOURCES`` (empty when unset: no import source).
    Raises :class:`SettingsError` naming a bad entry."""
    return _read(environ, ENV_IMPORT_SOURCES, parse_import_sources, ())


def page_retention_from_env(environ: Mapping[str, str]) -> PageRetention | None:
    """The nightly pages' lock from ``WHEELGATE_NIGHTLY_RETENTION_MODE`` and
    ``WHEELGATE_NIGHTLY_PAGE_RETENTION_DAYS``; ``None`` when both are unset.

    Raises :class:`SettingsError` when only one is set, the mode is not an Object Lock mode or
    the days are not a positive whole number.
    """
    mode = _read(environ, ENV_NIGHTLY_RETENTION_MODE, parse_retention_mode, None)
    days = _read(environ, ENV_NIGHTLY_PAGE_RETENTION_DAYS, parse_retention_days, None)
    if mode is None and days is None:
        return None
    if mode is None or days is None:
        missing = ENV_NIGHTLY_RETENTION_MODE if mode is None else ENV_NIGHTLY_PAGE_RETENTION_DAYS
        raise SettingsError(_half_a_page_lock(missing))
    return PageRetention(mode=mode, days=days)


def _half_a_page_lock(missing: str) -> str:
    return (
        f"{missing} is not set: set both {ENV_NIGHTLY_RETENTION_MODE} and "
        f"{ENV_NIGHTLY_PAGE_RETENTION_DAYS}, or neither"
    )
