"""The bucket policies: the rules of the role policies again, as explicit Deny statements keyed
on ``aws:PrincipalArn``, so that no other principal in the account (administrators included)
can write staging, nightly or the cache directly. docs/security.md states them in prose."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from wheelgate.core.layout import (
    HISTORY_PREFIX,
    HTML_PAGE,
    JSON_PAGE,
    MANIFESTS_PREFIX,
    RECORDS_PREFIX,
    RESERVED_TOP_LEVEL,
    RUNS_PREFIX,
    STATUS_PREFIX,
)

from .object_keys import (
    ANY_MIRROR_MANIFEST_KEYS,
    HISTORY_ENTRY_KEYS,
    IMPORT_REQUEST_KEYS,
    IMPORT_RUN_KEYS,
    MIRROR_MANIFEST_KEYS,
    MIRROR_RUN_KEYS,
    OVERRIDE_KEYS,
    page_keys,
)

# Deny statements use the wildcards so that every object write or delete API, including ones
# added to S3 later (PutObjectRetention, PutObjectLegalHold, ...), is covered.
OBJECT_WRITE_ACTIONS = ["s3:PutObject*", "s3:DeleteObject*", "s3:RestoreObject"]
OBJECT_DELETE_ACTIONS = ["s3:DeleteObject", "s3:DeleteObjectVersion"]
#: Retention of objects: the break-glass role's alone.
OBJECT_RETENTION_ACTIONS = [
    "s3:BypassGovernanceRetention",
    "s3:PutObjectRetention",
    "s3:PutObjectLegalHold",
]
#: What a PutObject with Object Lock headers also needs; the promoter's, for index pages only.
PAGE_LOCK_ACTION = "s3:PutObjectRetention"
#: Bucket settings a stack update applies (a new ``nightly_retention``, a changed bucket
#: policy): the deploy role's, through CloudFormation, and the break-glass role's for the lock.
LOCK_CONFIGURATION_ACTIONS = ["s3:PutBucketObjectLockConfiguration"]
POLICY_ACTIONS = ["s3:PutBucketPolicy", "s3:DeleteBucketPolicy"]

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


@dataclass(frozen=True, kw_only=True)
class DenyRule:
    """One Deny statement of a bucket policy, for every principal (its ``condition`` exempts
    whom it exempts).

    Attributes:
        sid: the statement's id, unique in its bucket's policy.
        actions: the S3 actions it denies.
        resources: the ARNs it denies them on; or
        not_resources: the ARNs it leaves out (it denies them on every other ARN).
        condition: when it applies (``None``: always).

    Raises ``ValueError`` without actions, or unless exactly one of ``resources`` and
    ``not_resources`` is given (a statement names one or the other).
    """

    sid: str
    actions: Sequence[str]
    resources: Sequence[str] | None = None
    not_resources: Sequence[str] | None = None
    condition: Mapping[str, object] | None = None

    def __post_init__(self) -> None:
        if not self.actions:
            raise ValueError(f"deny rule {self.sid} denies no action")
        if (self.resources is None) == (self.not_resources is None):
            raise ValueError(f"deny rule {self.sid} needs resources or not_resources, not both")

    def statement(self) -> iam.PolicyStatement:
        """The rule as a bucket policy statement."""
        return iam.PolicyStatement(
            sid=self.sid,
            effect=iam.Effect.DENY,
            principals=[iam.AnyPrincipal()],
            actions=list(self.actions),
            resources=None if self.resources is None else list(self.resources),
            not_resources=None if self.not_resources is None else list(self.not_resources),
            conditions=None if self.condition is None else dict(self.condition),
        )


@dataclass(frozen=True, kw_only=True)
class Principals:
    """The ARNs the bucket policies exempt: the WheelGate roles', the deploy role's
    (CloudFormation's execution role) and the break-glass role's (none when not configured)."""

    build: str
    reporter: str
    promoter: str
    deps: str
    deploy: str
    break_glass: tuple[str, ...] = ()


def unless(principal_arns: Sequence[str]) -> dict[str, object] | None:
    """Condition that exempts ``principal_arns``; None (applies to everyone) when empty."""
    if not principal_arns:
        return None
    return {"ArnNotEquals": {"aws:PrincipalArn": list(principal_arns)}}


def only(principal_arn: str) -> dict[str, object]:
    """Condition that applies a statement to ``principal_arn`` alone."""
    return {"ArnEquals": {"aws:PrincipalArn": [principal_arn]}}


def add_denies(bucket: s3.IBucket, rules: Sequence[DenyRule]) -> None:
    """Add each of ``rules`` to ``bucket``'s policy, in order."""
    for rule in rules:
        bucket.add_to_resource_policy(rule.statement())


def protect_staging_bucket(staging: s3.IBucket, who: Principals) -> None:
    """Staging's policy: :func:`staging_denies`, then the break-glass role's grants (it is
    created outside the stack, so they do not depend on its own policy): it writes an override
    or import request, then waits for the promoter's record."""
    add_denies(staging, staging_denies(staging, who))
    for arn in who.break_glass:
        principal = iam.ArnPrincipal(arn)
        staging.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowBreakGlassOverrides",
                principals=[principal],
                actions=["s3:PutObject"],
                resources=[staging.arn_for_objects(OVERRIDE_KEYS)],
            )
        )
        staging.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowBreakGlassImports",
                principals=[principal],
                actions=["s3:PutObject"],
                resources=[staging.arn_for_objects(IMPORT_REQUEST_KEYS)],
            )
        )
        staging.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowBreakGlassRecordReads",
                principals=[principal],
                actions=["s3:GetObject"],
                resources=[staging.arn_for_objects(f"{RECORDS_PREFIX}*")],
            )
        )
        staging.add_to_resource_policy(
            iam.PolicyStatement(
                # A record not written yet is then a 404, not a 403.
                sid="AllowBreakGlassListing",
                principals=[principal],
                actions=["s3:ListBucket"],
                resources=[staging.bucket_arn],
            )
        )


