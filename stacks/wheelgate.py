"""WheelGate as one construct: storage, access, the promoter function, fan-out, CDN,
monitoring and dashboard, wired together, with the outputs CI reads."""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

from aws_cdk import DefaultStackSynthesizer, Fn, Stack, Token
from constructs import Construct

from wheelgate.core.setting_parsers import deferring
from wheelgate.core.settings import PromoterSettings

from .access import Access
from .cdn import IndexCdn
from .dashboard import PromotionDashboard, stack_dashboard_url
from .fanout_machine import FanOut, state_machine_arn
from .monitoring import Monitoring
from .outputs import add_outputs, wheelgate_outputs
from .promoter_function import PromoterFunction
from .promoter_layer import layer_code
from .props import WheelGateProps
from .setting_errors import ConfigError, Problem, key
from .signing import VerdictKey
from .storage import Storage
from .waf import RateLimitAcl

#: CloudFront takes only web ACLs that AWS WAF keeps in this region.
WAF_REGION = "us-east-1"


def package_code_dir() -> Path:
    """The directory the ``wheelgate`` package is imported from (``lambdas/`` in a checkout,
    ``site-packages`` when installed): the promoter function's code is read from there."""
    spec = find_spec("wheelgate")
    locations = spec.submodule_search_locations if spec else None
    if not locations:
        raise FileNotFoundError("the wheelgate package is not installed")
    return Path(next(iter(locations))).resolve().parent


