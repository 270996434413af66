"""Who may touch which keys: the GitHub OIDC provider, the WheelGate roles with their policies
and the bucket policies that deny everyone else, both made of the access table
(:mod:`.access_table`)."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from wheelgate.core.import_sources import ImportSource

from .access_table import (
    OBJECT_WRITE_ACTIONS,
    Bucket,
    Role,
    Where,
    import_source_statements,
    role_statements,
)
from .bucket_policies import (
    Principals,
    add_denies,
    cache_denies,
    nightly_denies,
    protect_staging_bucket,
)
from .nag import acknowledge_resource_wildcards

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

    The GitHub roles trust jobs by the OIDC ``sub`` claim (``build_subs``, ``reporter_subs``:
    jobs of the reporter's reusable workflow, never a build job, ``dev_subs``, ``deps_subs``;
    ``aud`` must be ``sts.amazonaws.com``); the promoter role trusts Lambda. What each role may
    do is its rows of the access table (:mod:`.access_table`), over ``index_dirs``,
    ``cache_prefixes`` and ``dev_bucket_name``; the promoter also reads the ``import_sources``
    (each bucket's listing under its prefix, and its objects there). The bucket policies
    (:mod:`.bucket_policies`) deny each zone of keys to every principal but the roles the
    table lets write it, keyed on ``aws:PrincipalArn``, so no other principal in the account
    (administrators included) can write the buckets directly; only ``break_glass_role_arn``
    deletes or changes retention, and only ``deploy_role_arn`` (CloudFormation's execution
    role) changes a bucket policy. The cache's policy is added when ``protect_cache`` (the
    stack created it). docs/security.md states the rules in prose.

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

        stack_buckets = {Bucket.STAGING: staging, Bucket.NIGHTLY: nightly, Bucket.CACHE: cache}
        where = Where(
            buckets={**stack_buckets, Bucket.DEV: dev_bucket_name},
            index_dirs=index_dirs,
            cache_prefixes=cache_prefixes,
        )
        self.build_policy = self._policy(self.build_role, Role.BUILD, where)
        self.reporter_policy = self._policy(self.reporter_role, Role.REPORTER, where)
        self.dev_policy = self._policy(self.dev_role, Role.DEV, where)
        self.deps_policy = self._policy(self.deps_role, Role.DEPS, where)
        self._buckets = (staging, nightly)
        self.promoter_policy = self._policy(self.promoter_role, Role.PROMOTER, where)
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
        lock_mode, days = nightly_retention_mode, nightly_retention_days
        add_denies(nightly, nightly_denies(nightly, who, lock_mode=lock_mode, retention_days=days))
        if protect_cache:
            add_denies(cache, cache_denies(cache, who))

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

    def _policy(self, role: iam.Role, row: Role, where: Where) -> iam.Policy:
        return self._policy_named(f"{role.node.id}Access", role, role_statements(row, where))

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