def protect_nightly_bucket(
    nightly: s3.IBucket, who: Principals, *, lock_mode: str, retention_days: int
) -> None:
    """Nightly's policy: :func:`nightly_denies`."""
    add_denies(
        nightly, nightly_denies(nightly, who, lock_mode=lock_mode, retention_days=retention_days)
    )


def protect_cache_bucket(cache: s3.IBucket, who: Principals) -> None:
    """The cache's policy (when the stack created the bucket): :func:`cache_denies`."""
    add_denies(cache, cache_denies(cache, who))


def staging_denies(staging: s3.IBucket, who: Principals) -> list[DenyRule]:
    """In staging nobody writes outside ``runs/``, ``manifests/``, ``records/``, ``status/``
    and ``history/``; each prefix is its writers' alone; every object created under ``runs/``
    but a run's own pages, and every history entry, is write-once; only the break-glass role
    deletes or writes requests."""
    build, reporter, promoter, deps = who.build, who.reporter, who.promoter, who.deps
    break_glass = who.break_glass
    overrides = staging.arn_for_objects(OVERRIDE_KEYS)
    imports = staging.arn_for_objects(IMPORT_REQUEST_KEYS)
    return [
        DenyRule(
            sid="DenyObjectWritesExceptWheelGateRoles",
            actions=OBJECT_WRITE_ACTIONS,
            not_resources=[overrides, imports],
            condition=unless([build, reporter, promoter, deps]),
        ),
        # Override requests skip the test rules: only the break-glass role writes them, and it
        # writes nothing else (it is not exempt from the Deny above).
        DenyRule(
            sid="DenyOverrideWritesExceptBreakGlass",
            actions=OBJECT_WRITE_ACTIONS,
            resources=[overrides],
            condition=unless(break_glass),
        ),
        # Import requests release files no test installed: the break-glass role's too.
        DenyRule(
            sid="DenyImportWritesExceptBreakGlass",
            actions=OBJECT_WRITE_ACTIONS,
            resources=[imports],
            condition=unless(break_glass),
        ),
        # The promoter writes runs/ for imports alone (its grant: runs/import-*).
        DenyRule(
            sid="DenyRunWritesExceptBuildDepsAndPromoter",
            actions=["s3:PutObject"],
            resources=[staging.arn_for_objects(f"{RUNS_PREFIX}*")],
            condition=unless([build, deps, promoter]),
        ),
        # What an import gathered is what it verifies and releases: no build run may stage
        # there, so only the promoter's copies (with their sources' hashes) are.
        DenyRule(
            sid="DenyImportRunWritesExceptPromoter",
            actions=["s3:PutObject"],
            resources=[staging.arn_for_objects(IMPORT_RUN_KEYS)],
            condition=unless([promoter]),
        ),
        # Write-once: a staged file and its .metadata are created once, never replaced (see
        # UNCONDITIONAL_CREATION). Everyone, build and deps too. A run's own index pages are
        # the exception: the build jobs of one run update them in place with conditional
        # writes. Rewriting one can only point a test at other bytes, which the manifest's
        # evidence of what each test installed then refuses. An S3 ARN cannot say "runs/ but
        # not its pages", so the Deny names what it leaves out; keys outside the five prefixes
        # are refused by DenyWritesOutsideStagingPrefixes.
        DenyRule(
            sid="DenyRunWritesWithoutIfNoneMatch",
            actions=["s3:PutObject"],
            not_resources=[
                *(
                    staging.arn_for_objects(f"{RUNS_PREFIX}*/{page}")
                    for page in (HTML_PAGE, JSON_PAGE)
                ),
                *(
                    staging.arn_for_objects(f"{prefix}*")
                    for prefix in (MANIFESTS_PREFIX, RECORDS_PREFIX, STATUS_PREFIX, HISTORY_PREFIX)
                ),
            ],
            condition=UNCONDITIONAL_CREATION,
        ),
        # history/ is left out above for the promoter's shards, head and page, which it updates
        # in place; a history entry is created once, like a staged file: a build job of one run
        # cannot alter what another run's job recorded (IAM cannot tell the two jobs apart).
        DenyRule(
            sid="DenyHistoryEntryWritesWithoutIfNoneMatch",
            actions=["s3:PutObject"],
            resources=[staging.arn_for_objects(HISTORY_ENTRY_KEYS)],
            condition=UNCONDITIONAL_CREATION,
        ),
        # The entries are the stage calls' (the build role's); the rest of history/ is what
        # the promoter made of them and of its decisions, its alone.
        DenyRule(
            sid="DenyHistoryWritesExceptBuildAndPromoter",
            actions=OBJECT_WRITE_ACTIONS,
            resources=[staging.arn_for_objects(f"{HISTORY_PREFIX}*")],
            condition=unless([build, promoter]),
        ),
        DenyRule(
            sid="DenyHistoryEntryWritesExceptBuild",
            actions=OBJECT_WRITE_ACTIONS,
            resources=[staging.arn_for_objects(HISTORY_ENTRY_KEYS)],
            condition=unless([build]),
        ),
        # An S3 ARN cannot say "history/ but not its entries": the build role's writes are held
        # to what it may write instead, as the deps role's are below.
        DenyRule(
            sid="DenyBuildWritesOutsideRunsAndHistoryEntries",
            actions=OBJECT_WRITE_ACTIONS,
            not_resources=[
                staging.arn_for_objects(f"{RUNS_PREFIX}*"),
                staging.arn_for_objects(HISTORY_ENTRY_KEYS),
            ],
            condition=only(build),
        ),
        DenyRule(
            sid="DenyManifestWritesExceptReporterDepsAndBreakGlass",
            actions=["s3:PutObject"],
            resources=[staging.arn_for_objects(f"{MANIFESTS_PREFIX}*")],
            condition=unless([reporter, deps, *break_glass]),
        ),
        # Mirror runs promote third-party wheels on the deps role's word alone: no build run
        # may stage under deps-*, and no reporter may write their manifest.
        DenyRule(
            sid="DenyMirrorWritesExceptDeps",
            actions=["s3:PutObject"],
            resources=[
                staging.arn_for_objects(MIRROR_RUN_KEYS),
                staging.arn_for_objects(ANY_MIRROR_MANIFEST_KEYS),
            ],
            condition=unless([deps]),
        ),
        # The deps role's exemptions above are for its mirror runs' keys only.
        DenyRule(
            sid="DenyDepsWritesOutsideMirrorRuns",
            actions=OBJECT_WRITE_ACTIONS,
            not_resources=[
                staging.arn_for_objects(MIRROR_RUN_KEYS),
                staging.arn_for_objects(MIRROR_MANIFEST_KEYS),
            ],
            condition=only(deps),
        ),
        DenyRule(
            sid="DenyRecordWritesExceptPromoter",
            actions=["s3:PutObject"],
            resources=[staging.arn_for_objects(f"{RECORDS_PREFIX}*")],
            condition=unless([promoter]),
        ),
        DenyRule(
            sid="DenyStatusWritesExceptPromoter",
            actions=["s3:PutObject"],
            resources=[staging.arn_for_objects(f"{STATUS_PREFIX}*")],
            condition=unless([promoter]),
        ),
        # Staging has no shared index pages (each run's are under runs/<run>/): every key is
        # under one of the reserved prefixes, the ones WheelGate writes.
        DenyRule(
            sid="DenyWritesOutsideStagingPrefixes",
            actions=["s3:PutObject"],
            not_resources=[
                staging.arn_for_objects(f"{name}/*") for name in sorted(RESERVED_TOP_LEVEL)
            ],
        ),
        # Lifecycle rules expire runs/; nothing else needs to delete.
        DenyRule(
            sid="DenyDeletes",
            actions=OBJECT_DELETE_ACTIONS,
            resources=[staging.arn_for_objects("*")],
            condition=unless(break_glass),
        ),
        # Staging has no Object Lock; the Denies keep the matrix uniform should it gain one.
        *bucket_setting_denies(staging, who),
    ]


