"""Who may touch which keys, once: the access table (role x key pattern x actions) and the zones
of keys each bucket policy keeps for their writers. The roles' identity statements are made
here from the table; the bucket policies (stacks/bucket_policies.py) deny each zone to every
principal but the roles the table lets write it, so the two cannot drift apart."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from fnmatch import fnmatchcase

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from wheelgate.core.import_sources import ImportSource
from wheelgate.core.layout import (
    HISTORY_ENTRIES_DIR,
    HISTORY_PREFIX,
    HTML_PAGE,
    IMPORT_RUN_PREFIX,
    JSON_PAGE,
    MANIFEST_SUFFIX,
    MANIFESTS_PREFIX,
    METADATA_SUFFIX,
    MIRROR_RUN_PREFIX,
    OVERRIDE_RUN_PREFIX,
    RECORDS_PREFIX,
    RUNS_PREFIX,
    STATUS_PREFIX,
    VERDICT_KEYS_KEY,
)

# Deny statements use the wildcards so that every object write or delete API, including ones
# added to S3 later (PutObjectRetention, PutObjectLegalHold, ...), is covered.
OBJECT_WRITE_ACTIONS = ["s3:PutObject*", "s3:DeleteObject*", "s3:RestoreObject"]
PUT = ("s3:PutObject",)
#: A write that creates an object without ``If-None-Match``, as AWS's "Enforce conditional
#: writes on Amazon S3 buckets" (S3 User Guide, conditional-writes-enforce) spells it:
#: ``s3:if-none-match`` is absent (``Null`` true) unless the request sends the header, and
#: ``s3:ObjectCreationOperation`` (``Bool``) is true for PutObject, CompleteMultipartUpload and,
#: since October 2025, CopyObject; it exempts CreateMultipartUpload, UploadPart and
#: UploadPartCopy, which take no conditional header (the completion carries it). Ceph RGW never
#: sets ``s3:if-none-match``, so only the IAM evaluator (tests/infra/iam_matrix.py) can show this.
UNCONDITIONAL_CREATION: dict[str, object] = {
    "Null": {"s3:if-none-match": "true"},
    "Bool": {"s3:ObjectCreationOperation": "true"},
}


class Bucket(Enum):
    """The buckets the table names keys of (the dev bucket, not the stack's, by its name)."""

    STAGING = "staging"
    NIGHTLY = "nightly"
    CACHE = "cache"
    DEV = "dev"


class Role(Enum):
    """The roles, in the order a bucket policy names its writers; the value is a Sid's word."""

    BUILD = "Build"
    REPORTER = "Reporter"
    DEV = "Dev"
    DEPS = "Deps"
    PROMOTER = "Promoter"
    #: Created outside the stack: its grants are Allow statements of the staging policy.
    BREAK_GLASS = "BreakGlass"


@dataclass(frozen=True)
class Keys:
    """The objects of ``bucket`` whose keys match ``pattern`` (``*``: any characters; one
    ``{index}`` is each configured index directory, one ``{prefix}`` each cache prefix), or
    the bucket itself (``pattern`` None). ``name`` is the word of the Deny a role's policy gets
    for these keys when a wider grant of its own covers them."""

    bucket: Bucket
    pattern: str | None
    name: str = ""

    def within(self, other: Keys) -> bool:
        """Whether every key of ``self`` is one of ``other``'s (``other`` a ``prefix*``)."""
        if self.bucket != other.bucket or self.pattern is None or other.pattern is None:
            return False
        prefix = other.pattern.removesuffix("*")
        wide = "*" not in prefix and other.pattern.endswith("*")
        return self.pattern == other.pattern or (wide and self.pattern.startswith(prefix))


def _pages(bucket: Bucket, under: str = "") -> tuple[Keys, ...]:
    return tuple(Keys(bucket, f"{under}*/{page}") for page in (HTML_PAGE, JSON_PAGE))


STAGING_OBJECTS = Keys(Bucket.STAGING, "*")
RUNS = Keys(Bucket.STAGING, f"{RUNS_PREFIX}*")
#: A run's own index pages, which its build jobs update in place.
RUN_PAGES = _pages(Bucket.STAGING, RUNS_PREFIX)
MANIFESTS = Keys(Bucket.STAGING, f"{MANIFESTS_PREFIX}*")
RECORDS = Keys(Bucket.STAGING, f"{RECORDS_PREFIX}*")
STATUS = Keys(Bucket.STAGING, f"{STATUS_PREFIX}*")
HISTORY = Keys(Bucket.STAGING, f"{HISTORY_PREFIX}*")
#: The run history's entries, one per stage call (``history/_entries/<index>/<run>/...``).
HISTORY_ENTRIES = Keys(Bucket.STAGING, f"{HISTORY_PREFIX}{HISTORY_ENTRIES_DIR}*")
#: The shards, head and page of an index directory's run history; an index directory never
#: starts with '_', so none of these reaches history/_entries/.
RUN_HISTORY = Keys(Bucket.STAGING, f"{HISTORY_PREFIX}{{index}}/*")
#: Dependency-mirror runs (``wheelgate deps sync``), override requests, import requests, and
#: the files an import gathers.
MIRROR_RUNS = Keys(Bucket.STAGING, f"{RUNS_PREFIX}{MIRROR_RUN_PREFIX}*", "MirrorRuns")
MIRROR_MANIFESTS = Keys(Bucket.STAGING, f"{MANIFESTS_PREFIX}{MIRROR_RUN_PREFIX}*{MANIFEST_SUFFIX}")
#: Every ``manifests/deps-*`` key, whatever its suffix: the other roles may write none of them.
ANY_MIRROR_MANIFESTS = Keys(
    Bucket.STAGING, f"{MANIFESTS_PREFIX}{MIRROR_RUN_PREFIX}*", "MirrorManifests"
)
MIRROR_RECORDS = Keys(Bucket.STAGING, f"{RECORDS_PREFIX}{MIRROR_RUN_PREFIX}*")
OVERRIDES = Keys(Bucket.STAGING, f"{MANIFESTS_PREFIX}{OVERRIDE_RUN_PREFIX}*")
IMPORT_REQUESTS = Keys(Bucket.STAGING, f"{MANIFESTS_PREFIX}{IMPORT_RUN_PREFIX}*", "ImportRequests")
IMPORT_RUNS = Keys(Bucket.STAGING, f"{RUNS_PREFIX}{IMPORT_RUN_PREFIX}*", "ImportRuns")
NIGHTLY_OBJECTS = Keys(Bucket.NIGHTLY, "*")
NIGHTLY_PAGES = _pages(Bucket.NIGHTLY)
NIGHTLY_METADATA = Keys(Bucket.NIGHTLY, f"*{METADATA_SUFFIX}")
INDEX_DIRECTORY = Keys(Bucket.NIGHTLY, "{index}/*")
#: An index directory's root page (``<index>/index.html``: no ``/`` for the ``*`` of
#: :data:`NIGHTLY_PAGES`) and project pages.
INDEX_PAGES = (
    *(Keys(Bucket.NIGHTLY, f"{{index}}/{page}") for page in (HTML_PAGE, JSON_PAGE)),
    *_pages(Bucket.NIGHTLY, "{index}/"),
)
CACHE_OBJECTS = Keys(Bucket.CACHE, "*")
CACHE_PREFIXES = Keys(Bucket.CACHE, "{prefix}*")
STAGING_BUCKET = Keys(Bucket.STAGING, None)
NIGHTLY_BUCKET = Keys(Bucket.NIGHTLY, None)
CACHE_BUCKET = Keys(Bucket.CACHE, None)
#: What ListBucket is for: a missing key is then a 404 instead of a 403.
BOTH_BUCKETS = (STAGING_BUCKET, NIGHTLY_BUCKET)


@dataclass(frozen=True)
class Grant:
    """One row of the table: ``role`` may do ``actions`` on ``keys`` (an Allow with ``sid``)."""

    role: Role
    sid: str
    actions: tuple[str, ...]
    keys: tuple[Keys, ...]

    @property
    def writes(self) -> bool:
        """Whether an action creates, changes or deletes an object."""
        allowed = [*OBJECT_WRITE_ACTIONS, "s3:AbortMultipartUpload"]
        return any(fnmatchcase(a, pattern) for a in self.actions for pattern in allowed)


_B, _R, _D, _P = Role.BUILD, Role.REPORTER, Role.DEPS, Role.PROMOTER
_READ, _READ_ATTRIBUTES = ("s3:GetObject",), ("s3:GetObject", "s3:GetObjectAttributes")
_LIST = ("s3:ListBucket",)
#: Multipart uploads (files over 5 GiB, and server-side copies over the multipart threshold)
#: can be abandoned mid-way.
_UPLOAD = ("s3:PutObject", "s3:AbortMultipartUpload")
_USE_DEV = ("s3:PutObject", "s3:GetObject", "s3:DeleteObject", "s3:AbortMultipartUpload")
_JSON = f"*/{JSON_PAGE}"

#: The access table: each role's grants, in the order of its policy's statements.
GRANTS = (
    Grant(_B, "UploadStagedRuns", _UPLOAD, (RUNS,)),
    Grant(_B, "WriteHistoryEntries", PUT, (HISTORY_ENTRIES,)),
    # A run's pages are written with the tag that selects their lifecycle rule (storage.py
    # ExpireRunPages); PutObject with tags needs this too.
    Grant(_B, "TagRunPages", ("s3:PutObjectTagging",), RUN_PAGES),
    Grant(_B, "ReadStaging", _READ, (STAGING_OBJECTS,)),
    # The run's index borrows nightly's pages of its dependency closure, which it walks
    # through the PEP 658 metadata files (never a wheel).
    Grant(_B, "ReadNightlyIndexPages", _READ, (*NIGHTLY_PAGES, NIGHTLY_METADATA)),
    Grant(_B, "ListBuckets", _LIST, BOTH_BUCKETS),
    Grant(_R, "WriteManifests", PUT, (MANIFESTS,)),
    Grant(_R, "ReadRunsAndRecords", _READ, (RUNS, RECORDS)),
    # report holds each test's evidence to the bytes the run's index offers: nightly's pages
    # and metadata of the closure, and the nightly wheels an environment is matched with (all
    # of it public through the CDN anyway).
    Grant(_R, "ReadNightly", _READ, (NIGHTLY_OBJECTS,)),
    Grant(_R, "ListBuckets", _LIST, BOTH_BUCKETS),
    Grant(Role.DEV, "UseDevBucket", _USE_DEV, (Keys(Bucket.DEV, "*"),)),
    Grant(Role.DEV, "ListDevBucket", _LIST, (Keys(Bucket.DEV, None),)),
    # Files over 5 GiB are multipart uploads, which s3:PutObject also covers.
    Grant(_D, "WriteCache", PUT, (CACHE_PREFIXES,)),
    Grant(_D, "ReadCache", _READ, (CACHE_PREFIXES,)),
    Grant(_D, "StageMirrorRuns", PUT, (MIRROR_RUNS, MIRROR_MANIFESTS)),
    Grant(_D, "ReadMirrorRunsAndRecords", _READ, (MIRROR_RUNS, MIRROR_RECORDS)),
    Grant(_D, "ReadIndexPages", _READ, (Keys(Bucket.STAGING, _JSON), Keys(Bucket.NIGHTLY, _JSON))),
    # Without ListBucket a missing key (a file not cached yet, a record not written yet, a
    # page of a new project) is a 403 instead of a 404. S3 makes that check without an
    # s3:prefix, so a prefix condition would defeat it.
    Grant(_D, "ListBuckets", _LIST, (CACHE_BUCKET, *BOTH_BUCKETS)),
    Grant(_P, "ReadStaging", _READ_ATTRIBUTES, (STAGING_OBJECTS,)),
    Grant(_P, "WriteRecordsAndStatus", PUT, (RECORDS, STATUS)),
    Grant(_P, "WriteRunHistory", PUT, (RUN_HISTORY,)),
    # An import's files, copied server-side from its source.
    Grant(_P, "GatherImports", _UPLOAD, (IMPORT_RUNS,)),
    Grant(_P, "ReadNightly", _READ_ATTRIBUTES, (NIGHTLY_OBJECTS,)),
    # Only under the configured index directories, where it publishes; the promoter refuses
    # any other directory too.
    Grant(_P, "WriteNightly", _UPLOAD, (INDEX_DIRECTORY,)),
    # The public keys of verdicts (docs/verdicts.md): a fixed key outside every index
    # directory, named like a page, so it may be updated in place (If-Match) when a rotation
    # adds a key.
    Grant(_P, "WriteVerdictKeys", PUT, (Keys(Bucket.NIGHTLY, VERDICT_KEYS_KEY),)),
    # A PutObject that sets its own Object Lock needs this too: the index pages are written
    # with a lock shorter than the files', so that replaced page versions can expire. Pages
    # only; the bucket policy denies a file a shorter lock (DenyShortFileLocks) whatever the
    # identity policy says.
    Grant(_P, "LockNightlyPages", ("s3:PutObjectRetention",), INDEX_PAGES),
    Grant(_P, "ListBuckets", _LIST, BOTH_BUCKETS),
    # The break-glass role writes an override or import request, then waits for the
    # promoter's record (a record not written yet is then a 404, not a 403).
    Grant(Role.BREAK_GLASS, "AllowBreakGlassOverrides", PUT, (OVERRIDES,)),
    Grant(Role.BREAK_GLASS, "AllowBreakGlassImports", PUT, (IMPORT_REQUESTS,)),
    Grant(Role.BREAK_GLASS, "AllowBreakGlassRecordReads", _READ, (RECORDS,)),
    Grant(Role.BREAK_GLASS, "AllowBreakGlassListing", _LIST, (STAGING_BUCKET,)),
)


@dataclass(frozen=True)
class Zone:
    """Keys a bucket policy keeps for their writers: every role with a writing grant of the
    table within ``keys``. Its Deny (``Deny<name>WritesExcept<writers>``) refuses ``actions``
    there to every other principal.

    Attributes:
        repeated: whether a role whose wider grant covers these keys also denies them to
            itself (``Deny<keys name>`` in its own policy).
        create_only: whether each key is created once (``If-None-Match``), by its writers too.
        break_glass: whether the break-glass role is exempt too (its own policy, outside the
            stack, grants it), unnamed in the Sid.
    """

    name: str
    keys: tuple[Keys, ...]
    actions: Sequence[str] = PUT
    repeated: bool = True
    create_only: bool = False
    break_glass: bool = False


# Mirror runs promote third-party wheels on the deps role's word alone: no build run may stage
# under deps-*, and no reporter may write their manifest.
MIRROR_ZONE = Zone("Mirror", (MIRROR_RUNS, ANY_MIRROR_MANIFESTS))
# Override requests skip the test rules: only the break-glass role writes them. (The reporter's
# own policy does not repeat this Deny; the bucket policy holds it.)
OVERRIDE_ZONE = Zone("Override", (OVERRIDES,), OBJECT_WRITE_ACTIONS, repeated=False)
# Import requests release files no test installed: the break-glass role's too.
IMPORT_ZONE = Zone("Import", (IMPORT_REQUESTS,), OBJECT_WRITE_ACTIONS)
# What an import gathered is what it verifies and releases: no build run may stage there, so
# only the promoter's copies (with their sources' hashes) are.
IMPORT_RUN_ZONE = Zone("ImportRun", (IMPORT_RUNS,))
RUN_ZONE = Zone("Run", (RUNS,))
# The entries are the stage calls' (the build role's), each created once, like a staged file:
# a build job of one run cannot alter what another run's job recorded (IAM cannot tell the two
# jobs apart). The rest of history/ is what the promoter made of them and of its decisions.
HISTORY_ENTRY_ZONE = Zone(
    "HistoryEntry", (HISTORY_ENTRIES,), OBJECT_WRITE_ACTIONS, create_only=True
)
HISTORY_ZONE = Zone("History", (HISTORY,), OBJECT_WRITE_ACTIONS)
MANIFEST_ZONE = Zone("Manifest", (MANIFESTS,))
RECORD_ZONE = Zone("Record", (RECORDS,))
STATUS_ZONE = Zone("Status", (STATUS,))
NIGHTLY_ZONE = Zone("Object", (NIGHTLY_OBJECTS,), OBJECT_WRITE_ACTIONS, break_glass=True)
# Builds download from the cache; only deps sync fills it, and never overwrites or deletes
# (versioning keeps any overwrite recoverable).
CACHE_ZONE = Zone("Object", (CACHE_OBJECTS,), OBJECT_WRITE_ACTIONS, break_glass=True)
#: In the order a role's own policy repeats them.
ZONES = (
    MIRROR_ZONE,
    OVERRIDE_ZONE,
    IMPORT_ZONE,
    IMPORT_RUN_ZONE,
    RUN_ZONE,
    HISTORY_ENTRY_ZONE,
    HISTORY_ZONE,
    MANIFEST_ZONE,
    RECORD_ZONE,
    STATUS_ZONE,
    NIGHTLY_ZONE,
    CACHE_ZONE,
)


def _writing(role: Role) -> list[Grant]:
    return [grant for grant in GRANTS if grant.role is role and grant.writes]


def writers(zone: Zone) -> list[Role]:
    """The roles the table lets write within ``zone``, in :class:`Role` order."""
    return [
        role
        for role in Role
        if any(k.within(z) for g in _writing(role) for k in g.keys for z in zone.keys)
    ]


def write_keys(role: Role, bucket: Bucket) -> list[Keys]:
    """The widest keys ``role`` may write in ``bucket`` (none within another), in table order."""
    keys = [k for g in _writing(role) for k in g.keys if k.bucket is bucket]
    return [k for k in keys if not any(k != wider and k.within(wider) for wider in keys)]


def sid_words(roles: Sequence[Role]) -> str:
    """``roles`` as a Sid spells them: ``Build``, ``BuildAndPromoter``, ``BuildDepsAndPromoter``."""
    words = [role.value for role in roles]
    return words[0] if len(words) == 1 else "".join(words[:-1]) + "And" + words[-1]


def bucket_arn(name: str) -> str:
    """The ARN of the bucket named ``name`` (one the stack does not create)."""
    return f"arn:{Aws.PARTITION}:s3:::{name}"


@dataclass(frozen=True, kw_only=True)
class Where:
    """Where the table's keys are: each bucket (the stack's, or a bucket's name), and the values
    of ``{index}`` (``index_dirs``) and ``{prefix}`` (``cache_prefixes``)."""

    buckets: Mapping[Bucket, s3.IBucket | str]
    index_dirs: Sequence[str] = ()
    cache_prefixes: Sequence[str] = ()

    def arns(self, keys: Sequence[Keys]) -> list[str]:
        """The ARNs of ``keys``, for each value of their placeholder in turn."""
        patterns = "".join(key.pattern or "" for key in keys)
        fills: Sequence[str] = ("",)
        if "{index}" in patterns:
            fills = self.index_dirs
        elif "{prefix}" in patterns:
            fills = self.cache_prefixes
        return [self._arn(key, fill) for fill in fills for key in keys]

    def _arn(self, keys: Keys, fill: str) -> str:
        bucket = self.buckets[keys.bucket]
        pattern = None if keys.pattern is None else keys.pattern.format(index=fill, prefix=fill)
        if isinstance(bucket, str):
            return bucket_arn(bucket) if pattern is None else f"{bucket_arn(bucket)}/{pattern}"
        return bucket.bucket_arn if pattern is None else bucket.arn_for_objects(pattern)


def grant_statement(
    grant: Grant, where: Where, principals: list[iam.IPrincipal] | None = None
) -> iam.PolicyStatement:
    """``grant`` as an Allow statement (of a bucket policy, given ``principals``)."""
    return iam.PolicyStatement(
        sid=grant.sid,
        principals=principals,
        actions=list(grant.actions),
        resources=where.arns(grant.keys),
    )


def role_statements(role: Role, where: Where) -> list[iam.PolicyStatement]:
    """``role``'s identity policy: its grants in table order; after a grant of create-only
    keys, the Deny of a creation without ``If-None-Match``; after its last writing grant, a
    Deny of each zone key its grants cover but the zone keeps for others (``Deny<name>``).

    Raises ``ValueError`` if such a key has no name.
    """
    grants = [grant for grant in GRANTS if grant.role is role]
    last_write = _writing(role)[-1:]
    statements = []
    for grant in grants:
        statements.append(grant_statement(grant, where))
        for zone in ZONES:
            if zone.create_only and any(k.within(z) for k in grant.keys for z in zone.keys):
                arns = where.arns(zone.keys)
                rewrites = _deny(f"Deny{zone.name}Rewrites", PUT, arns, UNCONDITIONAL_CREATION)
                statements.append(rewrites)
        if [grant] == last_write:
            statements.extend(_covered_denies(role, where))
    return statements


def _covered_denies(role: Role, where: Where) -> Iterator[iam.PolicyStatement]:
    grants = _writing(role)
    actions = list(dict.fromkeys(a for g in grants for a in g.actions))
    for zone in ZONES:
        if not zone.repeated or role in writers(zone):
            continue
        for key in zone.keys:
            if not any(key.within(k) for g in grants for k in g.keys):
                continue
            if not key.name:
                raise ValueError(
                    f"{role.value}'s grants cover {key.pattern}, kept for others: name it"
                )
            yield _deny(f"Deny{key.name}", actions, where.arns([key]))


def _deny(
    sid: str,
    actions: Sequence[str],
    resources: list[str],
    conditions: dict[str, object] | None = None,
) -> iam.PolicyStatement:
    return iam.PolicyStatement(
        sid=sid,
        effect=iam.Effect.DENY,
        actions=list(actions),
        resources=resources,
        conditions=conditions,
    )


def import_source_statements(sources: Sequence[ImportSource]) -> list[iam.PolicyStatement]:
    """Let the promoter read each import source (``import_sources``): list its bucket under
    its prefix, read its objects there (the files, and the index pages beside them), and
    nothing else of that bucket. A bucket in another account must also allow the promoter
    role in its own policy."""
    listing = [
        iam.PolicyStatement(
            sid=f"ListImportSource{n}",
            actions=["s3:ListBucket"],
            resources=[bucket_arn(source.bucket)],
            # The import lists its prefix alone (Prefix=<prefix>); a whole-bucket entry has no
            # prefix to hold it to.
            conditions=(
                {"StringLike": {"s3:prefix": [f"{source.prefix}*"]}} if source.prefix else None
            ),
        )
        for n, source in enumerate(sources)
    ]
    return [
        iam.PolicyStatement(
            sid="ReadImportSources",
            actions=["s3:GetObject"],
            resources=[f"{bucket_arn(source.bucket)}/{source.prefix}*" for source in sources],
        ),
        *listing,
    ]
