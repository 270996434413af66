"""Who may touch which keys: GitHub OIDC roles, the promoter role and the bucket policies."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Aws, Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from wheelgate.core.import_sources import ImportSource
from wheelgate.core.layout import (
    HTML_PAGE,
    IMPORT_RUN_PREFIX,
    JSON_PAGE,
    MANIFEST_SUFFIX,
    MANIFESTS_PREFIX,
    METADATA_SUFFIX,
    MIRROR_RUN_PREFIX,
    OVERRIDE_RUN_PREFIX,
    RECORDS_PREFIX,
    RESERVED_TOP_LEVEL,
    RUNS_PREFIX,
    STATUS_PREFIX,
    VERDICT_KEYS_KEY,
)

from .nag import acknowledge_resource_wildcards

GITHUB_OIDC_URL = "https://token.actions.githubusercontent.com"
GITHUB_OIDC_HOST = "token.actions.githubusercontent.com"
GITHUB_AUDIENCE = "sts.amazonaws.com"

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

WILDCARD_REASON = (
    "S3 object ARNs can only name a key prefix (runs/, manifests/, records/, runs/deps-, "
    "runs/import-, an import source's prefix, a cache prefix, a whole bucket's objects) or the "
    "index page names (*/index.html, "
    "*/index.json) with a wildcard; the actions are listed one by one and the bucket policies "
    "deny every other writer."
)

#: Staging keys of dependency-mirror runs (``wheelgate deps sync``) and override requests.
MIRROR_RUN_KEYS = f"{RUNS_PREFIX}{MIRROR_RUN_PREFIX}*"
MIRROR_MANIFEST_KEYS = f"{MANIFESTS_PREFIX}{MIRROR_RUN_PREFIX}*{MANIFEST_SUFFIX}"
#: Every ``manifests/deps-*`` key, whatever its suffix: the other roles may write none of them.
ANY_MIRROR_MANIFEST_KEYS = f"{MANIFESTS_PREFIX}{MIRROR_RUN_PREFIX}*"
MIRROR_RECORD_KEYS = f"{RECORDS_PREFIX}{MIRROR_RUN_PREFIX}*"
OVERRIDE_KEYS = f"{MANIFESTS_PREFIX}{OVERRIDE_RUN_PREFIX}*"
#: Import requests (the break-glass role's alone) and the files an import gathers into staging
#: (the promoter's alone).
IMPORT_REQUEST_KEYS = f"{MANIFESTS_PREFIX}{IMPORT_RUN_PREFIX}*"
IMPORT_RUN_KEYS = f"{RUNS_PREFIX}{IMPORT_RUN_PREFIX}*"

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


def _page_keys(bucket: s3.IBucket, under: str = "") -> list[str]:
    """ARNs of the index pages (``<index>/.../index.html|json``) of ``bucket``, or of those
    under ``under`` (a prefix ending in ``/``)."""
    return [bucket.arn_for_objects(f"{under}*/{page}") for page in (HTML_PAGE, JSON_PAGE)]


def _index_page_keys(bucket: s3.IBucket, index: str) -> list[str]:
    """ARNs of the root and project pages of index directory ``index`` in ``bucket``: the
    root page's ``<index>/index.html`` has no ``/`` for the ``*`` of :func:`_page_keys`."""
    return [
        *(bucket.arn_for_objects(f"{index}/{page}") for page in (HTML_PAGE, JSON_PAGE)),
        *_page_keys(bucket, f"{index}/"),
    ]


def _unless(principal_arns: Sequence[str]) -> dict[str, object] | None:
    """Condition that exempts ``principal_arns``; None (applies to everyone) when empty."""
    if not principal_arns:
        return None
    return {"ArnNotEquals": {"aws:PrincipalArn": list(principal_arns)}}


def _only(principal_arn: str) -> dict[str, object]:
    """Condition that applies a statement to ``principal_arn`` alone."""
    return {"ArnEquals": {"aws:PrincipalArn": [principal_arn]}}