def nightly_denies(
    nightly: s3.IBucket, who: Principals, *, lock_mode: str, retention_days: int
) -> list[DenyRule]:
    """Only the promoter and the break-glass role write nightly, only the break-glass role
    deletes, every key but the index pages is write-once, and no file is locked for less than
    ``retention_days`` or in a mode other than ``lock_mode``."""
    objects = nightly.arn_for_objects("*")
    pages = page_keys(nightly)
    return [
        DenyRule(
            sid="DenyObjectWritesExceptPromoter",
            actions=OBJECT_WRITE_ACTIONS,
            resources=[objects],
            condition=unless([who.promoter, *who.break_glass]),
        ),
        # A delete on a versioned, locked bucket still hides the file behind a delete marker,
        # so deletes need their own Deny.
        DenyRule(
            sid="DenyDeletes",
            actions=OBJECT_DELETE_ACTIONS,
            resources=[objects],
            condition=unless(who.break_glass),
        ),
        # A released file is never replaced: every creation of a file key (all but the index
        # pages, which the promoter updates in place) must carry If-None-Match, as under
        # staging runs/. Object Lock keeps the old version, but pip downloads the current one.
        DenyRule(
            sid="DenyFileWritesWithoutIfNoneMatch",
            actions=["s3:PutObject"],
            not_resources=pages,
            condition=UNCONDITIONAL_CREATION,
        ),
        # The promoter may lock index pages for less than the files (so replaced page versions
        # expire), hence s3:PutObjectRetention; never a file, whose lock is the bucket default.
        # A request without lock headers (a copy that takes the default) has no such key, and
        # NumericLessThan is then false. Everyone, the break-glass role too: it removes a file
        # with a governance bypass delete, never by shortening its lock.
        DenyRule(
            sid="DenyShortFileLocks",
            actions=["s3:PutObject", "s3:PutObjectRetention"],
            not_resources=pages,
            condition={
                "NumericLessThan": {"s3:object-lock-remaining-retention-days": str(retention_days)}
            },
        ),
        # A lock in the other mode would weaken a COMPLIANCE bucket (a GOVERNANCE lock can be
        # bypassed) or harden a GOVERNANCE one past break-glass's reach. Only a request that
        # names a mode is concerned.
        DenyRule(
            sid="DenyOtherLockModes",
            actions=["s3:PutObject", "s3:PutObjectRetention"],
            resources=[objects],
            condition={
                "Null": {"s3:object-lock-mode": "false"},
                "StringNotEquals": {"s3:object-lock-mode": lock_mode},
            },
        ),
        *bucket_setting_denies(nightly, who, page_lockers=[who.promoter]),
    ]


