"""Who may touch which keys: the GitHub OIDC provider, the WheelGate roles with their policies
(:mod:`.role_policies`), and the bucket policies that deny everyone else
(:mod:`.bucket_policies`)."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from wheelgate.core.import_sources import ImportSource

from .bucket_policies import (
    OBJECT_WRITE_ACTIONS,
    Principals,
    protect_cache_bucket,
    protect_nightly_bucket,
    protect_staging_bucket,
)
from .nag import acknowledge_resource_wildcards
from .role_policies import (
    build_statements,
    deps_statements,
    dev_statements,
    import_source_statements,
    promoter_statements,
    reporter_statements,
)

GITHUB_OIDC_URL = "https://token.actions.githubusercontent.com"
GITHUB_OIDC_HOST = "token.actions.githubusercontent.com"
GITHUB_AUDIENCE = "sts.amazonaws.com"

WILDCARD_REASON = (
    "S3 object ARNs can only name a key prefix (runs/, manifests/, records/, runs/deps-, "
    "runs/import-, history/_entries/, history/<index dir>/, an import source's prefix, a "
    "cache prefix, a whole bucket's objects) or the index page names (*/index.html, "
    "*/index.json) with a wildcard; the actions are listed one by one and the bucket policies "
    "deny every other writer."
)


class Access(Construct):
    """The GitHub OIDC provider, the five WheelGate roles and the bucket policies.

    Roles (trust scoped by the OIDC ``sub`` claim; ``aud`` must be ``sts.amazonaws.com``):

    - ``build_role`` (``build_subs``): uploads ``runs/*`` except ``runs/deps-*`` to staging
      (each run's files and its own index pages) and creates each stage call's run history
      entry (``history/_entries/*``, with ``If-None-Match`` only); reads staging, and the
      nightly index pages to merge them into the run's pages.
    - ``reporter_role`` (``reporter_subs``: jobs of the reporter's reusable workflow, never a
      build job): writes ``manifests/*`` except ``manifests/deps-*`` in
      staging only; reads ``runs/*`` to build a manifest and ``records/*`` to wait for the
      verdict.
    - ``dev_role`` (``dev_subs``): reads and writes the dev bucket only.
    - ``deps_role`` (``deps_subs``): writes the ``cache_prefixes`` of the cache bucket, stages
      dependency-mirror runs (``runs/deps-*``, ``manifests/deps-*.json``) and reads their
      records and the index pages.
    - ``promoter_role`` (Lambda): reads staging, writes ``records/*``, ``status/*``, the
      files imports gather (``runs/import-*``) and the run history of each ``index_dirs``
      entry (``history/<dir>/*``: shards, head and page) in staging, writes nightly under
      ``<dir>/*`` of each ``index_dirs`` entry (never deletes), and reads the
      ``import_sources`` (each bucket's listing under its prefix, and its objects there) and
      nothing else outside its buckets. The stack grants CloudFront invalidation.

    The bucket policies (:mod:`.bucket_policies`) repeat the same rules as explicit Deny
    statements keyed on ``aws:PrincipalArn``, so no other principal in the account
    (administrators included) can write either bucket directly, and only
    ``break_glass_role_arn`` may delete nightly objects or change their retention. Every nightly
    key but the index pages is write-once (created with ``If-None-Match``, the promoter and
    break-glass role included). Only ``deploy_role_arn`` (CloudFormation's execution role) may
    change a bucket policy, and it and the break-glass role the Object Lock configuration, so
    stack updates still apply (docs/security.md lists what an administrator can still do). In
    staging nobody writes outside ``runs/``, ``manifests/``, ``records/``, ``status/`` and
    ``history/``, only the deps role writes ``runs/deps-*`` and ``manifests/deps-*``, every
    object created under ``runs/`` must be sent with ``If-None-Match: *`` (write-once), and so
    must every history entry, which only the build role writes; the rest of ``history/`` is
    the promoter's alone.
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

        self.build_policy = self._policy(self.build_role, build_statements(staging, nightly))
        self.reporter_policy = self._policy(
            self.reporter_role, reporter_statements(staging, nightly)
        )
        self.dev_policy = self._policy(self.dev_role, dev_statements(dev_bucket_name))
        self.deps_policy = self._policy(
            self.deps_role, deps_statements(staging, nightly, cache, cache_prefixes)
        )
        self._buckets = (staging, nightly)
        self.promoter_policy = self._policy(
            self.promoter_role, promoter_statements(staging, nightly, index_dirs)
        )
        if import_sources:
            self.import_sources_policy = self._policy_named(
                "PromoterImportSources",
                self.promoter_role,
                import_source_statements(import_sources),
            )
        who = Principals(
            build=self.build_role.role_arn,
            reporter=self.reporter_role.role_arn,
            promoter=self.promoter_role.role_arn,
            deps=self.deps_role.role_arn,
            deploy=deploy_role_arn,
            break_glass=(break_glass_role_arn,) if break_glass_role_arn else (),
        )
        protect_staging_bucket(staging, who)
        protect_nightly_bucket(
            nightly, who, lock_mode=nightly_retention_mode, retention_days=nightly_retention_days
        )
        if protect_cache:
            protect_cache_bucket(cache, who)

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