class WheelGate(Construct):
    """WheelGate: the staging and nightly buckets, the GitHub OIDC roles and bucket policies,
    the promoter function and its queue, the verdict signing key, the fan-out state machine,
    the two CloudFront distributions, alarms and dashboard, configured by ``props`` (the keys of
    docs/deploy.md). Its ``CfnOutput`` s are what CI and operators read (docs/deploy.md, Outputs).

    One per stack: the fan-out state machine and the dashboard are named after the stack
    (``<stack>-fanout``, ``<stack>-promotion``); give each deployment a stack of its own. An
    account has one GitHub OIDC provider: a second deployment in it names the first one's in
    ``oidc_provider_arn`` (:attr:`oidc_provider_arn`); its roles still trust only its own
    settings' subjects.

    Args:
        props: the settings.
        layer_dir: the promoter's dependency layer, built (``make layer``, ``python -m
            stacks.promoter_layer DIR``); ``None``: built by pip during synthesis
            (:func:`stacks.promoter_layer.layer_code`).
        code_dir: the directory holding the ``wheelgate`` package whose promoter modules the
            function runs; ``None``: the one this process imports (:func:`package_code_dir`).

    Attributes:
        storage, access, promoter, fanout, cdn, monitoring, dashboard, verdict_key: the
            components.

    Raises :class:`~stacks.setting_errors.ConfigError` for settings the stack's region cannot deploy
    (``waf_rate_limit`` outside us-east-1), ``ValueError`` for a second WheelGate in one stack
    or a synthesizer other than CDK's default, and ``FileNotFoundError`` for a ``layer_dir``
    without ``python/``.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        props: WheelGateProps,
        *,
        layer_dir: Path | None = None,
        code_dir: Path | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        _refuse_second_wheelgate(self, stack)
        _refuse_waf_rule_outside_waf_region(props, stack.region)
        self.storage = Storage(
            self,
            "Storage",
            staging_run_expiry_days=props.staging_run_expiry_days,
            staging_run_page_expiry_days=props.staging_run_page_expiry_days,
            staging_versioned=props.staging_versioned,
            nightly_retention_mode=props.nightly_retention_mode,
            nightly_retention_days=props.nightly_retention_days,
            nightly_noncurrent_version_days=props.nightly_noncurrent_version_days,
            access_log_expiry_days=props.access_log_expiry_days,
            cache_bucket_name=props.cache_bucket_name,
        )
        self.access = Access(
            self,
            "Access",
            staging=self.storage.staging,
            nightly=self.storage.nightly,
            cache=self.storage.cache,
            cache_prefixes=props.cache_prefixes,
            protect_cache=self.storage.cache_created,
            build_subs=props.build_subs,
            reporter_subs=props.reporter_subs,
            dev_subs=props.dev_sub_patterns,
            deps_subs=props.deps_subs,
            dev_bucket_name=props.dev_bucket_name,
            oidc_provider_arn=props.oidc_provider_arn,
            break_glass_role_arn=props.break_glass_role_arn,
            deploy_role_arn=deploy_role_arn(stack),
            index_dirs=props.index_dirs,
            nightly_retention_mode=props.nightly_retention_mode,
            nightly_retention_days=props.nightly_retention_days,
            import_sources=props.import_locations,
        )
        self.verdict_key = VerdictKey(
            self,
            "VerdictKey",
            signer=self.access.promoter_role,
            deploy_role_arn=deploy_role_arn(stack),
            generation=props.verdict_key_generation,
        )
        web_acl_arn = props.waf_web_acl_arn
        if props.waf_rate_limit is not None:
            web_acl_arn = RateLimitAcl(self, "Waf", rate_limit=props.waf_rate_limit).web_acl_arn
        self.cdn = IndexCdn(
            self,
            "Cdn",
            nightly_bucket=self.storage.nightly,
            staging_bucket=self.storage.staging,
            log_bucket=self.storage.log_bucket,
            nightly_domain=props.nightly_domain,
            staging_domain=props.staging_domain,
            web_acl_arn=web_acl_arn,
        )
        self._promote(props, layer_dir=layer_dir, code_dir=code_dir)
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            function=self.promoter.function,
            dead_letter_queue=self.promoter.dead_letter_queue,
            state_machine=self.fanout.state_machine,
            alarm_email=props.alarm_email,
        )
        self.dashboard = PromotionDashboard(
            self,
            "Dashboard",
            function=self.promoter.function,
            dead_letter_queue=self.promoter.dead_letter_queue,
            state_machine=self.fanout.state_machine,
        )
        add_outputs(self, wheelgate_outputs(self, props))

    def _promote(
        self, props: WheelGateProps, *, layer_dir: Path | None, code_dir: Path | None
    ) -> None:
        """The promoter function (its environment names the other components) and its fan-out
        state machine, each granted what the promoter role needs of the other."""
        stack = Stack.of(self)
        storage, access, cdn, verdict_key = self.storage, self.access, self.cdn, self.verdict_key
        # Bucket names, role ids and ARNs are tokens here: the promoter checks them at cold start.
        with deferring(Token.is_unresolved):
            settings = PromoterSettings(
                staging_bucket=storage.staging.bucket_name,
                nightly_bucket=storage.nightly.bucket_name,
                nightly_base_url=cdn.nightly_base_url,
                staging_base_url=cdn.staging_base_url,
                nightly_distribution_id=cdn.nightly.distribution_id,
                trusted_reporter_id=access.reporter_role.role_id,
                trusted_deps_id=access.deps_role.role_id,
                required_tests=props.required_tests,
                allowed_indexes=frozenset(props.index_dirs),
                # None: no break-glass role, so the promoter refuses every override request.
                break_glass_id=props.break_glass_role_id or None,
                block_all_on_failure=props.block_all_on_failure,
                allow_build_tag_rereleases=props.allow_build_tag_rereleases,
                allow_new_local_labels=props.allow_new_local_labels,
                test_url_hosts=frozenset(props.test_url_hosts),
                # From the region and the dashboard's fixed name, not the dashboard resource:
                # the dashboard graphs this function, so a reference back would be a cycle.
                dashboard_url=stack_dashboard_url(stack),
                # The state machine invokes this function: named by its fixed ARN, not a
                # reference (see stacks/fanout_machine.py).
                fanout_state_machine_arn=state_machine_arn(stack),
                fanout_min_files=props.fanout_min_files,
                fanout_min_bytes=props.fanout_min_bytes,
                nightly_retention_mode=props.nightly_retention_mode,
                nightly_page_retention_days=props.nightly_page_retention_days,
                listing_retention=props.listing_retention,
                verdict_key_arn=verdict_key.key.key_arn,
                fanout_copy_concurrency=props.fanout.copy_concurrency,
                import_sources=props.import_locations,
                # The staging lifecycle's days (Storage's ExpireStagedRuns rule): the run history
                # says when each staged file expires, instead of linking a 404 once it has.
                run_expiry_days=props.staging_run_expiry_days,
                # The run history page links each run's commit in the repository it builds.
                repository_url=f"https://github.com/{props.github_repo}",
            )
        self.promoter_settings = settings
        promoter = PromoterFunction(
            self,
            "Promoter",
            staging=storage.staging,
            role=access.promoter_role,
            code_dir=code_dir or package_code_dir(),
            layer_code=layer_code(layer_dir),
            log_retention_days=props.log_retention_days,
            settings=settings,
        )
        access.confine_promoter_to(
            promoter.function.function_arn, signing_key_arns=[verdict_key.key.key_arn]
        )
        cdn.nightly.grant_create_invalidation(access.promoter_role)
        self.promoter = promoter
        self.fanout = FanOut(
            self,
            "FanOut",
            function=promoter.function,
            staging=storage.staging,
            log_retention_days=props.log_retention_days,
            hash_concurrency=props.fanout.hash_concurrency,
            copy_concurrency=props.fanout.copy_concurrency,
        )
        self.fanout.grant_start_execution(access.promoter_role)

    @property
    def oidc_provider_arn(self) -> str:
        """The GitHub OIDC provider's ARN (created here, or ``oidc_provider_arn``): what a
        second deployment in the same account gives as its ``oidc_provider_arn``."""
        return self.access.oidc_provider.oidc_provider_arn


def deploy_role_arn(stack: Stack) -> str:
    """The role CloudFormation deploys ``stack`` with: ``cdk bootstrap``'s execution role
    (``cdk-<qualifier>-cfn-exec-role-<account>-<region>``), as the synthesizer names it.

    Raises ``ValueError`` for a synthesizer without one (CloudFormation would then act
    with the deployer's own credentials, which the bucket policies cannot single out).
    """
    synthesizer = stack.synthesizer
    if not isinstance(synthesizer, DefaultStackSynthesizer):
        raise ValueError(
            "WheelGate needs the DefaultStackSynthesizer: its bucket policies exempt the "
            "CloudFormation execution role of cdk bootstrap"
        )
    # The synthesizer writes ${AWS::AccountId} and ${AWS::Region} placeholders.
    return Fn.sub(synthesizer.cloud_formation_execution_role_arn)


def _refuse_second_wheelgate(gate: WheelGate, stack: Stack) -> None:
    """Raises ``ValueError`` if ``stack`` holds a WheelGate other than ``gate``."""
    others = [c.node.path for c in stack.node.find_all() if isinstance(c, WheelGate)]
    if others != [gate.node.path]:
        raise ValueError(
            f"stack {stack.stack_name} already has a WheelGate ({others[0]}): its fan-out "
            "state machine and dashboard are named after the stack, so give each "
            "WheelGate a stack of its own"
        )


def _refuse_waf_rule_outside_waf_region(props: WheelGateProps, region: str) -> None:
    """Raises :class:`~stacks.setting_errors.ConfigError` if ``props`` asks for a rate-limiting
    web ACL and the stack's ``region`` is known and not :data:`WAF_REGION`."""
    if (
        props.waf_rate_limit is not None
        and not Token.is_unresolved(region)
        and region != WAF_REGION
    ):
        raise ConfigError(
            [
                Problem(
                    f"{key('waf_rate_limit')} is set and the stack is in {region}: "
                    f"CloudFront takes only web ACLs that AWS WAF keeps in {WAF_REGION}; "
                    f"deploy the stack there or give {key('waf_web_acl_arn')} instead",
                    key=key("waf_rate_limit"),
                )
            ]
        )