#: (sid, actions, resources, not_resources, condition) of one bucket policy Deny.
DenyRule = tuple[str, list[str], list[str] | None, list[str] | None, dict[str, object] | None]


class Access(Construct):
    """The GitHub OIDC provider, the five WheelGate roles and the bucket policies.

    Roles (trust scoped by the OIDC ``sub`` claim; ``aud`` must be ``sts.amazonaws.com``):

    - ``build_role`` (``build_subs``): uploads ``runs/*`` except ``runs/deps-*`` to staging
      (each run's files and its own index pages); reads staging, and the nightly index pages
      to merge them into the run's pages.
    - ``reporter_role`` (``reporter_subs``: jobs of the reporter's reusable workflow, never a
      build job): writes ``manifests/*`` except ``manifests/deps-*`` in
      staging only; reads ``runs/*`` to build a manifest and ``records/*`` to wait for the
      verdict.
    - ``dev_role`` (``dev_subs``): reads and writes the dev bucket only.
    - ``deps_role`` (``deps_subs``): writes the ``cache_prefixes`` of the cache bucket, stages
      dependency-mirror runs (``runs/deps-*``, ``manifests/deps-*.json``) and reads their
      records and the index pages.
    - ``promoter_role`` (Lambda): reads staging, writes ``records/*``, ``status/*`` and the
      files imports gather (``runs/import-*``) in staging, writes nightly under ``<dir>/*`` of
      each ``index_dirs`` entry (never deletes), and reads the ``import_sources`` (each
      bucket's listing under its prefix, and its objects there) and nothing else outside its
      buckets. The stack grants CloudFront invalidation.

    The bucket policies repeat the same rules as explicit Deny statements keyed on
    ``aws:PrincipalArn``, so no other principal in the account (administrators included) can
    write either bucket directly, and only ``break_glass_role_arn`` may delete nightly objects or
    change their retention. Every nightly key but the index pages is write-once (created with
    ``If-None-Match``, the promoter and break-glass role included). Only ``deploy_role_arn``
    (CloudFormation's execution role) may change a bucket policy, and it and the break-glass
    role the Object Lock configuration, so stack updates still apply (docs/security.md lists
    what an administrator can still do). In staging nobody writes outside ``runs/``,
    ``manifests/``, ``records/`` and ``status/``, only the deps role writes ``runs/deps-*`` and
    ``manifests/deps-*``, and every object created under ``runs/`` must be sent with
    ``If-None-Match: *`` (write-once).
    The break-glass role may only write override and import requests
    (``manifests/override-*``, ``manifests/import-*``), which nobody else may write, and read
    ``records/*``; only the promoter writes ``runs/import-*``. The cache bucket's policy (when
    ``protect_cache``: the stack created it) lets only the deps role write it.

    Raises ``ValueError`` if ``build_subs``, ``reporter_subs``, ``dev_subs`` or ``deps_subs`` is
    empty.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        staging: s3.IBucket,
        nightly: s3.IBucket,
        cache: s3.IBucket,
        cache_prefixes: Sequence[str],
        protect_cache: bool,
        build_subs: Sequence[str],
        reporter_subs: Sequence[str],
        dev_subs: Sequence[str],
        deps_subs: Sequence[str],
        dev_bucket_name: str,
        oidc_provider_arn: str | None,
        break_glass_role_arn: str | None,
        deploy_role_arn: str,
        index_dirs: Sequence[str],
        nightly_retention_mode: str,
        nightly_retention_days: int,
        import_sources: Sequence[ImportSource] = (),
    ) -> None:
        super().__init__(scope, construct_id)
        if not build_subs or not reporter_subs or not dev_subs or not deps_subs:
            raise ValueError("Access needs build, reporter, dev and deps OIDC sub patterns")

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
            "ReporterRole", reporter_subs, "WheelGate test-result manifests"
        )
        self.dev_role = self._github_role("DevRole", dev_subs, "WheelGate dev-bucket uploads")
        self.deps_role = self._github_role(
            "DepsRole", deps_subs, "WheelGate dependency cache and mirror runs"
        )
        self.promoter_role = iam.Role(
            self,
            "PromoterRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="WheelGate promoter Lambda",
        )

        self._grant_build(staging, nightly)
        self._grant_reporter(staging, nightly)
        self._grant_dev(dev_bucket_name)
        self._grant_deps(staging, nightly, cache, cache_prefixes)
        self._buckets = (staging, nightly)
        self._grant_promoter(staging, nightly, index_dirs)
        self._grant_import_sources(staging, import_sources)
        break_glass = [break_glass_role_arn] if break_glass_role_arn else []
        self._deploy_role_arn = deploy_role_arn
        self._protect_staging(staging, break_glass)
        self._protect_nightly(nightly, break_glass, nightly_retention_mode, nightly_retention_days)
        if protect_cache:
            self._protect_cache(cache, break_glass)

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
        return self._policy_named(f"{role.node.id}Access", role, statements)

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
                    # A run's pages are written with the tag that selects their lifecycle rule
                    # (storage.py ExpireRunPages); PutObject with tags needs this too.
                    sid="TagRunPages",
                    actions=["s3:PutObjectTagging"],
                    resources=_page_keys(staging, RUNS_PREFIX),
                ),
                iam.PolicyStatement(
                    # Mirror runs are the deps role's alone (bucket: DenyMirrorWritesExceptDeps).
                    sid="DenyMirrorRuns",
                    effect=iam.Effect.DENY,
                    actions=["s3:PutObject", "s3:AbortMultipartUpload", "s3:PutObjectTagging"],
                    resources=[staging.arn_for_objects(MIRROR_RUN_KEYS)],
                ),
                iam.PolicyStatement(
                    # An import's gathered files are the promoter's alone (bucket:
                    # DenyImportRunWritesExceptPromoter).
                    sid="DenyImportRuns",
                    effect=iam.Effect.DENY,
                    actions=["s3:PutObject", "s3:AbortMultipartUpload", "s3:PutObjectTagging"],
                    resources=[staging.arn_for_objects(IMPORT_RUN_KEYS)],
                ),
                iam.PolicyStatement(
                    sid="ReadStaging",
                    actions=["s3:GetObject"],
                    resources=[staging.arn_for_objects("*")],
                ),
                iam.PolicyStatement(
                    # The run's index borrows nightly's pages of its dependency closure, which
                    # it walks through the PEP 658 metadata files (never a wheel).
                    sid="ReadNightlyIndexPages",
                    actions=["s3:GetObject"],
                    resources=[
                        *_page_keys(nightly),
                        nightly.arn_for_objects(f"*{METADATA_SUFFIX}"),
                    ],
                ),
                iam.PolicyStatement(
                    # ListBucket makes a missing page a 404 instead of a 403.
                    sid="ListBuckets",
                    actions=["s3:ListBucket"],
                    resources=[staging.bucket_arn, nightly.bucket_arn],
                ),
            ],
        )

    def _grant_reporter(self, staging: s3.IBucket, nightly: s3.IBucket) -> None:
        self.reporter_policy = self._policy(
            self.reporter_role,
            [
                iam.PolicyStatement(
                    sid="WriteManifests",
                    actions=["s3:PutObject"],
                    resources=[staging.arn_for_objects(f"{MANIFESTS_PREFIX}*")],
                ),
                iam.PolicyStatement(
                    # A mirror manifest promotes third-party wheels: the deps role's alone.
                    sid="DenyMirrorManifests",
                    effect=iam.Effect.DENY,
                    actions=["s3:PutObject"],
                    resources=[staging.arn_for_objects(ANY_MIRROR_MANIFEST_KEYS)],
                ),
                iam.PolicyStatement(
                    # An import request releases untested files: the break-glass role's alone
                    # (bucket: DenyImportWritesExceptBreakGlass).
                    sid="DenyImportRequests",
                    effect=iam.Effect.DENY,
                    actions=["s3:PutObject"],
                    resources=[staging.arn_for_objects(IMPORT_REQUEST_KEYS)],
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
                    # report holds each test's evidence to the bytes the run's index offers:
                    # nightly's pages and metadata of the closure, and the nightly wheels an
                    # environment is matched with (all of it public through the CDN anyway).
                    sid="ReadNightly",
                    actions=["s3:GetObject"],
                    resources=[nightly.arn_for_objects("*")],
                ),
                iam.PolicyStatement(
                    # ListBucket makes a missing page a 404 instead of a 403.
                    sid="ListBuckets",
                    actions=["s3:ListBucket"],
                    resources=[staging.bucket_arn, nightly.bucket_arn],
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

    def _grant_deps(
        self,
        staging: s3.IBucket,
        nightly: s3.IBucket,
        cache: s3.IBucket,
        cache_prefixes: Sequence[str],
    ) -> None:
        cache_keys = [cache.arn_for_objects(f"{prefix}*") for prefix in cache_prefixes]
        self.deps_policy = self._policy(
            self.deps_role,
            [
                iam.PolicyStatement(
                    # Files over 5 GiB are multipart uploads, which s3:PutObject also covers.
                    sid="WriteCache",
                    actions=["s3:PutObject"],
                    resources=cache_keys,
                ),
                iam.PolicyStatement(
                    sid="ReadCache", actions=["s3:GetObject"], resources=cache_keys
                ),
                iam.PolicyStatement(
                    sid="StageMirrorRuns",
                    actions=["s3:PutObject"],
                    resources=[
                        staging.arn_for_objects(MIRROR_RUN_KEYS),
                        staging.arn_for_objects(MIRROR_MANIFEST_KEYS),
                    ],
                ),
                iam.PolicyStatement(
                    sid="ReadMirrorRunsAndRecords",
                    actions=["s3:GetObject"],
                    resources=[
                        staging.arn_for_objects(MIRROR_RUN_KEYS),
                        staging.arn_for_objects(MIRROR_RECORD_KEYS),
                    ],
                ),
                iam.PolicyStatement(
                    sid="ReadIndexPages",
                    actions=["s3:GetObject"],
                    resources=[
                        staging.arn_for_objects(f"*/{JSON_PAGE}"),
                        nightly.arn_for_objects(f"*/{JSON_PAGE}"),
                    ],
                ),
                iam.PolicyStatement(
                    # Without ListBucket a missing key (a file not cached yet, a record not
                    # written yet, a page of a new project) is a 403 instead of a 404. S3 makes
                    # that check without an s3:prefix, so a prefix condition would defeat it.
                    sid="ListBuckets",
                    actions=["s3:ListBucket"],
                    resources=[cache.bucket_arn, staging.bucket_arn, nightly.bucket_arn],
                ),
            ],
        )

    def _grant_promoter(
        self, staging: s3.IBucket, nightly: s3.IBucket, index_dirs: Sequence[str]
    ) -> None:
        self.promoter_policy = self._policy(
            self.promoter_role,
            [
                iam.PolicyStatement(
                    sid="ReadStaging",
                    actions=["s3:GetObject", "s3:GetObjectAttributes"],
                    resources=[staging.arn_for_objects("*")],
                ),
                iam.PolicyStatement(
                    sid="WriteRecordsAndStatus",
                    actions=["s3:PutObject"],
                    resources=[
                        staging.arn_for_objects(f"{RECORDS_PREFIX}*"),
                        staging.arn_for_objects(f"{STATUS_PREFIX}*"),
                    ],
                ),
                iam.PolicyStatement(
                    # An import's files, copied server-side from its source (multipart for
                    # files over 5 GiB, which can be abandoned mid-way).
                    sid="GatherImports",
                    actions=["s3:PutObject", "s3:AbortMultipartUpload"],
                    resources=[staging.arn_for_objects(IMPORT_RUN_KEYS)],
                ),
                iam.PolicyStatement(
                    sid="ReadNightly",
                    actions=["s3:GetObject", "s3:GetObjectAttributes"],
                    resources=[nightly.arn_for_objects("*")],
                ),
                iam.PolicyStatement(
                    # Server-side copies of files over the multipart threshold are multipart.
                    # Only under the configured index directories (index_dirs), where it
                    # publishes; the promoter refuses any other directory too.
                    sid="WriteNightly",
                    actions=["s3:PutObject", "s3:AbortMultipartUpload"],
                    resources=[nightly.arn_for_objects(f"{index}/*") for index in index_dirs],
                ),
                iam.PolicyStatement(
                    # The public keys of verdicts (docs/verdicts.md): a fixed key outside every
                    # index directory, named like a page, so it may be updated in place (If-Match)
                    # when a rotation adds a key.
                    sid="WriteVerdictKeys",
                    actions=["s3:PutObject"],
                    resources=[nightly.arn_for_objects(VERDICT_KEYS_KEY)],
                ),
                iam.PolicyStatement(
                    # A PutObject that sets its own Object Lock needs this too: the index pages
                    # are written with a lock shorter than the files', so that replaced page
                    # versions can expire. Pages only; the bucket policy denies a file a
                    # shorter lock (DenyShortFileLocks) whatever the identity policy says.
                    sid="LockNightlyPages",
                    actions=["s3:PutObjectRetention"],
                    resources=[
                        arn for index in index_dirs for arn in _index_page_keys(nightly, index)
                    ],
                ),
                iam.PolicyStatement(
                    sid="ListBuckets",
                    actions=["s3:ListBucket"],
                    resources=[staging.bucket_arn, nightly.bucket_arn],
                ),
            ],
        )

    def _grant_import_sources(self, staging: s3.IBucket, sources: Sequence[ImportSource]) -> None:
        """Let the promoter read each import source (``import_sources``): list its bucket under
        its prefix, read its objects there (the files, and the index pages beside them), and
        nothing else of that bucket. A bucket in another account must also allow the promoter
        role in its own policy."""
        if not sources:
            return
        listing = []
        for n, source in enumerate(sources):
            bucket_arn = f"arn:{Aws.PARTITION}:s3:::{source.bucket}"
            listing.append(
                iam.PolicyStatement(
                    sid=f"ListImportSource{n}",
                    actions=["s3:ListBucket"],
                    resources=[bucket_arn],
                    # The import lists its prefix alone (Prefix=<prefix>); a whole-bucket
                    # entry has no prefix to hold it to.
                    conditions=(
                        {"StringLike": {"s3:prefix": [f"{source.prefix}*"]}}
                        if source.prefix
                        else None
                    ),
                )
            )
        statements = [
            iam.PolicyStatement(
                sid="ReadImportSources",
                actions=["s3:GetObject"],
                resources=[
                    f"arn:{Aws.PARTITION}:s3:::{source.bucket}/{source.prefix}*"
                    for source in sources
                ],
            ),
            *listing,
        ]
        self.import_sources_policy = self._policy_named(
            "PromoterImportSources", self.promoter_role, statements
        )

    def _policy_named(
        self, construct_id: str, role: iam.Role, statements: list[iam.PolicyStatement]
    ) -> iam.Policy:
        policy = iam.Policy(self, construct_id, roles=[role], statements=statements)
        acknowledge_resource_wildcards(policy, statements, WILDCARD_REASON)
        return policy

    def confine_promoter_to(
        self, function_arn: str, *, signing_key_arns: Sequence[str] = ()
    ) -> None:
        """Let the promoter role write staging and nightly, and sign with ``signing_key_arns``,
        only from ``function_arn``'s code.

        Lambda puts the calling function's ARN in its credentials' context
        (``lambda:SourceFunctionArn``, identity policies only); a function created with the
        promoter role (``iam:PassRole`` + ``lambda:CreateFunction``) is refused every write and
        every signature. The promoter function's own code (``lambda:UpdateFunctionCode``) is
        not, which docs/security.md says.
        """
        # Absent (credentials used outside a function) counts as not equal: denied.
        elsewhere = {"ArnNotEquals": {"lambda:SourceFunctionArn": function_arn}}
        self.promoter_policy.add_statements(
            iam.PolicyStatement(
                sid="DenyWritesFromOtherFunctions",
                effect=iam.Effect.DENY,
                actions=OBJECT_WRITE_ACTIONS,
                resources=[bucket.arn_for_objects("*") for bucket in self._buckets],
                conditions=elsewhere,
            )
        )
        if signing_key_arns:
            self.promoter_policy.add_statements(
                iam.PolicyStatement(
                    sid="DenySigningFromOtherFunctions",
                    effect=iam.Effect.DENY,
                    actions=["kms:Sign"],
                    resources=list(signing_key_arns),
                    conditions=elsewhere,
                )
            )

    def _protect_staging(self, staging: s3.IBucket, break_glass: list[str]) -> None:
        build, reporter, promoter, deps = (
            self.build_role.role_arn,
            self.reporter_role.role_arn,
            self.promoter_role.role_arn,
            self.deps_role.role_arn,
        )
        overrides = staging.arn_for_objects(OVERRIDE_KEYS)
        imports = staging.arn_for_objects(IMPORT_REQUEST_KEYS)
        rules: list[DenyRule] = [
            # sid, actions, resources, not_resources, condition
            (
                "DenyObjectWritesExceptWheelGateRoles",
                OBJECT_WRITE_ACTIONS,
                None,
                [overrides, imports],
                _unless([build, reporter, promoter, deps]),
            ),
            (
                # Override requests skip the test rules: only the break-glass role writes them,
                # and it writes nothing else (it is not exempt from the Deny above).
                "DenyOverrideWritesExceptBreakGlass",
                OBJECT_WRITE_ACTIONS,
                [overrides],
                None,
                _unless(break_glass),
            ),
            (
                # Import requests release files no test installed: the break-glass role's too.
                "DenyImportWritesExceptBreakGlass",
                OBJECT_WRITE_ACTIONS,
                [imports],
                None,
                _unless(break_glass),
            ),
            (
                # The promoter writes runs/ for imports alone (its grant: runs/import-*).
                "DenyRunWritesExceptBuildDepsAndPromoter",
                ["s3:PutObject"],
                [staging.arn_for_objects(f"{RUNS_PREFIX}*")],
                None,
                _unless([build, deps, promoter]),
            ),
            (
                # What an import gathered is what it verifies and releases: no build run may
                # stage there, so only the promoter's copies (with their sources' hashes) are.
                "DenyImportRunWritesExceptPromoter",
                ["s3:PutObject"],
                [staging.arn_for_objects(IMPORT_RUN_KEYS)],
                None,
                _unless([promoter]),
            ),
            (
                # Write-once: a staged file and its .metadata are created once, never replaced
                # (see UNCONDITIONAL_CREATION). Everyone, build and deps too. A run's own index
                # pages are the exception: the build jobs of one run update them in place with
                # conditional writes. Rewriting one can only point a test at other bytes, which
                # the manifest's evidence of what each test installed then refuses. An S3 ARN
                # cannot say "runs/ but not its pages", so the Deny names what it leaves out;
                # keys outside the four prefixes are refused by DenyWritesOutsideStagingPrefixes.
                "DenyRunWritesWithoutIfNoneMatch",
                ["s3:PutObject"],
                None,
                [
                    *(
                        staging.arn_for_objects(f"{RUNS_PREFIX}*/{page}")
                        for page in (HTML_PAGE, JSON_PAGE)
                    ),
                    *(
                        staging.arn_for_objects(f"{prefix}*")
                        for prefix in (MANIFESTS_PREFIX, RECORDS_PREFIX, STATUS_PREFIX)
                    ),
                ],
                UNCONDITIONAL_CREATION,
            ),
            (
                "DenyManifestWritesExceptReporterDepsAndBreakGlass",
                ["s3:PutObject"],
                [staging.arn_for_objects(f"{MANIFESTS_PREFIX}*")],
                None,
                _unless([reporter, deps, *break_glass]),
            ),
            (
                # Mirror runs promote third-party wheels on the deps role's word alone: no
                # build run may stage under deps-*, and no reporter may write their manifest.
                "DenyMirrorWritesExceptDeps",
                ["s3:PutObject"],
                [
                    staging.arn_for_objects(MIRROR_RUN_KEYS),
                    staging.arn_for_objects(ANY_MIRROR_MANIFEST_KEYS),
                ],
                None,
                _unless([deps]),
            ),
            (
                # The deps role's exemptions above are for its mirror runs' keys only.
                "DenyDepsWritesOutsideMirrorRuns",
                OBJECT_WRITE_ACTIONS,
                None,
                [
                    staging.arn_for_objects(MIRROR_RUN_KEYS),
                    staging.arn_for_objects(MIRROR_MANIFEST_KEYS),
                ],
                _only(deps),
            ),
            (
                "DenyRecordWritesExceptPromoter",
                ["s3:PutObject"],
                [staging.arn_for_objects(f"{RECORDS_PREFIX}*")],
                None,
                _unless([promoter]),
            ),
            (
                "DenyStatusWritesExceptPromoter",
                ["s3:PutObject"],
                [staging.arn_for_objects(f"{STATUS_PREFIX}*")],
                None,
                _unless([promoter]),
            ),
            (
                # Staging has no shared index pages (each run's are under runs/<run>/): every
                # key is under one of the reserved prefixes, the ones WheelGate writes.
                "DenyWritesOutsideStagingPrefixes",
                ["s3:PutObject"],
                None,
                [staging.arn_for_objects(f"{name}/*") for name in sorted(RESERVED_TOP_LEVEL)],
                None,
            ),
            (
                # Lifecycle rules expire runs/; nothing else needs to delete.
                "DenyDeletes",
                OBJECT_DELETE_ACTIONS,
                [staging.arn_for_objects("*")],
                None,
                _unless(break_glass),
            ),
            # Staging has no Object Lock; the Denies keep the matrix uniform should it gain one.
            *self._bucket_setting_denies(staging, break_glass),
        ]
        self._add_denies(staging, rules)
        for arn in break_glass:
            # The break-glass role is created outside the stack; these grants do not depend on
            # its own policy. It writes a request, then waits for the promoter's record.
            principal = iam.ArnPrincipal(arn)
            staging.add_to_resource_policy(
                iam.PolicyStatement(
                    sid="AllowBreakGlassOverrides",
                    principals=[principal],
                    actions=["s3:PutObject"],
                    resources=[overrides],
                )
            )
            staging.add_to_resource_policy(
                iam.PolicyStatement(
                    sid="AllowBreakGlassImports",
                    principals=[principal],
                    actions=["s3:PutObject"],
                    resources=[imports],
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

    def _protect_nightly(
        self, nightly: s3.IBucket, break_glass: list[str], lock_mode: str, retention_days: int
    ) -> None:
        promoter = self.promoter_role.role_arn
        objects = nightly.arn_for_objects("*")
        pages = _page_keys(nightly)
        self._add_denies(
            nightly,
            [
                (
                    "DenyObjectWritesExceptPromoter",
                    OBJECT_WRITE_ACTIONS,
                    [objects],
                    None,
                    _unless([promoter, *break_glass]),
                ),
                (
                    # A delete on a versioned, locked bucket still hides the file behind a
                    # delete marker, so deletes need their own Deny.
                    "DenyDeletes",
                    OBJECT_DELETE_ACTIONS,
                    [objects],
                    None,
                    _unless(break_glass),
                ),
                (
                    # A released file is never replaced: every creation of a file key (all but
                    # the index pages, which the promoter updates in place) must carry
                    # If-None-Match, as under staging runs/. Object Lock keeps the old version,
                    # but pip downloads the current one.
                    "DenyFileWritesWithoutIfNoneMatch",
                    ["s3:PutObject"],
                    None,
                    pages,
                    UNCONDITIONAL_CREATION,
                ),
                (
                    # The promoter may lock index pages for less than the files (so replaced
                    # page versions expire), hence s3:PutObjectRetention; never a file, whose
                    # lock is the bucket default. A request without lock headers (a copy that
                    # takes the default) has no such key, and NumericLessThan is then false.
                    # Everyone, the break-glass role too: it removes a file with a governance
                    # bypass delete, never by shortening its lock.
                    "DenyShortFileLocks",
                    ["s3:PutObject", "s3:PutObjectRetention"],
                    None,
                    pages,
                    {
                        "NumericLessThan": {
                            "s3:object-lock-remaining-retention-days": str(retention_days)
                        }
                    },
                ),
                (
                    # A lock in the other mode would weaken a COMPLIANCE bucket (a GOVERNANCE
                    # lock can be bypassed) or harden a GOVERNANCE one past break-glass's
                    # reach. Only a request that names a mode is concerned.
                    "DenyOtherLockModes",
                    ["s3:PutObject", "s3:PutObjectRetention"],
                    [objects],
                    None,
                    {
                        "Null": {"s3:object-lock-mode": "false"},
                        "StringNotEquals": {"s3:object-lock-mode": lock_mode},
                    },
                ),
                *self._bucket_setting_denies(nightly, break_glass, page_lockers=[promoter]),
            ],
        )

    def _protect_cache(self, cache: s3.IBucket, break_glass: list[str]) -> None:
        self._add_denies(
            cache,
            [
                (
                    # Builds download from the cache; only deps sync fills it, and never
                    # overwrites or deletes (versioning keeps any overwrite recoverable).
                    "DenyObjectWritesExceptDeps",
                    OBJECT_WRITE_ACTIONS,
                    [cache.arn_for_objects("*")],
                    None,
                    _unless([self.deps_role.role_arn, *break_glass]),
                ),
                # No Object Lock here; the Denies keep the rules the same on every bucket.
                *self._bucket_setting_denies(cache, break_glass),
            ],
        )

    def _bucket_setting_denies(
        self, bucket: s3.IBucket, break_glass: list[str], page_lockers: Sequence[str] = ()
    ) -> list[DenyRule]:
        """Retention and bucket policy changes: object retention is the break-glass role's
        (and ``page_lockers`` may set an index page's, which a PutObject with lock headers
        does); the lock configuration and the bucket policy are also the deploy role's, which
        CloudFormation uses to apply a stack update (a new ``nightly_retention``, a changed
        policy). No one else may change the policy that holds these rules."""
        retention: list[DenyRule] = [
            (
                "DenyRetentionChanges",
                OBJECT_RETENTION_ACTIONS,
                [bucket.arn_for_objects("*")],
                None,
                _unless(break_glass),
            )
        ]
        if page_lockers:
            pages = _page_keys(bucket)
            others = [a for a in OBJECT_RETENTION_ACTIONS if a != PAGE_LOCK_ACTION]
            retention = [
                (
                    "DenyRetentionChanges",
                    others,
                    [bucket.arn_for_objects("*")],
                    None,
                    _unless(break_glass),
                ),
                ("DenyFileRetentionChanges", [PAGE_LOCK_ACTION], None, pages, _unless(break_glass)),
                (
                    "DenyPageRetentionChangesExceptPromoter",
                    [PAGE_LOCK_ACTION],
                    pages,
                    None,
                    _unless([*page_lockers, *break_glass]),
                ),
            ]
        return [
            *retention,
            (
                "DenyLockConfigurationChangesExceptDeploys",
                LOCK_CONFIGURATION_ACTIONS,
                [bucket.bucket_arn],
                None,
                _unless([self._deploy_role_arn, *break_glass]),
            ),
            (
                # The account root user may still change the policy (S3 never lets a bucket
                # policy lock it out); CloudTrail records it.
                "DenyPolicyChangesExceptDeploys",
                POLICY_ACTIONS,
                [bucket.bucket_arn],
                None,
                _unless([self._deploy_role_arn]),
            ),
        ]

    @staticmethod
    def _add_denies(bucket: s3.IBucket, rules: list[DenyRule]) -> None:
        for sid, actions, resources, not_resources, condition in rules:
            bucket.add_to_resource_policy(
                iam.PolicyStatement(
                    sid=sid,
                    effect=iam.Effect.DENY,
                    principals=[iam.AnyPrincipal()],
                    actions=actions,
                    resources=resources,
                    not_resources=not_resources,
                    conditions=condition,
                )
            )
