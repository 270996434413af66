"""The bucket policies: explicit Deny statements keyed on ``aws:PrincipalArn``, made of the
access table (stacks/access_table.py), so that no other principal in the account
(administrators included) can write staging, nightly or the cache directly. docs/security.md
states them in prose."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from wheelgate.core.layout import RESERVED_TOP_LEVEL

from . import access_table as table
from .access_table import GRANTS, PUT, UNCONDITIONAL_CREATION, Bucket, Role, Where, Zone

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

    def arns(self, roles: Sequence[Role]) -> list[str]:
        """The ARNs of ``roles`` (the dev role's bucket has no policy of WheelGate's)."""
        found = [getattr(self, role.name.lower()) for role in roles]
        return [arn for arns in found for arn in ((arns,) if isinstance(arns, str) else arns)]


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
    """Staging's policy: :func:`staging_denies`, then the break-glass role's grants of the
    access table (it is created outside the stack, so they do not depend on its own policy).
    Nightly's and the cache's are :func:`nightly_denies` and :func:`cache_denies` alone."""
    add_denies(staging, staging_denies(staging, who))
    where = Where(buckets={Bucket.STAGING: staging})
    for arn in who.break_glass:
        for grant in GRANTS:
            if grant.role is Role.BREAK_GLASS:
                statement = table.grant_statement(grant, where, [iam.ArnPrincipal(arn)])
                staging.add_to_resource_policy(statement)


class _Rules:
    """The Denies a bucket policy makes of the access table, for ``bucket``."""

    def __init__(self, bucket: s3.IBucket, kind: Bucket, who: Principals) -> None:
        self.where = Where(buckets={kind: bucket})
        self.kind = kind
        self.who = who

    def zone(self, zone: Zone) -> DenyRule:
        """``zone``'s keys are its writers' alone.

        Raises ``ValueError`` if no role may write there (a mistake of the table).
        """
        roles = table.writers(zone)
        if not roles:
            raise ValueError(f"no role of the access table writes zone {zone.name}")
        exempt = self.who.arns([*roles, *([Role.BREAK_GLASS] if zone.break_glass else [])])
        return DenyRule(
            sid=f"Deny{zone.name}WritesExcept{table.sid_words(roles)}",
            actions=zone.actions,
            resources=self.where.arns(zone.keys),
            condition=unless(exempt),
        )

    def create_only(self) -> list[DenyRule]:
        """Each key of the table's create-only zones in this bucket is created once."""
        return [
            self.created_once(f"Deny{zone.name}WritesWithoutIfNoneMatch", zone.keys)
            for zone in table.ZONES
            if zone.create_only and zone.keys[0].bucket is self.kind
        ]

    def created_once(self, sid: str, keys: Sequence[table.Keys], *, but: bool = False) -> DenyRule:
        """Every object created within ``keys`` (``but``: anywhere but ``keys``, which are
        updated in place) carries ``If-None-Match`` (see ``UNCONDITIONAL_CREATION``)."""
        arns = self.where.arns(keys)
        return DenyRule(
            sid=sid,
            actions=PUT,
            resources=None if but else arns,
            not_resources=arns if but else None,
            condition=UNCONDITIONAL_CREATION,
        )

    def deletes(self, objects: table.Keys) -> DenyRule:
        """Only the break-glass role deletes."""
        return DenyRule(
            sid="DenyDeletes",
            actions=OBJECT_DELETE_ACTIONS,
            resources=self.where.arns([objects]),
            condition=unless(self.who.break_glass),
        )

    def confined(self, role: Role, sid: str) -> DenyRule:
        """``role`` writes nothing but the keys the table grants it: an S3 ARN cannot say
        "history/ but not its entries", so the zones' exemptions alone would let it."""
        (arn,) = self.who.arns([role])
        return DenyRule(
            sid=sid,
            actions=table.OBJECT_WRITE_ACTIONS,
            not_resources=self.where.arns(table.write_keys(role, self.kind)),
            condition=only(arn),
        )


