"""The promoter's configuration: environment variable names and their parsing.

The stack sets these variables on the Lambda (it imports the names from here) and local mode
sets the same ones, so both run the promoter with one contract.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from wheelgate.core.layout import LayoutError, base_url, check_index, check_index_dirs

ENV_STAGING_BUCKET = "WHEELGATE_STAGING_BUCKET"
ENV_NIGHTLY_BUCKET = "WHEELGATE_NIGHTLY_BUCKET"
#: Public base URL of the nightly index (CloudFront), used for absolute links in staging pages.
ENV_NIGHTLY_BASE_URL = "WHEELGATE_NIGHTLY_BASE_URL"
#: Public URL of the staging distribution, for the run index URL ``wheelgate stage`` prints
#: (the CLI's only; the promoter never needs it, so it is not in ``ALL_ENV_NAMES``).
ENV_STAGING_BASE_URL = "WHEELGATE_STAGING_BASE_URL"
ENV_NIGHTLY_DISTRIBUTION_ID = "WHEELGATE_NIGHTLY_DISTRIBUTION_ID"
#: Unique id (``AROA...``) of the reporter role; manifests written by anyone else are rejected.
ENV_TRUSTED_REPORTER_ID = "WHEELGATE_TRUSTED_REPORTER_ID"
#: Unique id (``AROA...``) of the dependency-mirror role: the only writer of ``deps-*`` runs'
#: manifests (the reporter is not).
ENV_TRUSTED_DEPS_ID = "WHEELGATE_TRUSTED_DEPS_ID"
#: JSON object: index directory -> list of test names that must have passed.
ENV_REQUIRED_TESTS = "WHEELGATE_REQUIRED_TESTS"
#: JSON list of index directories that may be staged and promoted to (``index_dirs`` in
#: cdk.json); empty or unset means any (local mode only: the stack always sets it).
ENV_ALLOWED_INDEXES = "WHEELGATE_ALLOWED_INDEXES"
#: Unique id (``AROA...``) of the break-glass role, the only writer whose override requests
#: (``manifests/override-<run>-<stamp>.json``) are honoured; unset: overrides are refused.
ENV_BREAK_GLASS_ID = "WHEELGATE_BREAK_GLASS_ID"
#: ``true`` (default): one rejected set rejects the whole manifest; ``false``: passing sets of a
#: manifest are promoted even when another set of it fails.
ENV_BLOCK_ALL_ON_FAILURE = "WHEELGATE_BLOCK_ALL_ON_FAILURE"
#: ``false`` (default): a wheel that differs from a released one only by its build tag is a
#: re-release of that release with other bytes, and is refused; ``true``: it is allowed.
ENV_ALLOW_BUILD_TAG_RERELEASES = "WHEELGATE_ALLOW_BUILD_TAG_RERELEASES"
#: JSON ``false`` (default), ``true``, or a list of index directories: where a public version
#: released with local version labels (``2.7.0+rocm6.3``) may gain a new one (``+rocm6.4``),
#: which then becomes what ``==2.7.0`` installs (see :class:`NewLocalLabels`).
ENV_ALLOW_NEW_LOCAL_LABELS = "WHEELGATE_ALLOW_NEW_LOCAL_LABELS"

#: JSON list of the host names test URLs may point to (``test_url_hosts`` in cdk.json); unset:
#: :data:`DEFAULT_TEST_URL_HOSTS`. The promoter and ``wheelgate report`` read the same list.
ENV_TEST_URL_HOSTS = "WHEELGATE_TEST_URL_HOSTS"
DEFAULT_TEST_URL_HOSTS = ("github.com",)
#: Console URL of the stack's CloudWatch dashboard, linked from the status page.
ENV_DASHBOARD_URL = "WHEELGATE_DASHBOARD_URL"
#: JSON list of the buckets (``bucket``) or bucket prefixes (``bucket/prefix/``) that import
#: requests may name as their source (``import_sources`` in cdk.json); unset: none.
ENV_IMPORT_SOURCES = "WHEELGATE_IMPORT_SOURCES"

#: JSON object: which versions index pages list (``listing_retention`` in cdk.json, same shape:
#: ``{"default": RULE, "indexes": {DIR: RULE}}``, a RULE being ``{"keep_versions": K or null,
#: "keep_days": D or null}``); unset: every page lists every file (see
#: :class:`ListingRetention`).
ENV_LISTING_RETENTION = "WHEELGATE_LISTING_RETENTION"

#: The promoter function's timeout (the Lambda maximum), which the stack sets and the
#: promoter's index-directory lease outlives.
PROMOTER_TIMEOUT_SECONDS = 15 * 60
#: How long an index directory's lease lasts: it outlives any invocation that could hold it
#: (the function's timeout), plus a minute for clock skew.
LEASE_SECONDS = PROMOTER_TIMEOUT_SECONDS + 60
#: A message whose index directory is leased by another promotion is made visible again after
#: this long (SQS ChangeMessageVisibility), instead of the queue's whole visibility timeout.
LEASE_BUSY_RETRY_SECONDS = 60
#: How long one invocation starts copies of an import's files into staging: the function's
#: timeout less 5 minutes for the copies still running (a 5 GiB server-side copy takes about
#: a minute) and the record. The rest is gathered by the next invocation, which the request's
#: event, sent back to the queue, starts.
IMPORT_GATHER_SECONDS = PROMOTER_TIMEOUT_SECONDS - 5 * 60
#: How often a gathering import writes its progress to its record (``wheelgate import`` shows
#: it as a progress bar).
IMPORT_PROGRESS_SECONDS = 10

#: Object Lock of the nightly index pages the promoter writes: the bucket's retention mode
#: (``GOVERNANCE`` or ``COMPLIANCE``, ``nightly_retention.mode``) and the days each page version
#: is held (``nightly_page_retention_days``). A page is rewritten by every promotion, so its
#: replaced versions are held only this long, then the noncurrent-version rule removes them;
#: released files keep the bucket's default retention. Unset (local mode without a lock):
#: pages carry no lock headers and take the bucket's default, if any.
ENV_NIGHTLY_RETENTION_MODE = "WHEELGATE_NIGHTLY_RETENTION_MODE"
ENV_NIGHTLY_PAGE_RETENTION_DAYS = "WHEELGATE_NIGHTLY_PAGE_RETENTION_DAYS"
#: Object Lock retention modes, as S3 spells them.
RETENTION_MODES = ("GOVERNANCE", "COMPLIANCE")

#: Days after the first object of a run was staged during which ``wheelgate stage`` still adds
#: to the run (the CLI's only, like ``WHEELGATE_STAGING_BASE_URL``; the stack outputs the value
#: it derives, ``RunStageWindowDays``). Unset: :data:`DEFAULT_RUN_STAGE_WINDOW_DAYS`, the
#: smallest window any valid configuration allows, so the default never lets a page outlive a
#: file (:func:`run_stage_window_days`).
ENV_RUN_STAGE_WINDOW_DAYS = "WHEELGATE_RUN_STAGE_WINDOW_DAYS"
DEFAULT_RUN_STAGE_WINDOW_DAYS = 1
#: S3 removes expired objects asynchronously, some time after they become eligible; a run's
#: pages become eligible this many days before the earliest file they can list, so that they
#: are gone first.
RUN_PAGE_EXPIRY_MARGIN_DAYS = 1

#: Powertools service name of the promoter; Powertools adds it as the ``service`` metric
#: dimension, so the stack's alarms must use the same value.
SERVICE_NAME = "wheelgate-promoter"
#: The name of that dimension (Powertools' own; the alarms and the dashboard select on it).
METRIC_SERVICE_DIMENSION = "service"
#: CloudWatch namespace and metric names the promoter emits and the stack alarms on.
METRICS_NAMESPACE = "WheelGate"
METRIC_PROMOTIONS_REJECTED = "PromotionsRejected"
METRIC_PROMOTIONS_SUCCEEDED = "PromotionsSucceeded"
#: A promotion attempt that raised; the message is retried (partial batch response), so the
#: Lambda ``Errors`` metric does not see it.
METRIC_PROMOTION_ERRORS = "PromotionErrors"
#: Seconds from the manifest's write (its S3 event time) to the run's pages being published.
METRIC_PROMOTION_LATENCY = "PromotionLatency"
#: Files and bytes a promotion copied into nightly (files nightly already held not counted).
METRIC_FILES_COPIED = "FilesCopied"
METRIC_BYTES_COPIED = "BytesCopied"
#: One count per rejected run, with the reason code as a dimension of its own (the metrics
#: above carry only the service dimension, which the alarms rely on).
METRIC_REJECTIONS_BY_REASON = "RejectionsByReason"
METRIC_REASON_DIMENSION = "reason"
#: A manifest refused for an integrity reason (``wheelgate.core.errors.INTEGRITY_REASONS``): a
#: rejection with one of them, or a write by a writer not trusted for it (noted, not decided).
#: The one rejection metric that pages; ``tests-failed`` and the like are routine.
METRIC_INTEGRITY_REJECTIONS = "IntegrityRejections"
#: A promotion that found its index directory leased (retried soon; no alarm watches it).
METRIC_INDEX_BUSY = "IndexBusy"
#: A message whose body is not an S3 event (retried, then dead-lettered).
METRIC_POISON_MESSAGES = "PoisonMessages"
#: A decision the status page could not be updated with (best effort; never retried).
METRIC_STATUS_PAGE_ERRORS = "StatusPageErrors"
#: Every metric the promoter emits, in the namespace above.
METRIC_NAMES = (
    METRIC_PROMOTIONS_SUCCEEDED,
    METRIC_PROMOTIONS_REJECTED,
    METRIC_REJECTIONS_BY_REASON,
    METRIC_INTEGRITY_REJECTIONS,
    METRIC_FILES_COPIED,
    METRIC_BYTES_COPIED,
    METRIC_PROMOTION_LATENCY,
    METRIC_PROMOTION_ERRORS,
    METRIC_INDEX_BUSY,
    METRIC_POISON_MESSAGES,
    METRIC_STATUS_PAGE_ERRORS,
)

#: ARN of the fan-out promotion state machine (Step Functions); unset: every run is promoted
#: in one invocation.
ENV_FANOUT_STATE_MACHINE_ARN = "WHEELGATE_FANOUT_STATE_MACHINE_ARN"
#: A promotion whose copies reach either threshold (files to copy, or bytes to copy) goes
#: through the state machine; below both, one invocation copies and publishes it.
ENV_FANOUT_MIN_FILES = "WHEELGATE_FANOUT_MIN_FILES"
ENV_FANOUT_MIN_BYTES = "WHEELGATE_FANOUT_MIN_BYTES"
#: Defaults of the fan-out thresholds (``fanout`` in cdk.json overrides them).
DEFAULT_FANOUT_MIN_FILES = 100
DEFAULT_FANOUT_MIN_BYTES = 32 * 1024**3
#: The fan-out state machine's whole-execution timeout. An execution that times out runs no
#: catch step, so the index-directory leases it holds are taken for this long plus a margin.
FANOUT_TIMEOUT_SECONDS = 4 * 60 * 60
FANOUT_LEASE_SECONDS = FANOUT_TIMEOUT_SECONDS + 5 * 60
#: A message whose index directory is leased by a fan-out job is made visible again after this
#: long: the receives the manifest queue allows before its dead-letter queue (21, five of them
#: kept for other failures; ``MAX_RECEIVE_COUNT`` in stacks/promoter_function.py) outlast the
#: longest such lease (16 x 16 min >= ``FANOUT_LEASE_SECONDS``).
FANOUT_LEASE_BUSY_RETRY_SECONDS = 16 * 60
#: Files the state machine hashes, and copies, at once: each Distributed Map's MaxConcurrency
#: (the ``fanout`` setting's ``hash_concurrency`` and ``copy_concurrency``). 200 promotes 2,000
#: files of 2-8 GB in about 10 minutes in bench/fanout_cost.py's model (20 at half its assumed
#: throughputs) with a fifth of Lambda's default account concurrency of 1,000; docs/deploy.md
#: weighs them against the quotas they touch.
DEFAULT_FANOUT_HASH_CONCURRENCY = 200
DEFAULT_FANOUT_COPY_CONCURRENCY = 200
#: The most child executions a Distributed Map runs at once (a hard Step Functions quota).
MAX_MAP_CONCURRENCY = 10_000
#: The copy map's concurrency, as the stack set it (the ``fanout`` setting's
#: ``copy_concurrency``): it divides the fan-out steps' share of the signing budget.
ENV_FANOUT_COPY_CONCURRENCY = "WHEELGATE_FANOUT_COPY_CONCURRENCY"
#: AWS KMS's "Cryptographic operations (ECC) request rate": Sign requests per second with ECC
#: keys, shared by every ECC key of the account and region (adjustable; the default).
KMS_ECC_REQUESTS_PER_SECOND = 300
#: Verdict signatures per second of one promoter invocation (a single invocation's promotion),
#: and of every fan-out copy step that runs at once together. At most 2 invocations (the event
#: source's maximum concurrency) and the copy map's steps run at once: 2 x 45 + 200 = 290,
#: under KMS_ECC_REQUESTS_PER_SECOND whatever the copy concurrency (tests/unit/test_verdicts.py
#: holds the sum to it). A copy step signs once, after copying a file of gigabytes, so its share
#: (:func:`fanout_step_signs_per_second`) only bounds a burst of small files.
VERDICT_SIGNS_PER_SECOND_PROMOTION = 45
VERDICT_SIGNS_PER_SECOND_FANOUT = 200


def fanout_step_signs_per_second(copy_concurrency: int) -> float:
    """One fan-out copy step container's signing rate when ``copy_concurrency`` steps run at
    once: an equal share of ``VERDICT_SIGNS_PER_SECOND_FANOUT``."""
    return VERDICT_SIGNS_PER_SECOND_FANOUT / max(1, copy_concurrency)


#: Retries of one file's copy (Step Functions Retry: attempts after the first, first interval,
#: backoff rate); local mode retries with the same numbers.
FANOUT_ITEM_RETRY_ATTEMPTS = 4
FANOUT_ITEM_RETRY_INTERVAL_SECONDS = 5
FANOUT_ITEM_RETRY_BACKOFF = 2.0
#: Failed executions of one manifest before its message goes to the dead-letter queue.
FANOUT_MAX_EXECUTIONS = 3
#: The promoter function also runs the state machine's steps: an event with this field names
#: the step (``copy``, ``publish`` or ``conclude``) instead of carrying SQS records.
FANOUT_STEP_FIELD = "fanout_step"
#: Error name (the Python exception class) of a permanent refusal in a step: the state machine
#: does not retry it.
FANOUT_REJECTED_ERROR = "PromotionRejected"
#: URLs of the manifest queue and its dead-letter queue: a failed fan-out execution sends its
#: manifest's event back to the first, or, after ``FANOUT_MAX_EXECUTIONS``, to the second.
ENV_MANIFEST_QUEUE_URL = "WHEELGATE_MANIFEST_QUEUE_URL"
ENV_DEAD_LETTER_QUEUE_URL = "WHEELGATE_DEAD_LETTER_QUEUE_URL"
#: The KMS key (ARN) that signs released files' verdicts (docs/verdicts.md); a new ARN is a key
#: rotation. Unset (a deployment outside the stack): no verdicts are written.
ENV_VERDICT_KEY_ARN = "WHEELGATE_VERDICT_KEY_ARN"

#: Every variable the stack sets on the promoter function.
ALL_ENV_NAMES = (
    ENV_ALLOW_BUILD_TAG_RERELEASES,
    ENV_ALLOW_NEW_LOCAL_LABELS,
    ENV_STAGING_BUCKET,
    ENV_NIGHTLY_BUCKET,
    ENV_NIGHTLY_BASE_URL,
    ENV_NIGHTLY_DISTRIBUTION_ID,
    ENV_TRUSTED_REPORTER_ID,
    ENV_TRUSTED_DEPS_ID,
    ENV_REQUIRED_TESTS,
    ENV_ALLOWED_INDEXES,
    ENV_BREAK_GLASS_ID,
    ENV_BLOCK_ALL_ON_FAILURE,
    ENV_TEST_URL_HOSTS,
    ENV_FANOUT_STATE_MACHINE_ARN,
    ENV_FANOUT_MIN_FILES,
    ENV_FANOUT_MIN_BYTES,
    ENV_MANIFEST_QUEUE_URL,
    ENV_DEAD_LETTER_QUEUE_URL,
    ENV_DASHBOARD_URL,
    ENV_NIGHTLY_RETENTION_MODE,
    ENV_NIGHTLY_PAGE_RETENTION_DAYS,
    ENV_LISTING_RETENTION,
    ENV_VERDICT_KEY_ARN,
    ENV_IMPORT_SOURCES,
    ENV_FANOUT_COPY_CONCURRENCY,
)


class SettingsError(ValueError):
    """The environment does not describe a usable promoter configuration."""


#: S3's rule for a bucket name (general purpose buckets): 3-63 lower-case letters, digits, '.'
#: and '-', starting and ending with a letter or digit.
_BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
#: One segment of a key prefix an import may read: printable ASCII without '/', '*', '?' (IAM
#: resource wildcards), a backslash or a space. '.', '..' and empty segments are refused apart.
_SOURCE_SEGMENT = re.compile(r"[!-)+-.0->@-\[\]-~]+")
#: Segments a prefix may not have: S3 takes them literally, but they read as another place
#: (``v2/../v1/`` starts with an entry's ``v2/`` and looks like ``v1/``).
_DOT_SEGMENTS = frozenset({"", ".", ".."})


@dataclass(frozen=True)
class ImportSource:
    """A place imports read from: a bucket and a key prefix (``""``: the whole bucket, else
    ending in ``/``). An allow-list entry (``import_sources``) covers every source under it."""

    bucket: str
    prefix: str = ""

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    def covers(self, other: ImportSource) -> bool:
        """Whether ``other`` (a requested source) lies under this entry."""
        return other.bucket == self.bucket and other.prefix.startswith(self.prefix)


def _import_source(bucket: str, prefix: str, shown: str) -> ImportSource:
    """``bucket`` and ``prefix`` as an :class:`ImportSource`; ``ValueError`` naming the bucket,
    or the prefix and its first bad segment (``shown`` is the entry or URI they came from)."""
    if not _BUCKET_NAME.fullmatch(bucket) or ".." in bucket:
        raise ValueError(f"{shown!r} does not name an S3 bucket ({bucket!r} is not a bucket name)")
    if prefix and not prefix.endswith("/"):
        raise ValueError(
            f"{shown!r}: the key prefix {prefix!r} must be a folder's: segments ending in '/'"
        )
    for segment in prefix.split("/")[:-1]:
        if segment in _DOT_SEGMENTS:
            named = f"the segment {segment!r}" if segment else "an empty segment ('//')"
            raise ValueError(
                f"{shown!r}: the key prefix {prefix!r} has {named}: a prefix names one place, "
                "so no '.', '..' or empty segment"
            )
        if not _SOURCE_SEGMENT.fullmatch(segment):
            raise ValueError(
                f"{shown!r}: the key prefix {prefix!r} has the segment {segment!r}: segments "
                "are printable ASCII without '*', '?', '\\' or spaces, each ending in '/'"
            )
    return ImportSource(bucket, prefix)


def check_import_source(entry: str) -> ImportSource:
    """An ``import_sources`` entry, ``bucket`` or ``bucket/prefix/``; raises ``ValueError``
    naming what is wrong."""
    bucket, _, prefix = entry.partition("/")
    return _import_source(bucket, prefix, entry)


def parse_source_uri(uri: str) -> ImportSource:
    """An import's source, ``s3://bucket/prefix/`` (the prefix of a directory, or none);
    raises ``ValueError`` naming what is wrong."""
    if not uri.startswith("s3://"):
        raise ValueError(f"{uri!r} is not an s3://bucket/prefix/ URI")
    rest = uri[len("s3://") :]
    bucket, _, prefix = rest.partition("/")
    return _import_source(bucket, prefix, uri)


def check_import_sources(entries: Iterable[str]) -> tuple[ImportSource, ...]:
    """Every entry of an allow-list (:func:`check_import_source`); ``ValueError`` for the first
    bad one."""
    return tuple(check_import_source(entry) for entry in entries)


def import_sources_from_env(environ: Mapping[str, str]) -> tuple[ImportSource, ...]:
    """The allow-list of ``WHEELGATE_IMPORT_SOURCES`` (empty when unset: no import source).
    Raises :class:`SettingsError` naming a bad entry."""
    entries = _json_strings(environ, ENV_IMPORT_SOURCES, "buckets or bucket/prefix/ entries")
    try:
        return check_import_sources(entries)
    except ValueError as exc:
        raise SettingsError(f"{ENV_IMPORT_SOURCES}: {exc}") from exc


def run_stage_window_days(run_expiry_days: int, page_expiry_days: int) -> int:
    """Days after a run's first staged object during which ``wheelgate stage`` may still write
    the run's pages, given that staged objects under ``runs/`` expire after ``run_expiry_days``
    and the run's pages after ``page_expiry_days`` (``staging_run_expiry_days`` and
    ``staging_run_page_expiry_days``).

    A page written within the window becomes eligible for expiry at least
    :data:`RUN_PAGE_EXPIRY_MARGIN_DAYS` before any file it lists (each was staged no earlier
    than the run's first object). Raises :class:`SettingsError` when no whole day is left.
    """
    window = run_expiry_days - page_expiry_days - RUN_PAGE_EXPIRY_MARGIN_DAYS
    if page_expiry_days < 1 or window < 1:
        least = RUN_PAGE_EXPIRY_MARGIN_DAYS + 1
        raise SettingsError(
            f"run pages that expire after {page_expiry_days} day(s) and staged files after "
            f"{run_expiry_days} leave no day to stage a run in: pages must expire at least "
            f"{least} days before the files (1 to stage the run in, "
            f"{RUN_PAGE_EXPIRY_MARGIN_DAYS} for S3's asynchronous removal), so the page days "
            f"must be from 1 to the file days minus {least}"
        )
    return window


def run_stage_window_from_env(environ: Mapping[str, str]) -> int:
    """``WHEELGATE_RUN_STAGE_WINDOW_DAYS``, or :data:`DEFAULT_RUN_STAGE_WINDOW_DAYS` when unset.
    Raises :class:`SettingsError` for anything but a positive whole number of days."""
    raw = environ.get(ENV_RUN_STAGE_WINDOW_DAYS, "").strip()
    if not raw:
        return DEFAULT_RUN_STAGE_WINDOW_DAYS
    if not raw.isdigit() or int(raw) < 1:
        raise SettingsError(
            f"{ENV_RUN_STAGE_WINDOW_DAYS} must be a positive number of days, not {raw!r}"
        )
    return int(raw)


@dataclass(frozen=True)
class PageRetention:
    """The Object Lock a nightly index page version is written with: ``mode`` (the bucket's)
    for ``days`` from the write."""

    mode: str
    days: int

    def until(self, now: datetime) -> datetime:
        """The retain-until date of a page version written at ``now``."""
        return now + timedelta(days=self.days)


def page_retention_from_env(environ: Mapping[str, str]) -> PageRetention | None:
    """The nightly pages' lock from ``WHEELGATE_NIGHTLY_RETENTION_MODE`` and
    ``WHEELGATE_NIGHTLY_PAGE_RETENTION_DAYS``; ``None`` when both are unset.

    Raises :class:`SettingsError` when only one is set, the mode is not an Object Lock mode or
    the days are not a positive whole number.
    """
    mode = environ.get(ENV_NIGHTLY_RETENTION_MODE, "").strip()
    days = environ.get(ENV_NIGHTLY_PAGE_RETENTION_DAYS, "").strip()
    if not mode and not days:
        return None
    if not mode or not days:
        missing = ENV_NIGHTLY_RETENTION_MODE if not mode else ENV_NIGHTLY_PAGE_RETENTION_DAYS
        raise SettingsError(
            f"{missing} is not set: set both {ENV_NIGHTLY_RETENTION_MODE} and "
            f"{ENV_NIGHTLY_PAGE_RETENTION_DAYS}, or neither"
        )
    if mode not in RETENTION_MODES:
        raise SettingsError(
            f"{ENV_NIGHTLY_RETENTION_MODE} is {mode!r}; use one of {', '.join(RETENTION_MODES)}"
        )
    if not days.isdigit() or int(days) < 1:
        raise SettingsError(
            f"{ENV_NIGHTLY_PAGE_RETENTION_DAYS} must be a positive number of days, not {days!r}"
        )
    return PageRetention(mode=mode, days=int(days))


def _json_value(environ: Mapping[str, str], name: str, default: object) -> object:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"{name} is not valid JSON: {exc}") from exc


def _json_strings(environ: Mapping[str, str], name: str, what: str) -> tuple[str, ...]:
    value = _json_value(environ, name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SettingsError(f"{name} must be a JSON list of {what}")
    return tuple(value)


def test_url_hosts_from_env(environ: Mapping[str, str]) -> frozenset[str]:
    """The hosts of ``WHEELGATE_TEST_URL_HOSTS``, or :data:`DEFAULT_TEST_URL_HOSTS` when it is
    unset. Raises :class:`SettingsError` for a value that is not a non-empty list of names."""
    hosts = _json_strings(environ, ENV_TEST_URL_HOSTS, "host names") or DEFAULT_TEST_URL_HOSTS
    if not all(host and host == host.strip().lower() for host in hosts):
        raise SettingsError(f"{ENV_TEST_URL_HOSTS} must list lower-case host names")
    return frozenset(hosts)


def allowed_indexes_from_env(environ: Mapping[str, str]) -> frozenset[str]:
    """The index directories of ``WHEELGATE_ALLOWED_INDEXES`` (empty when unset: any).

    The deployed stack always sets it from ``index_dirs`` in ``cdk.json``; the promoter and the
    CLI read the same list. Raises :class:`SettingsError` for an invalid, repeated or nested
    directory.
    """
    indexes = _json_strings(environ, ENV_ALLOWED_INDEXES, "index directories")
    try:
        return frozenset(check_index_dirs(indexes))
    except LayoutError as exc:
        raise SettingsError(f"{ENV_ALLOWED_INDEXES}: {exc}") from exc


def dashboard_url_from_env(environ: Mapping[str, str]) -> str | None:
    """The ``https`` URL of ``WHEELGATE_DASHBOARD_URL``, ``None`` when unset or empty.

    Raises :class:`SettingsError` for a value that is not an absolute ``https`` URL.
    """
    url = environ.get(ENV_DASHBOARD_URL, "").strip()
    if not url:
        return None
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.netloc or any(c.isspace() for c in url):
        raise SettingsError(f"{ENV_DASHBOARD_URL} must be an https URL, not {url!r}")
    return url


#: The keys of one retention rule.
RETENTION_RULE_KEYS = ("keep_versions", "keep_days")


@dataclass(frozen=True)
class RetentionRule:
    """Which versions of a project an index directory's pages list.

    ``keep_versions`` (K): the newest K versions that are not wholly yanked. ``keep_days``
    (D): every version first released in the last D days. Both set: a version is listed when
    either keeps it (the last D days, and never fewer than K versions). Neither: every version.
    Whatever the rule, a project's newest version is always listed; see
    :mod:`wheelgate.index.retention` for the exact rules.
    """

    keep_versions: int | None = None
    keep_days: int | None = None

    @property
    def keeps_everything(self) -> bool:
        return self.keep_versions is None and self.keep_days is None

    def to_value(self) -> dict[str, int | None]:
        return {"keep_versions": self.keep_versions, "keep_days": self.keep_days}


@dataclass(frozen=True)
class ListingRetention:
    """The retention rule of every index directory: ``indexes`` overrides ``default`` per
    directory (an override is a whole rule: a key it leaves out is ``null``)."""

    default: RetentionRule = RetentionRule()
    indexes: Mapping[str, RetentionRule] = field(default_factory=dict)

    def rule_for(self, index: str) -> RetentionRule:
        """The rule of index directory ``index``."""
        return self.indexes.get(index, self.default)

    def to_json(self) -> str:
        """The value of ``WHEELGATE_LISTING_RETENTION``."""
        doc = {
            "default": self.default.to_value(),
            "indexes": {k: v.to_value() for k, v in sorted(self.indexes.items())},
        }
        return json.dumps(doc, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_value(cls, value: object, *, name: str) -> ListingRetention:
        """Read ``{"default": RULE, "indexes": {DIR: RULE}}`` (both keys optional; ``None``:
        keep everything). ``name`` names the setting in errors (the cdk.json key or the
        environment variable). Raises :class:`SettingsError` naming the bad key."""
        if value is None:
            return cls()
        if not isinstance(value, Mapping):
            raise SettingsError(f"{name} must be an object with 'default' and 'indexes'")
        unknown = sorted(set(value) - {"default", "indexes"})
        if unknown:
            raise SettingsError(
                f"{name} has unknown key(s) {', '.join(unknown)}: use 'default' and 'indexes'"
            )
        default = _retention_rule(value.get("default"), f"{name}.default")
        overrides = value.get("indexes") or {}
        if not isinstance(overrides, Mapping):
            raise SettingsError(f"{name}.indexes must map index directories to rules")
        indexes = {}
        for index, rule in overrides.items():
            try:
                check_index(str(index))
            except LayoutError as exc:
                raise SettingsError(f"{name}.indexes: {exc}") from exc
            indexes[str(index)] = _retention_rule(rule, f"{name}.indexes.{index}")
        return cls(default=default, indexes=indexes)


def _retention_rule(value: object, name: str) -> RetentionRule:
    if value is None:
        return RetentionRule()
    if not isinstance(value, Mapping):
        raise SettingsError(f"{name} must be an object with {' and '.join(RETENTION_RULE_KEYS)}")
    unknown = sorted(set(value) - set(RETENTION_RULE_KEYS))
    if unknown:
        raise SettingsError(
            f"{name} has unknown key(s) {', '.join(map(str, unknown))}: use "
            f"{' and '.join(RETENTION_RULE_KEYS)}"
        )
    numbers: dict[str, int | None] = {}
    for key in RETENTION_RULE_KEYS:
        number = value.get(key)
        if number is not None and (isinstance(number, bool) or not isinstance(number, int)):
            raise SettingsError(f"{name}.{key} must be a positive integer or null, not {number!r}")
        if number is not None and number <= 0:
            raise SettingsError(
                f"{name}.{key} is {number}; use a positive integer, or null to keep every version"
            )
        numbers[key] = number
    return RetentionRule(keep_versions=numbers["keep_versions"], keep_days=numbers["keep_days"])


def listing_retention_from_env(environ: Mapping[str, str]) -> ListingRetention:
    """The rules of ``WHEELGATE_LISTING_RETENTION`` (unset: every page lists every file).
    Raises :class:`SettingsError` naming the bad key."""
    return ListingRetention.from_value(
        _json_value(environ, ENV_LISTING_RETENTION, None), name=ENV_LISTING_RETENTION
    )


@dataclass(frozen=True)
class NewLocalLabels:
    """Where a released public version may gain a local version label it was not released
    with: in every index directory (``everywhere``), or in ``indexes``.

    PEP 440 ``==2.7.0`` matches ``2.7.0+rocm6.4`` and installers prefer the highest local
    version, so a new label changes what that pin installs. Builds of one public version for
    several platform stacks (``+rocm6.3``, then ``+rocm6.4``) are the case for allowing it; a
    version released without a label never gains one, whatever this says
    (:func:`~wheelgate.core.planning.check_local_labels`).
    """

    everywhere: bool = False
    indexes: frozenset[str] = frozenset()

    def allowed_in(self, index: str) -> bool:
        return self.everywhere or index in self.indexes

    def to_json(self) -> str:
        """The value of ``WHEELGATE_ALLOW_NEW_LOCAL_LABELS``."""
        return json.dumps(sorted(self.indexes) if self.indexes else self.everywhere)

    @classmethod
    def from_value(cls, value: object, *, name: str) -> NewLocalLabels:
        """Read ``true``, ``false`` or a list of index directories (``None``: ``false``).
        ``name`` names the setting in errors. Raises :class:`SettingsError`."""
        if value is None or isinstance(value, bool):
            return cls(everywhere=bool(value))
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SettingsError(f"{name} must be true, false or a list of index directories")
        try:
            return cls(indexes=frozenset(check_index(v) for v in value))
        except LayoutError as exc:
            raise SettingsError(f"{name}: {exc}") from exc


@dataclass(frozen=True)
class PromoterSettings:
    """Everything the promoter needs to know about its deployment."""

    staging_bucket: str
    nightly_bucket: str
    nightly_base_url: str
    nightly_distribution_id: str | None = None
    trusted_reporter_id: str | None = None
    trusted_deps_id: str | None = None
    required_tests: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    allowed_indexes: frozenset[str] = frozenset()
    break_glass_id: str | None = None
    block_all_on_failure: bool = True
    allow_build_tag_rereleases: bool = False
    allow_new_local_labels: NewLocalLabels = NewLocalLabels()
    test_url_hosts: frozenset[str] = frozenset(DEFAULT_TEST_URL_HOSTS)
    #: Console URL of the stack's dashboard (the status page links it); ``None``: no link.
    dashboard_url: str | None = None
    #: The fan-out state machine; ``None``: every run is promoted in one invocation.
    fanout_state_machine_arn: str | None = None
    fanout_min_files: int = DEFAULT_FANOUT_MIN_FILES
    fanout_min_bytes: int = DEFAULT_FANOUT_MIN_BYTES
    #: The copy map's concurrency (``WHEELGATE_FANOUT_COPY_CONCURRENCY``).
    fanout_copy_concurrency: int = DEFAULT_FANOUT_COPY_CONCURRENCY
    #: Where a failed fan-out execution sends its manifest's event back (see
    #: ``FANOUT_MAX_EXECUTIONS``).
    manifest_queue_url: str | None = None
    dead_letter_queue_url: str | None = None
    #: The lock nightly index pages are written with (``None``: the bucket's default).
    page_retention: PageRetention | None = None
    listing_retention: ListingRetention = ListingRetention()
    #: The KMS key that signs verdicts; ``None``: none are written.
    verdict_key_arn: str | None = None
    #: Where import requests may read from (``import_sources``); empty: nowhere.
    import_sources: tuple[ImportSource, ...] = ()

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> PromoterSettings:
        """Read settings from ``environ``; raise :class:`SettingsError` naming a bad variable."""

        def required(name: str) -> str:
            value = environ.get(name, "").strip()
            if not value:
                raise SettingsError(f"environment variable {name} is not set")
            return value

        def optional(name: str) -> str | None:
            return environ.get(name, "").strip() or None

        tests_raw = _json_value(environ, ENV_REQUIRED_TESTS, {})
        if not isinstance(tests_raw, dict) or not all(
            isinstance(v, list) and all(isinstance(t, str) for t in v) for v in tests_raw.values()
        ):
            raise SettingsError(f"{ENV_REQUIRED_TESTS} must map index directories to test names")
        try:
            for index in tests_raw:
                check_index(index)
        except LayoutError as exc:
            raise SettingsError(f"{ENV_REQUIRED_TESTS}: {exc}") from exc

        def boolean(name: str, default: bool) -> bool:
            raw = (environ.get(name, "") or str(default)).strip().lower()
            if raw not in ("true", "false"):
                raise SettingsError(f"{name} must be true or false, not {raw!r}")
            return raw == "true"

        def count(name: str, default: int) -> int:
            raw = environ.get(name, "").strip()
            if not raw:
                return default
            if not (raw.isascii() and raw.isdigit()):
                raise SettingsError(f"{name} must be a non-negative integer, not {raw!r}")
            return int(raw)

        return cls(
            staging_bucket=required(ENV_STAGING_BUCKET),
            nightly_bucket=required(ENV_NIGHTLY_BUCKET),
            nightly_base_url=base_url(required(ENV_NIGHTLY_BASE_URL)),
            nightly_distribution_id=optional(ENV_NIGHTLY_DISTRIBUTION_ID),
            trusted_reporter_id=optional(ENV_TRUSTED_REPORTER_ID),
            trusted_deps_id=optional(ENV_TRUSTED_DEPS_ID),
            required_tests={k: tuple(v) for k, v in tests_raw.items()},
            allowed_indexes=allowed_indexes_from_env(environ),
            break_glass_id=optional(ENV_BREAK_GLASS_ID),
            block_all_on_failure=boolean(ENV_BLOCK_ALL_ON_FAILURE, True),
            allow_build_tag_rereleases=boolean(ENV_ALLOW_BUILD_TAG_RERELEASES, False),
            allow_new_local_labels=NewLocalLabels.from_value(
                _json_value(environ, ENV_ALLOW_NEW_LOCAL_LABELS, None),
                name=ENV_ALLOW_NEW_LOCAL_LABELS,
            ),
            test_url_hosts=test_url_hosts_from_env(environ),
            dashboard_url=dashboard_url_from_env(environ),
            fanout_state_machine_arn=optional(ENV_FANOUT_STATE_MACHINE_ARN),
            fanout_min_files=count(ENV_FANOUT_MIN_FILES, DEFAULT_FANOUT_MIN_FILES),
            fanout_min_bytes=count(ENV_FANOUT_MIN_BYTES, DEFAULT_FANOUT_MIN_BYTES),
            fanout_copy_concurrency=max(
                1, count(ENV_FANOUT_COPY_CONCURRENCY, DEFAULT_FANOUT_COPY_CONCURRENCY)
            ),
            manifest_queue_url=optional(ENV_MANIFEST_QUEUE_URL),
            dead_letter_queue_url=optional(ENV_DEAD_LETTER_QUEUE_URL),
            page_retention=page_retention_from_env(environ),
            listing_retention=listing_retention_from_env(environ),
            verdict_key_arn=optional(ENV_VERDICT_KEY_ARN),
            import_sources=import_sources_from_env(environ),
        )
