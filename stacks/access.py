"""Who may touch which keys: GitHub OIDC roles, the promoter role and the bucket policies."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Aws, Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from stacks.nag import acknowledge_resource_wildcards
from wheelgate.layout import (
    HTML_PAGE,
    JSON_PAGE,
    MANIFESTS_PREFIX,
    RECORDS_PREFIX,
    RUNS_PREFIX,
    STATUS_PREFIX,
)

GITHUB_OIDC_URL = "https://token.actions.githubusercontent.com"
GITHUB_OIDC_HOST = "token.actions.githubusercontent.com"
GITHUB_AUDIENCE = "sts.amazonaws.com"

# Deny statements use the wildcards so that every object write or delete API, including ones
# added to S3 later (PutObjectRetention, PutObjectLegalHold, ...), is covered.
OBJECT_WRITE_ACTIONS = ["s3:PutObject*", "s3:DeleteObject*", "s3:RestoreObject"]
OBJECT_DELETE_ACTIONS = ["s3:DeleteObject", "s3:DeleteObjectVersion"]
RETENTION_ACTIONS = [
    "s3:BypassGovernanceRetention",
    "s3:PutObjectRetention",
    "s3:PutObjectLegalHold",
    "s3:PutBucketObjectLockConfiguration",
]

WILDCARD_REASON = (
    "S3 object ARNs can only name a key prefix (runs/, manifests/, records/, a whole bucket's "
    "objects) or the index page names (*/index.html, */index.json) with a wildcard; the "
    "actions are listed one by one and the bucket policies deny every other writer."
)


def _page_keys(bucket: s3.IBucket) -> list[str]:
    """ARNs of the index pages (``<index>/.../index.html|json``) of ``bucket``."""
    return [bucket.arn_for_objects(f"*/{HTML_PAGE}"), bucket.arn_for_objects(f"*/{JSON_PAGE}")]


def _unless(principal_arns: Sequence[str]) -> dict[str, object] | None:
    """Condition that exempts ``principal_arns``; None (applies to everyone) when empty."""
    if not principal_arns:
        return None
    return {"ArnNotEquals": {"aws:PrincipalArn": list(principal_arns)}}


class Access(Construct):
    """The GitHub OIDC provider, the four WheelGate roles and the bucket policies.

    Roles (trust scoped by the OIDC ``sub`` claim; ``aud`` must be ``sts.amazonaws.com``):

    - ``build_role`` (``build_subs``): uploads ``runs/*`` to staging and writes the staging
      index pages; reads staging and nightly index pages to merge them.
    - ``reporter_role`` (``build_subs``): writes ``manifests/*`` in staging only; reads
      ``runs/*`` to build a manifest and ``records/*`` to wait for the verdict.
    - ``dev_role`` (``dev_subs``): reads and writes the dev bucket only.
    - ``promoter_role`` (Lambda): reads staging, writes ``records/*`` and index pages in
      staging, writes nightly (never deletes). The stack grants CloudFront invalidation.

    The bucket policies repeat the same rules as explicit Deny statements keyed on
    ``aws:PrincipalArn``, so no other principal in the account (administrators included) can
    write either bucket, and only ``break_glass_role_arn`` may delete nightly objects or change
    their retention.

    Raises ``ValueError`` if ``build_subs`` or ``dev_subs`` is empty.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        staging: s3.IBucket,
        nightly: s3.IBucket,
        build_subs: Sequence[str],
        dev_subs: Sequence[str],
        dev_bucket_name: str,
        oidc_provider_arn: str | None,
        break_glass_role_arn: str | None,
    ) -> None:
        super().__init__(scope, construct_id)
        if not build_subs or not dev_subs:
            raise ValueError("Access needs at least one build and one dev OIDC sub pattern")

        self.oidc_provider: iam.IOidcProvider = (
            iam.OidcProviderNative.from_oidc_provider_arn(
                self, "GitHubOidcProvider", oidc_provider_arn
            )
            if oidc_provider_arn
            else iam.OidcProviderNative(
                self,
                "GitHubOidcProvider",
                url=GITHUB_OIDC_URL,
                client_ids=[GITHUB_AUDIENCE],
            )
        )

        self.build_role = self._github_role("BuildRole", build_subs, "WheelGate CI uploads")
        self.reporter_role = self._github_role(
            "ReporterRole", build_subs, "WheelGate test-result manifests"
        )
        self.dev_role = self._github_role("DevRole", dev_subs, "WheelGate dev-bucket uploads")
        self.promoter_role = iam.Role(
            self,
            "PromoterRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="WheelGate promoter Lambda",
        )

        self._grant_build(staging, nightly)
        self._grant_reporter(staging)
        self._grant_dev(dev_bucket_name)
        self._grant_promoter(staging, nightly)
        break_glass = [break_glass_role_arn] if break_glass_role_arn else []
        self._protect_staging(staging, break_glass)
        self._protect_nightly(nightly, break_glass)

    def _github_role(self, construct_id: str, subs: Sequence[str], purpose: str) -> iam.Role:
        return iam.Role(
            self,
            construct_id,
            assumed_by=iam.OpenIdConnectPrincipal(
                self.oidc_provider,
                conditions={
                    "StringEquals": {f"{GITHUB_OIDC_HOST}:aud": GITHUB_AUDIENCE},
                    "StringLike": {f"{GITHUB_OIDC_HOST}:sub": list(subs)},
                },
            ),
            description=f"{purpose} (GitHub Actions OIDC)",
            max_session_duration=Duration.hours(1),
        )

    def _policy(self, role: iam.Role, statements: list[iam.PolicyStatement]) -> iam.Policy:
        policy = iam.Policy(self, f"{role.node.id}Access", roles=[role], statements=statements)
        acknowledge_resource_wildcards(policy, statements, WILDCARD_REASON)
        return policy

    def _grant_build(self, staging: s3.IBucket, nightly: s3.IBucket) -> None:
        self.build_policy = self._policy(
            self.build_role,
            [
                iam.PolicyStatement(
                    sid="UploadStagedRuns",
                    # Multipart uploads of large wheels can be abandoned mid-way.
                    actions=["s3:PutObject", "s3:AbortMultipartUpload"],
                    resources=[staging.arn_for_objects(f"{RUNS_PREFIX}*")],
                ),
                iam.PolicyStatement(
                    sid="WriteStagingIndexPages",
                    actions=["s3:PutObject"],
                    resources=_page_keys(staging),
                ),
                iam.PolicyStatement(
                    # The page wildcard above also matches keys under the reserved prefixes.
                    sid="DenyReservedPrefixes",
                    effect=iam.Effect.DENY,
                    actions=["s3:PutObject"],
                    resources=[
                        staging.arn_for_objects(f"{prefix}*")
                        for prefix in (MANIFESTS_PREFIX, RECORDS_PREFIX, STATUS_PREFIX)
                    ],
                ),
                iam.PolicyStatement(
                    sid="ReadStaging",
                    actions=["s3:GetObject"],
                    resources=[staging.arn_for_objects("*")],
                ),
                iam.PolicyStatement(
                    sid="ReadNightlyIndexPages",
                    actions=["s3:GetObject"],
                    resources=_page_keys(nightly),
                ),
                iam.PolicyStatement(
                    # ListBucket makes a missing page a 404 instead of a 403.
                    sid="ListBuckets",
                    actions=["s3:ListBucket"],
                    resources=[staging.bucket_arn, nightly.bucket_arn],
                ),
            ],
        )

    def _grant_reporter(self, staging: s3.IBucket) -> None:
        self.reporter_policy = self._policy(
            self.reporter_role,
            [
                iam.PolicyStatement(
                    sid="WriteManifests",
                    actions=["s3:PutObject"],
                    resources=[staging.arn_for_objects(f"{MANIFESTS_PREFIX}*")],
                ),
                iam.PolicyStatement(
                    sid="ReadRunsAndRecords",
                    actions=["s3:GetObject"],
                    resources=[
                        staging.arn_for_objects(f"{RUNS_PREFIX}*"),
                        staging.arn_for_objects(f"{RECORDS_PREFIX}*"),
                    ],
                ),
                iam.PolicyStatement(
                    sid="ListStaging",
                    actions=["s3:ListBucket"],
                    resources=[staging.bucket_arn],
                ),
            ],
        )

    def _grant_dev(self, dev_bucket_name: str) -> None:
        dev_bucket_arn = f"arn:{Aws.PARTITION}:s3:::{dev_bucket_name}"
        self.dev_policy = self._policy(
            self.dev_role,
            [
                iam.PolicyStatement(
                    sid="UseDevBucket",
                    actions=[
                        "s3:PutObject",
                        "s3:GetObject",
                        "s3:DeleteObject",
                        "s3:AbortMultipartUpload",
                    ],
                    resources=[f"{dev_bucket_arn}/*"],
                ),
                iam.PolicyStatement(
                    sid="ListDevBucket", actions=["s3:ListBucket"], resources=[dev_bucket_arn]
                ),
            ],
        )

    def _grant_promoter(self, staging: s3.IBucket, nightly: s3.IBucket) -> None:
        self.promoter_policy = self._policy(
            self.promoter_role,
            [
                iam.PolicyStatement(
                    sid="ReadStaging",
                    actions=["s3:GetObject", "s3:GetObjectAttributes"],
                    resources=[staging.arn_for_objects("*")],
                ),
                iam.PolicyStatement(
                    sid="WriteRecordsAndStagingPages",
                    actions=["s3:PutObject"],
                    resources=[
                        staging.arn_for_objects(f"{RECORDS_PREFIX}*"),
                        *_page_keys(staging),
                    ],
                ),
                iam.PolicyStatement(
                    sid="ReadNightly",
                    actions=["s3:GetObject", "s3:GetObjectAttributes"],
                    resources=[nightly.arn_for_objects("*")],
                ),
                iam.PolicyStatement(
                    # Server-side copies of files over the multipart threshold are multipart.
                    sid="WriteNightly",
                    actions=["s3:PutObject", "s3:AbortMultipartUpload"],
                    resources=[nightly.arn_for_objects("*")],
                ),
                iam.PolicyStatement(
                    sid="ListBuckets",
                    actions=["s3:ListBucket"],
                    resources=[staging.bucket_arn, nightly.bucket_arn],
                ),
            ],
        )

    def _protect_staging(self, staging: s3.IBucket, break_glass: list[str]) -> None:
        build, reporter, promoter = (
            self.build_role.role_arn,
            self.reporter_role.role_arn,
            self.promoter_role.role_arn,
        )
        rules: list[tuple[str, list[str], list[str] | None, list[str] | None, list[str]]] = [
            # sid, actions, resources, not_resources, exempt principals
            (
                "DenyObjectWritesExceptWheelGateRoles",
                OBJECT_WRITE_ACTIONS,
                [staging.arn_for_objects("*")],
                None,
                [build, reporter, promoter],
            ),
            (
                "DenyRunWritesExceptBuild",
                ["s3:PutObject"],
                [staging.arn_for_objects(f"{RUNS_PREFIX}*")],
                None,
                [build],
            ),
            (
                "DenyManifestWritesExceptReporter",
                ["s3:PutObject"],
                [staging.arn_for_objects(f"{MANIFESTS_PREFIX}*")],
                None,
                [reporter],
            ),
            (
                "DenyRecordWritesExceptPromoter",
                ["s3:PutObject"],
                [staging.arn_for_objects(f"{RECORDS_PREFIX}*")],
                None,
                [promoter],
            ),
            (
                # Everything outside the reserved prefixes is an index page.
                "DenyIndexPageWritesExceptBuildAndPromoter",
                ["s3:PutObject"],
                None,
                [
                    staging.arn_for_objects(f"{prefix}*")
                    for prefix in (RUNS_PREFIX, MANIFESTS_PREFIX, RECORDS_PREFIX)
                ],
                [build, promoter],
            ),
            (
                # Lifecycle rules expire runs/; nothing else needs to delete.
                "DenyDeletes",
                OBJECT_DELETE_ACTIONS,
                [staging.arn_for_objects("*")],
                None,
                break_glass,
            ),
            (
                # Staging has no Object Lock; the Deny keeps the matrix uniform should it gain one.
                "DenyRetentionChanges",
                RETENTION_ACTIONS,
                [staging.bucket_arn, staging.arn_for_objects("*")],
                None,
                break_glass,
            ),
        ]
        self._add_denies(staging, rules)

    def _protect_nightly(self, nightly: s3.IBucket, break_glass: list[str]) -> None:
        promoter = self.promoter_role.role_arn
        objects = nightly.arn_for_objects("*")
        self._add_denies(
            nightly,
            [
                (
                    "DenyObjectWritesExceptPromoter",
                    OBJECT_WRITE_ACTIONS,
                    [objects],
                    None,
                    [promoter, *break_glass],
                ),
                (
                    # A delete on a versioned, locked bucket still hides the file behind a
                    # delete marker, so deletes need their own Deny.
                    "DenyDeletes",
                    OBJECT_DELETE_ACTIONS,
                    [objects],
                    None,
                    break_glass,
                ),
                (
                    "DenyRetentionChanges",
                    RETENTION_ACTIONS,
                    [nightly.bucket_arn, objects],
                    None,
                    break_glass,
                ),
            ],
        )

    @staticmethod
    def _add_denies(
        bucket: s3.IBucket,
        rules: list[tuple[str, list[str], list[str] | None, list[str] | None, list[str]]],
    ) -> None:
        for sid, actions, resources, not_resources, exempt in rules:
            bucket.add_to_resource_policy(
                iam.PolicyStatement(
                    sid=sid,
                    effect=iam.Effect.DENY,
                    principals=[iam.AnyPrincipal()],
                    actions=actions,
                    resources=resources,
                    not_resources=not_resources,
                    conditions=_unless(exempt),
                )
            )
