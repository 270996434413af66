"""WheelGate's settings: the typed properties of the :class:`~stacks.wheelgate.WheelGate`
construct, which this repository's ``cdk.json`` holds as its ``wheelgate`` context object.

Every setting is required, so a deployment states all of its choices in one place; only the
nullable ones (``oidc_provider_arn``, ``break_glass_role_arn``, ``break_glass_role_id``,
``cache_bucket_name``, ``alarm_email``, ``custom_domain``, ``waf_rate_limit``,
``waf_web_acl_arn``) may be ``None`` or left out, and a few have a default: ``release_tags``
(none: tags release only when listed), ``staging_versioned`` (``false``),
``block_all_on_failure`` (``true``), ``allow_build_tag_rereleases`` and
``allow_new_local_labels`` (``false``), ``test_url_hosts`` (``github.com``), ``import_sources``
(none), ``fanout`` (:data:`~wheelgate.core.settings.DEFAULT_FANOUT_MIN_FILES` files or
``DEFAULT_FANOUT_MIN_BYTES`` bytes, maps of ``DEFAULT_FANOUT_HASH_CONCURRENCY`` and
``DEFAULT_FANOUT_COPY_CONCURRENCY``) and
``listing_retention`` (every version listed). ``None`` for a setting with a default means the
default (CDK drops ``null`` context values anyway).

A bad value raises :class:`ConfigError`, whose :class:`Problem` s name each key as
``cdk.json`` spells it (``wheelgate.index_dirs``), whether the settings came from a CDK app's
own code or from ``cdk.json`` (:mod:`stacks.context` adds how to set a key there).

This module needs pydantic and ``wheelgate.core`` alone, not the CDK. A new setting is one
field here (typed with one of the annotated types of :mod:`.setting_types`, or with an
:class:`~stacks.setting_errors.Expect` phrase of its own) and one row of the table in
docs/deploy.md, which tests/infra/test_props.py checks against :class:`WheelGateProps`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import (
    Strict,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from wheelgate.core.import_sources import ImportSource, check_import_source
from wheelgate.core.layout import LayoutError, check_index_dirs
from wheelgate.core.run_window import run_stage_window_days
from wheelgate.core.setting_parsers import DEFAULT_TEST_URL_HOSTS
from wheelgate.core.setting_values import ListingRetention, NewLocalLabels, SettingsError

from .oidc_subjects import DEPS_EVENTS, branch_ref, build_subject_patterns, customized_subject
from .setting_errors import CONTEXT_KEY, ConfigError, Expect, key, problem
from .setting_types import (
    CustomDomain,
    CustomDomains,
    FanOutSettings,
    Flag,
    NewLabels,
    NightlyRetention,
    NonEmptyString,
    NullableInt,
    NullableString,
    PositiveInt,
    Retention,
    Settings,
    StrictString,
    Strings,
    TestsByIndex,
    WorkflowFile,
    WorkflowFiles,
)

#: Events whose runs may build and report. Never ``workflow_dispatch`` (anyone with write access
#: can start it on main), ``repository_dispatch``, ``workflow_call`` or pull request events.
RELEASE_EVENTS = ("push", "release", "schedule")
#: Refs of tags: only ``release_tags`` may name them, never ``build_refs``.
TAG_REFS = "refs/tags/"
#: A role's unique id as IAM reports it (``aws iam get-role ... --query Role.RoleId``).
_ROLE_ID = re.compile(r"AROA[A-Z0-9]{16,}")
#: A cache key prefix: ``/``-separated segments of the characters deps.yml keys allow, each
#: ending in ``/``; no ``*`` or ``?``, which would be wildcards in the IAM resource ARN.
_CACHE_PREFIX = re.compile(r"(?:(?!\.{1,2}/)[A-Za-z0-9!_.'()+=@,~-]+/)+")
#: AWS WAF's bounds for a rate-based rule's limit (requests per client IP in 5 minutes).
WAF_RATE_LIMIT_RANGE = (100, 2_000_000_000)
#: IAM's default quota for a role trust policy is 2,048 characters; keep the build patterns
#: well under it so that the aud condition and the JSON around them fit too.
MAX_TRUST_PATTERN_CHARS = 1600
#: The periods CloudWatch Logs accepts for ``RetentionInDays``.
LOG_RETENTION_DAYS = (
    *(1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731),
    *(1096, 1827, 2192, 2557, 2922, 3288, 3653),
)


class WheelGateProps(Settings):
    """The settings of one WheelGate: the ``wheelgate`` object of ``cdk.json``, key for key.

    See docs/deploy.md for each key. Built from keywords or a mapping
    (``WheelGateProps.model_validate(values)``), it raises :class:`ConfigError` naming every
    bad key (cross-key rules are checked once each key is valid). Frozen: derive another
    deployment's settings with ``props.model_copy(update={...})`` and then validate them again
    (``WheelGateProps.model_validate({**props.model_dump(), ...})``).
    """

    github_repo: NonEmptyString
    default_branch: NonEmptyString
    build_refs: Strings
    release_tags: Annotated[tuple[StrictString, ...], Expect("a list of strings")] = ()
    release_workflows: WorkflowFiles
    reporter_workflow: WorkflowFile
    release_events: Strings
    deps_workflows: WorkflowFiles
    dev_sub_patterns: Strings
    staging_run_expiry_days: PositiveInt
    #: Days a run's index pages live (they are tagged; a shorter rule than the run's files).
    staging_run_page_expiry_days: PositiveInt
    staging_versioned: Flag = False
    nightly_retention: Annotated[NightlyRetention, Expect("an object with mode and days")]
    nightly_noncurrent_version_days: PositiveInt
    #: Days each nightly index page version is locked (the files keep ``nightly_retention``).
    nightly_page_retention_days: PositiveInt
    access_log_expiry_days: PositiveInt
    log_retention_days: PositiveInt
    index_dirs: Strings
    required_tests: TestsByIndex
    allow_build_tag_rereleases: Flag = False
    #: Where a labelled version may gain a new local label (``WHEELGATE_ALLOW_NEW_LOCAL_LABELS``).
    allow_new_local_labels: NewLabels = NewLocalLabels()
    #: Hosts test URLs may point to (``WHEELGATE_TEST_URL_HOSTS``).
    test_url_hosts: Strings = DEFAULT_TEST_URL_HOSTS
    fanout: Annotated[FanOutSettings, Expect("an object or null")] = FanOutSettings()
    #: Which versions index pages list, per index directory (``WHEELGATE_LISTING_RETENTION``).
    listing_retention: Retention = ListingRetention()
    block_all_on_failure: Flag = True
    #: Which verdict signing key the stack holds: raising it rotates the key (docs/operations.md).
    verdict_key_generation: PositiveInt = 1
    dev_bucket_name: NonEmptyString
    oidc_provider_arn: NullableString = None
    cache_bucket_name: NullableString = None
    cache_prefixes: Strings
    break_glass_role_arn: NullableString = None
    break_glass_role_id: NullableString = None
    alarm_email: NullableString = None
    custom_domain: Annotated[CustomDomains | None, Expect("an object or null")] = None
    waf_rate_limit: NullableInt = None
    waf_web_acl_arn: NullableString = None
    #: Buckets (``bucket``) or bucket prefixes (``bucket/prefix/``) imports may read from.
    import_sources: Annotated[
        tuple[Annotated[str, Strict()], ...], Expect("a list of bucket or bucket/prefix/ strings")
    ] = ()

    # --- one key at a time -------------------------------------------------------------------

    @field_validator("default_branch")
    @classmethod
    def _branch_name(cls, branch: str) -> str:
        if branch.startswith("refs/") or "*" in branch:
            raise ValueError(
                f"{key('default_branch')} is {branch!r}: give the branch name alone, such as main"
            )
        return branch

    @field_validator("build_refs")
    @classmethod
    def _no_tags(cls, refs: tuple[str, ...]) -> tuple[str, ...]:
        tags = [r for r in refs if r.startswith(TAG_REFS)]
        if tags:
            raise ValueError(
                f"{key('build_refs')}: {', '.join(tags)} is a tag; tags may release only "
                f"through {key('release_tags')}, after a tag protection rule guards them "
                "(docs/deploy.md)"
            )
        return refs

    @field_validator("release_tags")
    @classmethod
    def _tags_only(cls, refs: tuple[str, ...]) -> tuple[str, ...]:
        not_tags = [r for r in refs if not r.startswith(TAG_REFS)]
        if not_tags:
            raise ValueError(
                f"{key('release_tags')}: {', '.join(not_tags)} is not a tag ref pattern such "
                f"as {TAG_REFS}v*"
            )
        return refs

    @field_validator("release_events")
    @classmethod
    def _release_events(cls, events: tuple[str, ...]) -> tuple[str, ...]:
        bad = [e for e in events if e not in RELEASE_EVENTS]
        if bad:
            raise ValueError(
                f"{key('release_events')}: {', '.join(bad)} may not build or report (manual and "
                "pull request runs must not get the build and reporter roles); use some of "
                f"{', '.join(RELEASE_EVENTS)}"
            )
        return events

    @field_validator("index_dirs")
    @classmethod
    def _index_dirs(cls, indexes: tuple[str, ...]) -> tuple[str, ...]:
        try:
            return check_index_dirs(indexes)
        except LayoutError as exc:
            raise ValueError(f"{key('index_dirs')}: {exc}") from exc

    @field_validator("log_retention_days")
    @classmethod
    def _log_retention(cls, days: int) -> int:
        if days not in LOG_RETENTION_DAYS:
            raise ValueError(
                f"{key('log_retention_days')} is {days}, not a period CloudWatch Logs offers: "
                f"use one of {', '.join(map(str, LOG_RETENTION_DAYS))}"
            )
        return days

    @field_validator("cache_prefixes")
    @classmethod
    def _cache_prefixes(cls, prefixes: tuple[str, ...]) -> tuple[str, ...]:
        bad = [p for p in prefixes if not _CACHE_PREFIX.fullmatch(p)]
        if bad:
            raise ValueError(
                f"{key('cache_prefixes')}: {', '.join(bad)} is not a key prefix such as "
                "third-party/ (segments of letters, digits and ! _ . ' ( ) + = @ , ~ -, each "
                "followed by '/'; no '..')"
            )
        return prefixes

    @field_validator("break_glass_role_id")
    @classmethod
    def _role_id(cls, role_id: str | None) -> str | None:
        if role_id is not None and not _ROLE_ID.fullmatch(role_id):
            raise ValueError(
                f"{key('break_glass_role_id')} is {role_id!r}, not a role's unique id (AROA "
                "followed by at least 16 upper-case letters or digits; aws iam get-role "
                "--role-name <name> --query Role.RoleId)"
            )
        return role_id

    @field_validator("import_sources")
    @classmethod
    def _import_sources(cls, entries: tuple[str, ...]) -> tuple[str, ...]:
        for entry in entries:
            try:
                check_import_source(entry)
            except ValueError as exc:
                raise ValueError(
                    f"{key('import_sources')}: {exc}; give a bucket (old-bucket) or a bucket "
                    "and key prefix (old-bucket/v2/)"
                ) from exc
        return entries

    @field_validator("waf_rate_limit")
    @classmethod
    def _waf_rate_limit(cls, limit: int | None) -> int | None:
        low, high = WAF_RATE_LIMIT_RANGE
        if limit is not None and not low <= limit <= high:
            raise ValueError(
                f"{key('waf_rate_limit')} is {limit}; AWS WAF takes {low:,} to {high:,} "
                "requests per IP in 5 minutes"
            )
        return limit

    # --- rules between keys --------------------------------------------------------------------

    @model_validator(mode="after")
    def _indexes_are_allowed(self) -> WheelGateProps:
        for name, indexes in (
            ("required_tests", set(self.required_tests)),
            ("listing_retention.indexes", set(self.listing_retention.indexes)),
            ("allow_new_local_labels", set(self.allow_new_local_labels.indexes)),
        ):
            unknown = sorted(indexes - set(self.index_dirs))
            if unknown:
                raise ValueError(
                    f"{key(name)} names index directories that are not in "
                    f"{key('index_dirs')}: {', '.join(unknown)}"
                )
        return self

    @model_validator(mode="after")
    def _retention_periods_fit(self) -> WheelGateProps:
        noncurrent_days = self.nightly_noncurrent_version_days
        retention_days = self.nightly_retention.days
        if self.nightly_page_retention_days > min(noncurrent_days, retention_days):
            raise ValueError(
                f"{key('nightly_page_retention_days')} is {self.nightly_page_retention_days}: "
                f"it must be at most {key('nightly_noncurrent_version_days')} "
                f"({noncurrent_days}), so a replaced page version is unlocked by the time the "
                f"lifecycle rule expires it, and at most {key('nightly_retention', 'days')} "
                f"({retention_days}), the files' lock"
            )
        try:
            run_stage_window_days(self.staging_run_expiry_days, self.staging_run_page_expiry_days)
        except SettingsError as exc:
            raise ValueError(
                f"{key('staging_run_page_expiry_days')} and {key('staging_run_expiry_days')}: {exc}"
            ) from exc
        return self

    @model_validator(mode="after")
    def _trust_is_narrow(self) -> WheelGateProps:
        shared = sorted({self.reporter_workflow} & {*self.release_workflows, *self.deps_workflows})
        if shared:
            raise ValueError(
                f"{key('reporter_workflow')}: {shared[0]} is also a release or deps workflow, "
                "whose jobs could then act as the reporter; give the reporter its own reusable "
                "workflow file"
            )
        for keys, subs in (
            ("build_refs, release_tags x release_workflows x release_events", self.build_subs),
            ("build_refs, release_tags x release_events (reporter_workflow)", self.reporter_subs),
            ("deps_workflows", self.deps_subs),
        ):
            if sum(len(s) + 3 for s in subs) > MAX_TRUST_PATTERN_CHARS:
                raise ValueError(
                    f"{CONTEXT_KEY} keys {keys} make {len(subs)} trust patterns, too long for "
                    "an IAM trust policy (2,048 characters); list fewer refs, workflows or "
                    "events"
                )
        old_format = [p for p in self.dev_sub_patterns if not customized_subject(p)]
        if old_format:
            raise ValueError(
                f"{key('dev_sub_patterns')}: {', '.join(old_format)} cannot match the "
                "customized OIDC subject (repo:<owner>/<name>:<context>:job_workflow_ref:...:"
                "event_name:...); end the pattern with '*' (e.g. "
                f"repo:{self.github_repo}:pull_request:*) or spell out every claim "
                "(docs/deploy.md)"
            )
        return self

    @model_validator(mode="after")
    def _pairs_are_whole(self) -> WheelGateProps:
        if self.break_glass_role_arn and not self.break_glass_role_id:
            raise ValueError(
                f"{key('break_glass_role_id')} is missing: with {key('break_glass_role_arn')} "
                "set, the promoter needs the role's unique id (aws iam get-role --role-name "
                "<name> --query Role.RoleId)"
            )
        if self.break_glass_role_id and not self.break_glass_role_arn:
            raise ValueError(
                f"{key('break_glass_role_id')} is set without {key('break_glass_role_arn')}; "
                "set both or neither"
            )
        if self.import_sources and not self.break_glass_role_arn:
            raise ValueError(
                f"{key('import_sources')} is set without {key('break_glass_role_arn')}: only "
                "the break-glass role may ask for an import, so none could be asked for"
            )
        if self.waf_rate_limit is not None and self.waf_web_acl_arn:
            raise ValueError(
                f"{key('waf_rate_limit')} and {key('waf_web_acl_arn')} are both set; the stack "
                "creates a web ACL or uses an existing one, not both"
            )
        return self

    # Defined last, so it wraps the rules above too.
    @model_validator(mode="wrap")
    @classmethod
    def _as_config_error(cls, values: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(values)
        except ValidationError as exc:
            raise ConfigError([problem(error, cls) for error in exc.errors()]) from None

    # --- derived values --------------------------------------------------------------------------

    @property
    def nightly_retention_mode(self) -> str:
        return self.nightly_retention.mode

    @property
    def nightly_retention_days(self) -> int:
        return self.nightly_retention.days

    @property
    def fanout_min_files(self) -> int:
        return self.fanout.min_files

    @property
    def fanout_min_bytes(self) -> int:
        return self.fanout.min_bytes

    @property
    def nightly_domain(self) -> CustomDomain | None:
        return self.custom_domain.nightly if self.custom_domain else None

    @property
    def staging_domain(self) -> CustomDomain | None:
        return self.custom_domain.staging if self.custom_domain else None

    @property
    def run_stage_window_days(self) -> int:
        """Days after a run's first staged object that ``wheelgate stage`` still writes its
        pages (:func:`wheelgate.core.settings.run_stage_window_days`)."""
        return run_stage_window_days(
            self.staging_run_expiry_days, self.staging_run_page_expiry_days
        )

    @property
    def release_refs(self) -> tuple[str, ...]:
        """The refs whose release runs may build and report: ``build_refs``, then the opt-in
        ``release_tags``."""
        return self.build_refs + self.release_tags

    @property
    def build_subs(self) -> tuple[str, ...]:
        """GitHub OIDC ``sub`` patterns of the jobs allowed to build.

        One pattern per release ref x release workflow x release event, in the customized
        subject format (:data:`OIDC_SUBJECT_CLAIM_KEYS`), e.g. ``repo:o/r:ref:refs/heads/main:``
        ``job_workflow_ref:o/r/.github/workflows/release.yml@refs/heads/main:event_name:schedule``.
        """
        return build_subject_patterns(
            self.github_repo, self.release_refs, self.release_workflows, self.release_events
        )

    @property
    def reporter_subs(self) -> tuple[str, ...]:
        """GitHub OIDC ``sub`` patterns of the jobs allowed to report: jobs of the reusable
        ``reporter_workflow`` (its own ``job_workflow_ref``, never a build job's) called by a
        release run, same refs and events as :attr:`build_subs`."""
        return build_subject_patterns(
            self.github_repo, self.release_refs, (self.reporter_workflow,), self.release_events
        )

    @property
    def deps_subs(self) -> tuple[str, ...]:
        """GitHub OIDC ``sub`` patterns of the runs allowed to assume the deps role: pushes of a
        ``deps_workflows`` file to the default branch, in the same format as :attr:`build_subs`.
        """
        return build_subject_patterns(
            self.github_repo, (self.default_ref,), self.deps_workflows, DEPS_EVENTS
        )

    @property
    def import_locations(self) -> tuple[ImportSource, ...]:
        """``import_sources`` as buckets and prefixes."""
        return tuple(check_import_source(entry) for entry in self.import_sources)

    @property
    def default_ref(self) -> str:
        """The default branch as a ref (``refs/heads/<default_branch>``)."""
        return branch_ref(self.default_branch)
