"""Reading each of the promoter's settings from its variable's text (or taking its Python
value) and writing it back: the parsers and writers of the fields of
:class:`~wheelgate.core.settings.PromoterSettings`, each raising :class:`SettingsError` naming
its variable."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from urllib.parse import urlsplit

from wheelgate.core.env_names import (
    ENV_ALLOW_NEW_LOCAL_LABELS,
    ENV_ALLOWED_INDEXES,
    ENV_DASHBOARD_URL,
    ENV_IMPORT_SOURCES,
    ENV_LISTING_RETENTION,
    ENV_NIGHTLY_PAGE_RETENTION_DAYS,
    ENV_NIGHTLY_RETENTION_MODE,
    ENV_REPOSITORY_URL,
    ENV_REQUIRED_TESTS,
    ENV_TEST_URL_HOSTS,
    ENV_TRUSTED_REPORTER_ID,
    ENV_VERDICT_KEY_ARN,
)
from wheelgate.core.import_sources import ImportSource, check_import_sources
from wheelgate.core.layout import LayoutError, check_index, check_index_dirs
from wheelgate.core.setting_values import (
    RETENTION_MODES,
    ListingRetention,
    NewLocalLabels,
    SettingsError,
)

#: Hosts test URLs may point to when ``WHEELGATE_TEST_URL_HOSTS`` is unset.
DEFAULT_TEST_URL_HOSTS = ("github.com",)
#: ``WHEELGATE_ALLOWED_INDEXES`` meaning any index directory: only local mode sets it (its
#: ``wheelgate local`` without ``--index``); the stack always lists ``index_dirs``.
ANY_INDEX = "*"

#: The variables the settings could not go without, and what to set each to.
REQUIRED_HINTS = {
    ENV_TRUSTED_REPORTER_ID: "the unique id (AROA...) of the reporter role, the only writer "
    "whose manifests are decided",
    ENV_ALLOWED_INDEXES: "the JSON list of index directories the promoter may publish to "
    f"(index_dirs), or {ANY_INDEX!r} for any in local mode",
    ENV_VERDICT_KEY_ARN: "the ARN of the KMS key that signs released files' verdicts",
}

#: Within :func:`deferring`: which strings are deploy-time values (CDK tokens at synthesis).
_deferred: ContextVar[Callable[[str], bool] | None] = ContextVar("deferred", default=None)


@contextmanager
def deferring(is_unresolved: Callable[[str], bool]) -> Iterator[None]:
    """Settings built within keep a string ``is_unresolved`` (a CDK token) as it is: its value
    exists only once deployed, so it is checked when the promoter reads it at cold start."""
    token = _deferred.set(is_unresolved)
    try:
        yield
    finally:
        _deferred.reset(token)


def is_deferred(value: object) -> bool:
    is_unresolved = _deferred.get()
    return is_unresolved is not None and isinstance(value, str) and is_unresolved(value)


def json_value(value: object, name: str) -> object:
    """``value`` as read from JSON when it is the variable's text, else ``value`` itself."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"{name} is not valid JSON: {exc}") from exc


def json_strings(value: object, name: str, what: str) -> tuple[str, ...]:
    value = json_value(value, name)
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise SettingsError(f"{name} must be a JSON list of {what}")
    items = tuple(value)
    if not all(isinstance(v, str) for v in items):
        raise SettingsError(f"{name} must be a JSON list of {what}")
    return items


def parse_dashboard_url(value: object) -> str:
    url = str(value).strip()
    if is_deferred(value):
        return url
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.netloc or any(c.isspace() for c in url):
        raise SettingsError(f"{ENV_DASHBOARD_URL} must be an https URL, not {url!r}")
    return url


def parse_repository_url(value: object) -> str:
    url = str(value).strip().rstrip("/")
    if is_deferred(value):
        return url
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or any(c.isspace() for c in url):
        raise SettingsError(f"{ENV_REPOSITORY_URL} must be an http(s) URL, not {url!r}")
    return url


