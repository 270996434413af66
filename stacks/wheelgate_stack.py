"""The WheelGate stack: composes storage, access, promoter, fan-out, CDN, monitoring and
dashboard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, DefaultStackSynthesizer, Fn, Stack
from constructs import Construct

from stacks.access import Access
from stacks.cdn import IndexCdn
from stacks.config import WheelGateConfig
from stacks.dashboard import PromotionDashboard, stack_dashboard_url
from stacks.fanout import FanOut, state_machine_arn
from stacks.monitoring import Monitoring
from stacks.promoter import Promoter
from stacks.storage import Storage
from stacks.waf import RateLimitAcl
from wheelgate.core.settings import (
    ENV_ALLOW_BUILD_TAG_RERELEASES,
    ENV_ALLOW_NEW_LOCAL_LABELS,
    ENV_ALLOWED_INDEXES,
    ENV_BLOCK_ALL_ON_FAILURE,
    ENV_BREAK_GLASS_ID,
    ENV_DASHBOARD_URL,
    ENV_FANOUT_MIN_BYTES,
    ENV_FANOUT_MIN_FILES,
    ENV_FANOUT_STATE_MACHINE_ARN,
    ENV_LISTING_RETENTION,
    ENV_NIGHTLY_BASE_URL,
    ENV_NIGHTLY_BUCKET,
    ENV_NIGHTLY_DISTRIBUTION_ID,
    ENV_NIGHTLY_PAGE_RETENTION_DAYS,
    ENV_NIGHTLY_RETENTION_MODE,
    ENV_REQUIRED_TESTS,
    ENV_STAGING_BUCKET,
    ENV_TEST_URL_HOSTS,
    ENV_TRUSTED_DEPS_ID,
    ENV_TRUSTED_REPORTER_ID,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
LAMBDA_CODE_DIR = REPO_ROOT / "lambdas"
LAYER_DIR = REPO_ROOT / "build" / "layer"


class WheelGateStack(Stack):
    """Creates the components, wires them together and exports what CI needs."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: WheelGateConfig,
        code_dir: Path = LAMBDA_CODE_DIR,
        layer_dir: Path = LAYER_DIR,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)

        storage = Storage(
            self,
            "Storage",
            staging_run_expiry_days=config.staging_run_expiry_days,
            staging_run_page_expiry_days=config.staging_run_page_expiry_days,
            staging_versioned=config.staging_versioned,
            nightly_retention_mode=config.nightly_retention_mode,
            nightly_retention_days=config.nightly_retention_days,
            nightly_noncurrent_version_days=config.nightly_noncurrent_version_days,
            access_log_expiry_days=config.access_log_expiry_days,
            cache_bucket_name=config.cache_bucket_name,
        )
        access = Access(
            self,
            "Access",
            staging=storage.staging,
            nightly=storage.nightly,
            cache=storage.cache,
            cache_prefixes=config.cache_prefixes,
            protect_cache=storage.cache_created,
            build_subs=config.build_subs,
            reporter_subs=config.reporter_subs,
            dev_subs=config.dev_sub_patterns,
            deps_subs=config.deps_subs,
            dev_bucket_name=config.dev_bucket_name,
            oidc_provider_arn=config.oidc_provider_arn,
            break_glass_role_arn=config.break_glass_role_arn,
            deploy_role_arn=self.deploy_role_arn,
            index_dirs=config.index_dirs,
            nightly_retention_mode=config.nightly_retention_mode,
            nightly_retention_days=config.nightly_retention_days,
        )
        web_acl_arn = config.waf_web_acl_arn
        if config.waf_rate_limit is not None:
            web_acl_arn = RateLimitAcl(self, "Waf", rate_limit=config.waf_rate_limit).web_acl_arn
        cdn = IndexCdn(
            self,
            "Cdn",
            nightly_bucket=storage.nightly,
            staging_bucket=storage.staging,
            log_bucket=storage.log_bucket,
            nightly_domain=config.nightly_domain,
            staging_domain=config.staging_domain,
            web_acl_arn=web_acl_arn,
        )
        allowed_indexes = json.dumps(list(config.index_dirs))
        test_url_hosts = json.dumps(list(config.test_url_hosts))
        promoter = Promoter(
            self,
            "Promoter",
            staging=storage.staging,
            role=access.promoter_role,
            code_dir=code_dir,
            layer_dir=layer_dir,
            log_retention_days=config.log_retention_days,
            environment={
                ENV_STAGING_BUCKET: storage.staging.bucket_name,
                ENV_NIGHTLY_BUCKET: storage.nightly.bucket_name,
                ENV_NIGHTLY_BASE_URL: cdn.nightly_base_url,
                ENV_NIGHTLY_DISTRIBUTION_ID: cdn.nightly.distribution_id,
                ENV_TRUSTED_REPORTER_ID: access.reporter_role.role_id,
                ENV_TRUSTED_DEPS_ID: access.deps_role.role_id,
                ENV_REQUIRED_TESTS: json.dumps(
                    {k: list(v) for k, v in config.required_tests.items()}, sort_keys=True
                ),
                ENV_ALLOWED_INDEXES: allowed_indexes,
                # Empty: no break-glass role, so the promoter refuses every override request.
                ENV_BREAK_GLASS_ID: config.break_glass_role_id or "",
                ENV_BLOCK_ALL_ON_FAILURE: "true" if config.block_all_on_failure else "false",
                ENV_ALLOW_BUILD_TAG_RERELEASES: (
                    "true" if config.allow_build_tag_rereleases else "false"
                ),
                ENV_ALLOW_NEW_LOCAL_LABELS: config.allow_new_local_labels.to_json(),
                ENV_TEST_URL_HOSTS: test_url_hosts,
                # From the region and the dashboard's fixed name, not the dashboard resource:
                # the dashboard graphs this function, so a reference back would be a cycle.
                ENV_DASHBOARD_URL: stack_dashboard_url(self),
                # The state machine invokes this function: named by its fixed ARN, not a
                # reference (see stacks/fanout.py).
                ENV_FANOUT_STATE_MACHINE_ARN: state_machine_arn(self),
                ENV_FANOUT_MIN_FILES: str(config.fanout_min_files),
                ENV_FANOUT_MIN_BYTES: str(config.fanout_min_bytes),
                ENV_NIGHTLY_RETENTION_MODE: config.nightly_retention_mode,
                ENV_NIGHTLY_PAGE_RETENTION_DAYS: str(config.nightly_page_retention_days),
                ENV_LISTING_RETENTION: config.listing_retention.to_json(),
            },
        )
        access.confine_promoter_to(promoter.function.function_arn)
        cdn.nightly.grant_create_invalidation(access.promoter_role)
        fanout = FanOut(
            self,
            "FanOut",
            function=promoter.function,
            staging=storage.staging,
            log_retention_days=config.log_retention_days,
        )
        fanout.grant_start_execution(access.promoter_role)
        monitoring = Monitoring(
            self,
            "Monitoring",
            function=promoter.function,
            dead_letter_queue=promoter.dead_letter_queue,
            state_machine=fanout.state_machine,
            alarm_email=config.alarm_email,
        )
        #: The fan-out state machine (the dashboard graphs its executions).
        self.fanout = fanout
        dashboard = PromotionDashboard(
            self,
            "Dashboard",
            function=promoter.function,
            dead_letter_queue=promoter.dead_letter_queue,
            state_machine=fanout.state_machine,
        )

        outputs = {
            "StagingBucketName": storage.staging.bucket_name,
            "NightlyBucketName": storage.nightly.bucket_name,
            "CacheBucketName": storage.cache.bucket_name,
            "LogBucketName": storage.log_bucket.bucket_name,
            "BuildRoleArn": access.build_role.role_arn,
            "ReporterRoleArn": access.reporter_role.role_arn,
            "DevRoleArn": access.dev_role.role_arn,
            "DepsRoleArn": access.deps_role.role_arn,
            "PromoterRoleArn": access.promoter_role.role_arn,
            "NightlyDistributionDomain": cdn.nightly.distribution_domain_name,
            "NightlyDistributionId": cdn.nightly.distribution_id,
            "StagingDistributionDomain": cdn.staging.distribution_domain_name,
            "StagingDistributionId": cdn.staging.distribution_id,
            "NightlyIndexUrl": cdn.nightly_base_url,
            "StagingIndexUrl": cdn.staging_base_url,
            "ManifestQueueUrl": promoter.queue.queue_url,
            "DeadLetterQueueUrl": promoter.dead_letter_queue.queue_url,
            "FanOutStateMachineArn": fanout.state_machine.state_machine_arn,
            "AlarmTopicArn": monitoring.topic.topic_arn,
            "DashboardUrl": dashboard.dashboard_url,
            # For CI's WHEELGATE_ALLOWED_INDEXES: the CLI refuses what the promoter would.
            "AllowedIndexes": allowed_indexes,
            # For CI's WHEELGATE_TEST_URL_HOSTS: `wheelgate report` refuses what the promoter would.
            "TestUrlHosts": test_url_hosts,
            # For CI's WHEELGATE_RUN_STAGE_WINDOW_DAYS: `wheelgate stage` stops writing a run's
            # pages when they could outlive its files.
            "RunStageWindowDays": str(config.run_stage_window_days),
            # For an operator's `wheelgate index rebuild` (WHEELGATE_NIGHTLY_RETENTION_MODE and
            # WHEELGATE_NIGHTLY_PAGE_RETENTION_DAYS): pages get the promoter's lock.
            "NightlyRetentionMode": config.nightly_retention_mode,
            "NightlyPageRetentionDays": str(config.nightly_page_retention_days),
            # For an operator's `wheelgate index rebuild` (WHEELGATE_LISTING_RETENTION): the
            # listing pages it writes keep what the promoter's would.
            "ListingRetention": config.listing_retention.to_json(),
        }
        for name, value in outputs.items():
            CfnOutput(self, name, value=value)

    @property
    def deploy_role_arn(self) -> str:
        """The role CloudFormation deploys this stack with: ``cdk bootstrap``'s execution role
        (``cdk-<qualifier>-cfn-exec-role-<account>-<region>``), as the synthesizer names it.

        Raises ``ValueError`` for a synthesizer without one (CloudFormation would then act
        with the deployer's own credentials, which the bucket policies cannot single out).
        """
        synthesizer = self.synthesizer
        if not isinstance(synthesizer, DefaultStackSynthesizer):
            raise ValueError(
                "WheelGate needs the DefaultStackSynthesizer: its bucket policies exempt the "
                "CloudFormation execution role of cdk bootstrap"
            )
        # The synthesizer writes ${AWS::AccountId} and ${AWS::Region} placeholders.
        return Fn.sub(synthesizer.cloud_formation_execution_role_arn)
