"""WheelGate deployment settings: the ``wheelgate`` object of the ``cdk.json`` context.

Every key is required, so a deployment states all of its choices in one place; only the
nullable keys (``oidc_provider_arn``, ``break_glass_role_arn``, ``break_glass_role_id``,
``cache_bucket_name``, ``alarm_email``, ``custom_domain``, ``waf_rate_limit``,
``waf_web_acl_arn``) may be ``null`` or left out (CDK drops
``null`` context values anyway), ``release_tags`` defaults to none (tags release only when
listed), ``block_all_on_failure`` defaults to ``true``,
``staging_versioned`` and ``allow_new_local_labels`` to ``false``, ``fanout`` (``min_files``,
``min_bytes``) to
:data:`~wheelgate.core.settings.DEFAULT_FANOUT_MIN_FILES` and ``DEFAULT_FANOUT_MIN_BYTES``,
and ``listing_retention`` to keeping every version listed.

Any key can be overridden on the command line with
``-c wheelgate.<key>=<value>`` (the value is parsed as JSON when it is valid JSON).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from wheelgate.core.layout import LayoutError, check_index_dirs
from wheelgate.core.settings import (
    DEFAULT_FANOUT_MIN_BYTES,
    DEFAULT_FANOUT_MIN_FILES,
    DEFAULT_TEST_URL_HOSTS,
    RETENTION_MODES,
    ListingRetention,
    NewLocalLabels,
    SettingsError,
    run_stage_window_days,
)

CONTEXT_KEY = "wheelgate"
_S = TypeVar("_S")

#: The repository's OIDC subject template (``include_claim_keys``, set through GitHub's REST API
#: ``PUT /repos/{owner}/{repo}/actions/oidc/customization/sub``; see docs/deploy.md). GitHub
#: joins the claims in this order as ``key:value`` (``repo`` and ``context`` as in the default
#: subject) and writes any ``:`` inside a value as ``%3A``.
OIDC_SUBJECT_CLAIM_KEYS = ("repo", "context", "job_workflow_ref", "event_name")
#: Events whose runs may build and report. Never ``workflow_dispatch`` (anyone with write access
#: can start it on main), ``repository_dispatch``, ``workflow_call`` or pull request events.
RELEASE_EVENTS = ("push", "release", "schedule")
#: A workflow file directly under .github/workflows (GitHub reads no subdirectories).
_WORKFLOW_FILE = re.compile(r"\.github/workflows/[A-Za-z0-9._-]+\.ya?ml")
#: Events whose runs of a deps workflow may assume the deps role: pushes to the default branch.
DEPS_EVENTS = ("push",)
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


class ConfigError(ValueError):
    """The ``cdk.json`` context does not describe a deployable WheelGate."""


@dataclass(frozen=True)
class CustomDomain:
    """A domain name served by a distribution and its ACM certificate (in us-east-1)."""

    domain_name: str
    certificate_arn: str


@dataclass(frozen=True)
class WheelGateConfig:
    """Typed view of the ``wheelgate`` context object; see ``docs/deploy.md`` for each key."""

    github_repo: str
    default_branch: str
    build_refs: tuple[str, ...]
    release_tags: tuple[str, ...]
    release_workflows: tuple[str, ...]
    reporter_workflow: str
    release_events: tuple[str, ...]
    dev_sub_patterns: tuple[str, ...]
    staging_run_expiry_days: int
    #: Days a run's index pages live (they are tagged; a shorter rule than the run's files).
    staging_run_page_expiry_days: int
    #: Days after a run's first staged object that ``wheelgate stage`` still writes its pages
    #: (derived: :func:`wheelgate.core.settings.run_stage_window_days`).
    run_stage_window_days: int
    staging_versioned: bool
    nightly_retention_mode: str
    nightly_retention_days: int
    nightly_noncurrent_version_days: int
    #: Days each nightly index page version is locked (the files keep ``nightly_retention``).
    nightly_page_retention_days: int
    access_log_expiry_days: int
    log_retention_days: int
    index_dirs: tuple[str, ...]
    required_tests: Mapping[str, tuple[str, ...]]
    oidc_provider_arn: str | None
    dev_bucket_name: str
    break_glass_role_arn: str | None
    break_glass_role_id: str | None
    block_all_on_failure: bool
    allow_build_tag_rereleases: bool
    #: Where a labelled version may gain a new local label (WHEELGATE_ALLOW_NEW_LOCAL_LABELS).
    allow_new_local_labels: NewLocalLabels
    #: Hosts test URLs may point to (``WHEELGATE_TEST_URL_HOSTS``); default ``github.com``.
    test_url_hosts: tuple[str, ...]
    cache_bucket_name: str | None
    cache_prefixes: tuple[str, ...]
    deps_workflows: tuple[str, ...]
    alarm_email: str | None
    waf_rate_limit: int | None
    waf_web_acl_arn: str | None
    nightly_domain: CustomDomain | None
    staging_domain: CustomDomain | None
    #: A promotion copying at least this many files, or this many bytes, goes through the
    #: fan-out state machine (``WHEELGATE_FANOUT_MIN_FILES`` / ``_MIN_BYTES``).
    fanout_min_files: int
    fanout_min_bytes: int
    #: Which versions index pages list, per index directory (``WHEELGATE_LISTING_RETENTION``).
    listing_retention: ListingRetention

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
    def default_ref(self) -> str:
        """The default branch as a ref (``refs/heads/<default_branch>``)."""
        return branch_ref(self.default_branch)

    @classmethod
    def from_context(cls, get: Callable[[str], Any]) -> WheelGateConfig:
        """Read the settings through ``get`` (``app.node.try_get_context``).

        Raises :class:`ConfigError` naming the first missing or malformed key.
        """
        raw = get(CONTEXT_KEY)
        if raw is not None and not isinstance(raw, Mapping):
            raise ConfigError(f"cdk.json context {CONTEXT_KEY!r} must be an object")
        values: Mapping[str, Any] = raw or {}
        reader = _Reader(values, get)
        mode = reader.string("nightly_retention", "mode")
        if mode not in RETENTION_MODES:
            raise ConfigError(
                f"context key {CONTEXT_KEY}.nightly_retention.mode is {mode!r}; "
                f"use one of {', '.join(RETENTION_MODES)}"
            )
        try:
            index_dirs = check_index_dirs(reader.strings("index_dirs"))
        except LayoutError as exc:
            raise ConfigError(f"context key {CONTEXT_KEY}.index_dirs: {exc}") from exc
        required_tests = reader.tests("required_tests")
        unknown = sorted(set(required_tests) - set(index_dirs))
        if unknown:
            raise ConfigError(
                f"context key {CONTEXT_KEY}.required_tests names index directories that are "
                f"not in {CONTEXT_KEY}.index_dirs: {', '.join(unknown)}"
            )
        retention_days = reader.positive_int("nightly_retention", "days")
        noncurrent_days = reader.positive_int("nightly_noncurrent_version_days")
        page_retention_days = reader.positive_int("nightly_page_retention_days")
        if page_retention_days > min(noncurrent_days, retention_days):
            raise ConfigError(
                f"context key {CONTEXT_KEY}.nightly_page_retention_days is "
                f"{page_retention_days}: it must be at most "
                f"{CONTEXT_KEY}.nightly_noncurrent_version_days ({noncurrent_days}), so a "
                "replaced page version is unlocked by the time the lifecycle rule expires it, "
                f"and at most {CONTEXT_KEY}.nightly_retention.days ({retention_days}), the "
                "files' lock"
            )
        run_expiry_days = reader.positive_int("staging_run_expiry_days")
        page_expiry_days = reader.positive_int("staging_run_page_expiry_days")
        try:
            window_days = run_stage_window_days(run_expiry_days, page_expiry_days)
        except SettingsError as exc:
            raise ConfigError(
                f"context keys {CONTEXT_KEY}.staging_run_page_expiry_days and "
                f"{CONTEXT_KEY}.staging_run_expiry_days: {exc}"
            ) from exc
        listing_retention = reader.setting(ListingRetention.from_value, "listing_retention")
        unknown = sorted(set(listing_retention.indexes) - set(index_dirs))
        if unknown:
            raise ConfigError(
                f"context key {CONTEXT_KEY}.listing_retention.indexes names index directories "
                f"that are not in {CONTEXT_KEY}.index_dirs: {', '.join(unknown)}"
            )
        domains = reader.optional_mapping("custom_domain") or {}
        github_repo = reader.string("github_repo")
        default_branch = reader.string("default_branch")
        if default_branch.startswith("refs/") or "*" in default_branch:
            raise ConfigError(
                f"context key {CONTEXT_KEY}.default_branch is {default_branch!r}: give the "
                "branch name alone, such as main"
            )
        build_refs = reader.strings("build_refs")
        tags = [r for r in build_refs if r.startswith(TAG_REFS)]
        if tags:
            raise ConfigError(
                f"context key {CONTEXT_KEY}.build_refs: {', '.join(tags)} is a tag; tags may "
                f"release only through {CONTEXT_KEY}.release_tags, after a tag protection rule "
                "guards them (docs/deploy.md)"
            )
        release_tags = reader.optional_strings("release_tags")
        not_tags = [r for r in release_tags if not r.startswith(TAG_REFS)]
        if not_tags:
            raise ConfigError(
                f"context key {CONTEXT_KEY}.release_tags: {', '.join(not_tags)} is not a tag "
                f"ref pattern such as {TAG_REFS}v*"
            )
        release_workflows = reader.workflow_files("release_workflows")
        (reporter_workflow,) = reader.workflow_files("reporter_workflow")
        deps_workflows = reader.workflow_files("deps_workflows")
        shared = sorted({reporter_workflow} & (set(release_workflows) | set(deps_workflows)))
        if shared:
            raise ConfigError(
                f"context key {CONTEXT_KEY}.reporter_workflow: {shared[0]} is also a release "
                "or deps workflow, whose jobs could then act as the reporter; give the reporter "
                "its own reusable workflow file"
            )
        release_events = reader.strings("release_events")
        bad_events = [e for e in release_events if e not in RELEASE_EVENTS]
        if bad_events:
            raise ConfigError(
                f"context key {CONTEXT_KEY}.release_events: {', '.join(bad_events)} may not "
                f"build or report (manual and pull request runs must not get the build and "
                f"reporter roles); use some of {', '.join(RELEASE_EVENTS)}"
            )
        release_refs = build_refs + release_tags
        for keys, refs, workflows, events in (
            (
                "build_refs, release_tags x release_workflows x release_events",
                release_refs,
                release_workflows,
                release_events,
            ),
            (
                "build_refs, release_tags x release_events (reporter_workflow)",
                release_refs,
                (reporter_workflow,),
                release_events,
            ),
            ("deps_workflows", (branch_ref(default_branch),), deps_workflows, DEPS_EVENTS),
        ):
            subs = build_subject_patterns(github_repo, refs, workflows, events)
            if sum(len(s) + 3 for s in subs) > MAX_TRUST_PATTERN_CHARS:
                raise ConfigError(
                    f"context keys {CONTEXT_KEY}.{keys} make {len(subs)} trust patterns, too "
                    "long for an IAM trust policy (2,048 characters); list fewer refs, "
                    "workflows or events"
                )
        break_glass_role_arn = reader.optional_string("break_glass_role_arn")
        break_glass_role_id = reader.optional_string("break_glass_role_id")
        if break_glass_role_arn and not break_glass_role_id:
            raise ConfigError(
                f"context key {CONTEXT_KEY}.break_glass_role_id is missing: with "
                f"{CONTEXT_KEY}.break_glass_role_arn set, the promoter needs the role's unique id "
                "(aws iam get-role --role-name <name> --query Role.RoleId)"
            )
        if break_glass_role_id and not break_glass_role_arn:
            raise ConfigError(
                f"context key {CONTEXT_KEY}.break_glass_role_id is set without "
                f"{CONTEXT_KEY}.break_glass_role_arn; set both or neither"
            )
        if break_glass_role_id and not _ROLE_ID.fullmatch(break_glass_role_id):
            raise ConfigError(
                f"context key {CONTEXT_KEY}.break_glass_role_id is {break_glass_role_id!r}, not "
                "a role's unique id (AROA followed by at least 16 upper-case letters or digits; "
                "aws iam get-role --role-name <name> --query Role.RoleId)"
            )
        cache_prefixes = reader.strings("cache_prefixes")
        bad_prefixes = [p for p in cache_prefixes if not _CACHE_PREFIX.fullmatch(p)]
        if bad_prefixes:
            raise ConfigError(
                f"context key {CONTEXT_KEY}.cache_prefixes: {', '.join(bad_prefixes)} is not a "
                "key prefix such as third-party/ (segments of letters, digits and "
                "! _ . ' ( ) + = @ , ~ -, each followed by '/'; no '..')"
            )
        waf_rate_limit = reader.optional_int("waf_rate_limit")
        waf_web_acl_arn = reader.optional_string("waf_web_acl_arn")
        low, high = WAF_RATE_LIMIT_RANGE
        if waf_rate_limit is not None and not low <= waf_rate_limit <= high:
            raise ConfigError(
                f"context key {CONTEXT_KEY}.waf_rate_limit is {waf_rate_limit}; AWS WAF takes "
                f"{low:,} to {high:,} requests per IP in 5 minutes"
            )
        if waf_rate_limit is not None and waf_web_acl_arn:
            raise ConfigError(
                f"context keys {CONTEXT_KEY}.waf_rate_limit and waf_web_acl_arn are both set; "
                "the stack creates a web ACL or uses an existing one, not both"
            )
        dev_sub_patterns = reader.strings("dev_sub_patterns")
        old_format = [p for p in dev_sub_patterns if not _customized_subject(p)]
        if old_format:
            raise ConfigError(
                f"context key {CONTEXT_KEY}.dev_sub_patterns: {', '.join(old_format)} cannot "
                "match the customized OIDC subject (repo:<owner>/<name>:<context>:"
                "job_workflow_ref:...:event_name:...); end the pattern with '*' (e.g. "
                f"repo:{github_repo}:pull_request:*) or spell out every claim (docs/deploy.md)"
            )
        return cls(
            github_repo=github_repo,
            default_branch=default_branch,
            build_refs=build_refs,
            release_tags=release_tags,
            release_workflows=release_workflows,
            reporter_workflow=reporter_workflow,
            release_events=release_events,
            dev_sub_patterns=dev_sub_patterns,
            staging_run_expiry_days=run_expiry_days,
            staging_run_page_expiry_days=page_expiry_days,
            run_stage_window_days=window_days,
            staging_versioned=reader.boolean("staging_versioned", default=False),
            nightly_retention_mode=mode,
            nightly_retention_days=retention_days,
            nightly_noncurrent_version_days=noncurrent_days,
            nightly_page_retention_days=page_retention_days,
            access_log_expiry_days=reader.positive_int("access_log_expiry_days"),
            log_retention_days=reader.positive_int("log_retention_days"),
            index_dirs=index_dirs,
            required_tests=required_tests,
            oidc_provider_arn=reader.optional_string("oidc_provider_arn"),
            dev_bucket_name=reader.string("dev_bucket_name"),
            break_glass_role_arn=break_glass_role_arn,
            break_glass_role_id=break_glass_role_id,
            block_all_on_failure=reader.boolean("block_all_on_failure", default=True),
            allow_build_tag_rereleases=reader.boolean("allow_build_tag_rereleases", default=False),
            allow_new_local_labels=reader.setting(
                NewLocalLabels.from_value, "allow_new_local_labels"
            ),
            test_url_hosts=reader.strings_or("test_url_hosts", default=DEFAULT_TEST_URL_HOSTS),
            cache_bucket_name=reader.optional_string("cache_bucket_name"),
            cache_prefixes=cache_prefixes,
            deps_workflows=deps_workflows,
            alarm_email=reader.optional_string("alarm_email"),
            waf_rate_limit=waf_rate_limit,
            waf_web_acl_arn=waf_web_acl_arn,
            nightly_domain=_domain(domains, "nightly"),
            staging_domain=_domain(domains, "staging"),
            fanout_min_files=reader.positive_int_or(
                "fanout", "min_files", default=DEFAULT_FANOUT_MIN_FILES
            ),
            fanout_min_bytes=reader.positive_int_or(
                "fanout", "min_bytes", default=DEFAULT_FANOUT_MIN_BYTES
            ),
            listing_retention=listing_retention,
        )


def branch_ref(branch: str) -> str:
    """The ref of a branch name."""
    return f"refs/heads/{branch}"


def build_subject_patterns(
    repo: str, refs: tuple[str, ...], workflows: tuple[str, ...], events: tuple[str, ...]
) -> tuple[str, ...]:
    """``sub`` patterns (IAM ``StringLike``) for each ref x workflow x event of ``repo``.

    A workflow that is not reusable has ``job_workflow_ref`` = ``<repo>/<file>@<ref>``. Git refs,
    file names under .github/workflows and event names cannot contain ``:`` (GitHub would write
    it as ``%3A``), so a ``*`` in a ref cannot reach into the next claim's ``key:``.
    """
    return tuple(
        f"repo:{repo}:ref:{ref}:job_workflow_ref:{repo}/{workflow}@{ref}:event_name:{event}"
        for ref in refs
        for workflow in workflows
        for event in events
    )


def _customized_subject(pattern: str) -> bool:
    """Whether ``pattern`` can match a subject built from :data:`OIDC_SUBJECT_CLAIM_KEYS`."""
    if not pattern.startswith("repo:"):
        return False
    return pattern.endswith("*") or (":job_workflow_ref:" in pattern and ":event_name:" in pattern)


def _domain(domains: Mapping[str, Any], name: str) -> CustomDomain | None:
    entry = domains.get(name)
    if entry is None:
        return None
    where = f"{CONTEXT_KEY}.custom_domain.{name}"
    if not isinstance(entry, Mapping):
        raise ConfigError(f"context key {where} must be an object or null")
    for key in ("domain_name", "certificate_arn"):
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise ConfigError(f"context key {where}.{key} is missing; set it in cdk.json")
    return CustomDomain(domain_name=entry["domain_name"], certificate_arn=entry["certificate_arn"])


class _Reader:
    """Looks keys up with ``-c wheelgate.<key>=...`` overrides first, then ``cdk.json``."""

    def __init__(self, values: Mapping[str, Any], get: Callable[[str], Any]) -> None:
        self._values = values
        self._get = get

    def _lookup(self, *path: str, nullable: bool = False) -> Any:
        name = ".".join(path)
        override = self._get(f"{CONTEXT_KEY}.{name}")
        if override is not None:
            return _parse_override(override)
        node: Any = self._values
        for part in path:
            if not isinstance(node, Mapping) or part not in node:
                if nullable:
                    return None
                raise ConfigError(
                    f"cdk.json context key {CONTEXT_KEY}.{name} is missing: add it under "
                    f'"context" -> "{CONTEXT_KEY}" in cdk.json or pass '
                    f"-c {CONTEXT_KEY}.{name}=<value> (see docs/deploy.md)"
                )
            node = node[part]
        return node

    def _fail(self, path: tuple[str, ...], expected: str) -> ConfigError:
        return ConfigError(f"context key {CONTEXT_KEY}.{'.'.join(path)} must be {expected}")

    def string(self, *path: str) -> str:
        value = self._lookup(*path)
        if not isinstance(value, str) or not value:
            raise self._fail(path, "a non-empty string")
        return value

    def optional_string(self, *path: str) -> str | None:
        value = self._lookup(*path, nullable=True)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise self._fail(path, "a string or null")
        return value

    def positive_int(self, *path: str) -> int:
        value = self._lookup(*path)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self._fail(path, "a positive integer")
        return value

    def positive_int_or(self, *path: str, default: int) -> int:
        """A positive integer, or ``default`` when the key (or the object holding it) is null
        or left out."""
        parent = self._lookup(*path[:-1], nullable=True) if len(path) > 1 else None
        if parent is not None and not isinstance(parent, Mapping):
            raise self._fail(path[:-1], "an object or null")
        if self._lookup(*path, nullable=True) is None:
            return default
        return self.positive_int(*path)

    def optional_int(self, *path: str) -> int | None:
        value = self._lookup(*path, nullable=True)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._fail(path, "an integer or null")
        return value

    def strings(self, *path: str) -> tuple[str, ...]:
        value = self._lookup(*path)
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(v, str) and v for v in value)
        ):
            raise self._fail(path, "a non-empty list of strings")
        return tuple(value)

    def strings_or(self, *path: str, default: tuple[str, ...]) -> tuple[str, ...]:
        """A non-empty list of strings, or ``default`` when the key is null or left out."""
        if self._lookup(*path, nullable=True) is None:
            return default
        return self.strings(*path)

    def optional_strings(self, *path: str) -> tuple[str, ...]:
        """A list of strings, ``()`` when the key is null, left out or an empty list."""
        value = self._lookup(*path, nullable=True)
        if value is None or value == []:
            return ()
        if not isinstance(value, list):
            raise self._fail(path, "a list of strings")
        return self.strings(*path)

    def boolean(self, *path: str, default: bool) -> bool:
        value = self._lookup(*path, nullable=True)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self._fail(path, "true or false")
        return value

    def workflow_files(self, *path: str) -> tuple[str, ...]:
        value = self._lookup(*path)
        # One file (reporter_workflow) or a list of them.
        files = (value,) if isinstance(value, str) and value else self.strings(*path)
        bad = [w for w in files if not _WORKFLOW_FILE.fullmatch(w)]
        if bad:
            raise ConfigError(
                f"context key {CONTEXT_KEY}.{'.'.join(path)}: {', '.join(bad)} is not a "
                "workflow file path such as .github/workflows/release-nightly.yml"
            )
        return files

    def optional_mapping(self, *path: str) -> Mapping[str, Any] | None:
        value = self._lookup(*path, nullable=True)
        if value is not None and not isinstance(value, Mapping):
            raise self._fail(path, "an object or null")
        return value

    def setting(self, parse: Callable[..., _S], *path: str) -> _S:
        """A promoter setting read by its own ``from_value`` (``parse``), which takes ``None``
        for a key left out: :class:`ListingRetention`, :class:`NewLocalLabels`."""
        value = self._lookup(*path, nullable=True)
        try:
            return parse(value, name=f"context key {CONTEXT_KEY}.{'.'.join(path)}")
        except SettingsError as exc:
            raise ConfigError(str(exc)) from exc

    def tests(self, *path: str) -> Mapping[str, tuple[str, ...]]:
        value = self._lookup(*path)
        if not isinstance(value, Mapping) or not all(
            isinstance(v, list) and all(isinstance(t, str) for t in v) for v in value.values()
        ):
            raise self._fail(path, "an object mapping index directories to lists of test names")
        return {str(k): tuple(v) for k, v in value.items()}


def _parse_override(value: Any) -> Any:
    # `-c key=value` always arrives as a string; JSON lets lists, numbers and null through too.
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value