def cache_denies(cache: s3.IBucket, who: Principals) -> list[DenyRule]:
    """Only the deps role (and the break-glass role) writes the cache."""
    return [
        # Builds download from the cache; only deps sync fills it, and never overwrites or
        # deletes (versioning keeps any overwrite recoverable).
        DenyRule(
            sid="DenyObjectWritesExceptDeps",
            actions=OBJECT_WRITE_ACTIONS,
            resources=[cache.arn_for_objects("*")],
            condition=unless([who.deps, *who.break_glass]),
        ),
        # No Object Lock here; the Denies keep the rules the same on every bucket.
        *bucket_setting_denies(cache, who),
    ]


def bucket_setting_denies(
    bucket: s3.IBucket, who: Principals, page_lockers: Sequence[str] = ()
) -> list[DenyRule]:
    """Retention and bucket policy changes: object retention is the break-glass role's (and
    ``page_lockers`` may set an index page's, which a PutObject with lock headers does); the
    lock configuration and the bucket policy are also the deploy role's, which CloudFormation
    uses to apply a stack update (a new ``nightly_retention``, a changed policy). No one else
    may change the policy that holds these rules."""
    break_glass = who.break_glass
    retention = [
        DenyRule(
            sid="DenyRetentionChanges",
            actions=OBJECT_RETENTION_ACTIONS,
            resources=[bucket.arn_for_objects("*")],
            condition=unless(break_glass),
        )
    ]
    if page_lockers:
        pages = page_keys(bucket)
        retention = [
            DenyRule(
                sid="DenyRetentionChanges",
                actions=[a for a in OBJECT_RETENTION_ACTIONS if a != PAGE_LOCK_ACTION],
                resources=[bucket.arn_for_objects("*")],
                condition=unless(break_glass),
            ),
            DenyRule(
                sid="DenyFileRetentionChanges",
                actions=[PAGE_LOCK_ACTION],
                not_resources=pages,
                condition=unless(break_glass),
            ),
            DenyRule(
                sid="DenyPageRetentionChangesExceptPromoter",
                actions=[PAGE_LOCK_ACTION],
                resources=pages,
                condition=unless([*page_lockers, *break_glass]),
            ),
        ]
    return [
        *retention,
        DenyRule(
            sid="DenyLockConfigurationChangesExceptDeploys",
            actions=LOCK_CONFIGURATION_ACTIONS,
            resources=[bucket.bucket_arn],
            condition=unless([who.deploy, *break_glass]),
        ),
        # The account root user may still change the policy (S3 never lets a bucket policy
        # lock it out); CloudTrail records it.
        DenyRule(
            sid="DenyPolicyChangesExceptDeploys",
            actions=POLICY_ACTIONS,
            resources=[bucket.bucket_arn],
            condition=unless([who.deploy]),
        ),
    ]