def staging_denies(staging: s3.IBucket, who: Principals) -> list[DenyRule]:
    """In staging nobody writes outside ``runs/``, ``manifests/``, ``records/``, ``status/``
    and ``history/``; each zone is its writers' alone; every object created under ``runs/``
    but a run's own pages, and every history entry, is write-once; only the break-glass role
    deletes or writes requests."""
    rules = _Rules(staging, Bucket.STAGING, who)
    return [
        # The break-glass role writes nothing but its requests (it is not exempt here).
        DenyRule(
            sid="DenyObjectWritesExceptWheelGateRoles",
            actions=table.OBJECT_WRITE_ACTIONS,
            not_resources=rules.where.arns(table.write_keys(Role.BREAK_GLASS, Bucket.STAGING)),
            condition=unless([who.build, who.reporter, who.promoter, who.deps]),
        ),
        rules.zone(table.OVERRIDE_ZONE),
        rules.zone(table.IMPORT_ZONE),
        rules.zone(table.RUN_ZONE),
        rules.zone(table.IMPORT_RUN_ZONE),
        # Write-once: a staged file and its .metadata are created once, never replaced.
        # Everyone, build and deps too. A run's own index pages are the exception: the build
        # jobs of one run update them in place with conditional writes. Rewriting one can only
        # point a test at other bytes, which the manifest's evidence of what each test
        # installed then refuses. An S3 ARN cannot say "runs/ but not its pages", so the Deny
        # names what it leaves out; keys outside the five prefixes are refused by
        # DenyWritesOutsideStagingPrefixes. (history/ is left out for the promoter's shards,
        # head and page, which it updates in place; its entries are create-only below.)
        rules.created_once(
            "DenyRunWritesWithoutIfNoneMatch",
            [*table.RUN_PAGES, table.MANIFESTS, table.RECORDS, table.STATUS, table.HISTORY],
            but=True,
        ),
        *rules.create_only(),
        rules.zone(table.HISTORY_ZONE),
        rules.zone(table.HISTORY_ENTRY_ZONE),
        rules.confined(Role.BUILD, "DenyBuildWritesOutsideRunsAndHistoryEntries"),
        rules.zone(table.MANIFEST_ZONE),
        rules.zone(table.MIRROR_ZONE),
        rules.confined(Role.DEPS, "DenyDepsWritesOutsideMirrorRuns"),
        rules.zone(table.RECORD_ZONE),
        rules.zone(table.STATUS_ZONE),
        # Staging has no shared index pages (each run's are under runs/<run>/): every key is
        # under one of the reserved prefixes, the ones WheelGate writes.
        DenyRule(
            sid="DenyWritesOutsideStagingPrefixes",
            actions=PUT,
            not_resources=[
                staging.arn_for_objects(f"{name}/*") for name in sorted(RESERVED_TOP_LEVEL)
            ],
        ),
        # Lifecycle rules expire runs/; nothing else needs to delete.
        rules.deletes(table.STAGING_OBJECTS),
        # Staging has no Object Lock; the Denies keep the matrix uniform should it gain one.
        *bucket_setting_denies(staging, who),
    ]


def nightly_denies(
    nightly: s3.IBucket, who: Principals, *, lock_mode: str, retention_days: int
) -> list[DenyRule]:
    """Only the promoter and the break-glass role write nightly, only the break-glass role
    deletes, every key but the index pages is write-once, and no file is locked for less than
    ``retention_days`` or in a mode other than ``lock_mode``."""
    rules = _Rules(nightly, Bucket.NIGHTLY, who)
    objects = rules.where.arns([table.NIGHTLY_OBJECTS])
    pages = rules.where.arns(table.NIGHTLY_PAGES)
    return [
        rules.zone(table.NIGHTLY_ZONE),
        # A delete on a versioned, locked bucket still hides the file behind a delete marker,
        # so deletes need their own Deny.
        rules.deletes(table.NIGHTLY_OBJECTS),
        # A released file is never replaced: every creation of a file key (all but the index
        # pages, which the promoter updates in place) must carry If-None-Match, as under
        # staging runs/. Object Lock keeps the old version, but pip downloads the current one.
        rules.created_once("DenyFileWritesWithoutIfNoneMatch", table.NIGHTLY_PAGES, but=True),
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
            resources=objects,
            condition={
                "Null": {"s3:object-lock-mode": "false"},
                "StringNotEquals": {"s3:object-lock-mode": lock_mode},
            },
        ),
        # The roles the table lets lock a page.
        *bucket_setting_denies(
            nightly, who, [g.role for g in GRANTS if PAGE_LOCK_ACTION in g.actions]
        ),
    ]


def cache_denies(cache: s3.IBucket, who: Principals) -> list[DenyRule]:
    """Only the deps role (and the break-glass role) writes the cache."""
    return [
        _Rules(cache, Bucket.CACHE, who).zone(table.CACHE_ZONE),
        # No Object Lock here; the Denies keep the rules the same on every bucket.
        *bucket_setting_denies(cache, who),
    ]


def bucket_setting_denies(
    bucket: s3.IBucket, who: Principals, page_lockers: Sequence[Role] = ()
) -> list[DenyRule]:
    """Retention and bucket policy changes: object retention is the break-glass role's (and
    ``page_lockers`` may set an index page's, which a PutObject with lock headers does); the
    lock configuration and the bucket policy are also the deploy role's, which CloudFormation
    uses to apply a stack update (a new ``nightly_retention``, a changed policy). No one else
    may change the policy that holds these rules."""
    break_glass = who.break_glass
    retention = OBJECT_RETENTION_ACTIONS
    page_rules = []
    if page_lockers:
        pages = [bucket.arn_for_objects(str(page.pattern)) for page in table.NIGHTLY_PAGES]
        retention = [a for a in OBJECT_RETENTION_ACTIONS if a != PAGE_LOCK_ACTION]
        page_rules = [
            DenyRule(
                sid="DenyFileRetentionChanges",
                actions=[PAGE_LOCK_ACTION],
                not_resources=pages,
                condition=unless(break_glass),
            ),
            DenyRule(
                sid=f"DenyPageRetentionChangesExcept{table.sid_words(page_lockers)}",
                actions=[PAGE_LOCK_ACTION],
                resources=pages,
                condition=unless(who.arns([*page_lockers, Role.BREAK_GLASS])),
            ),
        ]
    return [
        DenyRule(
            sid="DenyRetentionChanges",
            actions=retention,
            resources=[bucket.arn_for_objects("*")],
            condition=unless(break_glass),
        ),
        *page_rules,
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