def parse_required_tests(value: object) -> Mapping[str, tuple[str, ...]]:
    tests = json_value(value, ENV_REQUIRED_TESTS)
    if not isinstance(tests, Mapping) or not all(
        isinstance(v, list | tuple) and all(isinstance(t, str) for t in v) for v in tests.values()
    ):
        raise SettingsError(f"{ENV_REQUIRED_TESTS} must map index directories to test names")
    try:
        return {check_index(str(k)): tuple(v) for k, v in tests.items()}
    except LayoutError as exc:
        raise SettingsError(f"{ENV_REQUIRED_TESTS}: {exc}") from exc


def parse_allowed_indexes(value: object) -> frozenset[str]:
    """The allowed directories; ``frozenset()`` (any) only from :data:`ANY_INDEX`, or from a
    Python caller that gives none."""
    if value == ANY_INDEX:
        return frozenset()
    indexes = json_strings(value, ENV_ALLOWED_INDEXES, "index directories")
    if not indexes and isinstance(value, str):
        raise SettingsError(
            f"{ENV_ALLOWED_INDEXES} lists no index directory: give "
            f"{REQUIRED_HINTS[ENV_ALLOWED_INDEXES]}"
        )
    try:
        return frozenset(check_index_dirs(indexes))
    except LayoutError as exc:
        raise SettingsError(f"{ENV_ALLOWED_INDEXES}: {exc}") from exc


def parse_test_url_hosts(value: object) -> frozenset[str]:
    hosts = json_strings(value, ENV_TEST_URL_HOSTS, "host names") or DEFAULT_TEST_URL_HOSTS
    if not all(host and host == host.strip().lower() for host in hosts):
        raise SettingsError(f"{ENV_TEST_URL_HOSTS} must list lower-case host names")
    return frozenset(hosts)


def parse_import_sources(value: object) -> tuple[ImportSource, ...]:
    if isinstance(value, tuple | list) and all(isinstance(v, ImportSource) for v in value):
        return tuple(value)
    entries = json_strings(value, ENV_IMPORT_SOURCES, "buckets or bucket/prefix/ entries")
    try:
        return check_import_sources(entries)
    except ValueError as exc:
        raise SettingsError(f"{ENV_IMPORT_SOURCES}: {exc}") from exc


def parse_new_local_labels(value: object) -> NewLocalLabels:
    if isinstance(value, NewLocalLabels):
        return value
    return NewLocalLabels.from_value(
        json_value(value, ENV_ALLOW_NEW_LOCAL_LABELS), name=ENV_ALLOW_NEW_LOCAL_LABELS
    )


def parse_listing_retention(value: object) -> ListingRetention:
    if isinstance(value, ListingRetention):
        return value
    return ListingRetention.from_value(
        json_value(value, ENV_LISTING_RETENTION), name=ENV_LISTING_RETENTION
    )


def parse_retention_mode(value: object) -> str:
    mode = str(value).strip()
    if mode not in RETENTION_MODES:
        raise SettingsError(
            f"{ENV_NIGHTLY_RETENTION_MODE} is {mode!r}; use one of {', '.join(RETENTION_MODES)}"
        )
    return mode


def parse_retention_days(value: object) -> int:
    days = str(value).strip()
    if isinstance(value, bool) or not days.isdigit() or int(days) < 1:
        raise SettingsError(
            f"{ENV_NIGHTLY_PAGE_RETENTION_DAYS} must be a positive number of days, not {days!r}"
        )
    return int(days)


def write_sorted(value: Iterable[str]) -> str:
    return json.dumps(sorted(value))


def write_flag(value: bool) -> str:
    return "true" if value else "false"


def write_tests(value: Mapping[str, tuple[str, ...]]) -> str:
    return json.dumps({k: list(v) for k, v in value.items()}, sort_keys=True)


def write_sources(value: tuple[ImportSource, ...]) -> str:
    return json.dumps([f"{s.bucket}/{s.prefix}" if s.prefix else s.bucket for s in value])


def write_indexes(value: frozenset[str]) -> str:
    return write_sorted(value) if value else ANY_INDEX
