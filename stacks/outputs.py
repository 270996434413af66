"""The stack outputs CI and operators read (docs/deploy.md, "The outputs, and where each goes
in CI"): bucket names, role ARNs, index URLs, and the settings the CLI must share with the
promoter."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from aws_cdk import CfnOutput
from constructs import Construct

from wheelgate.core.env_names import ENV_ALLOWED_INDEXES, ENV_TEST_URL_HOSTS

if TYPE_CHECKING:
    from wheelgate.core.settings import PromoterSettings

    from .access import Access
    from .cdn import IndexCdn
    from .dashboard import PromotionDashboard
    from .fanout_machine import FanOut
    from .monitoring import Monitoring
    from .promoter_function import PromoterFunction
    from .props import WheelGateProps
    from .signing import VerdictKey
    from .storage import Storage


class OutputSources(Protocol):
    """The parts of a built WheelGate the outputs read (:class:`~.wheelgate.WheelGate` has
    them): a protocol, so that this module needs not import the construct that imports it."""

    @property
    def storage(self) -> Storage: ...
    @property
    def access(self) -> Access: ...
    @property
    def cdn(self) -> IndexCdn: ...
    @property
    def promoter(self) -> PromoterFunction: ...
    @property
    def fanout(self) -> FanOut: ...
    @property
    def monitoring(self) -> Monitoring: ...
    @property
    def dashboard(self) -> PromotionDashboard: ...
    @property
    def verdict_key(self) -> VerdictKey: ...
    @property
    def promoter_settings(self) -> PromoterSettings: ...


def wheelgate_outputs(gate: OutputSources, props: WheelGateProps) -> dict[str, str]:
    """Each output of ``gate`` (built with ``props``) by its name."""
    storage, access, cdn = gate.storage, gate.access, gate.cdn
    environment = gate.promoter_settings.to_env()
    return {
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
        "ManifestQueueUrl": gate.promoter.queue.queue_url,
        "DeadLetterQueueUrl": gate.promoter.dead_letter_queue.queue_url,
        "FanOutStateMachineArn": gate.fanout.state_machine.state_machine_arn,
        "AlarmTopicArn": gate.monitoring.topic.topic_arn,
        "DashboardUrl": gate.dashboard.dashboard_url,
        # For CI's WHEELGATE_ALLOWED_INDEXES: the CLI refuses what the promoter would (the
        # same JSON as the promoter's environment, from its settings).
        "AllowedIndexes": environment[ENV_ALLOWED_INDEXES],
        # For CI's WHEELGATE_TEST_URL_HOSTS: `wheelgate report` refuses what the promoter would.
        "TestUrlHosts": environment[ENV_TEST_URL_HOSTS],
        # For CI's WHEELGATE_RUN_STAGE_WINDOW_DAYS: `wheelgate stage` stops writing a run's
        # pages when they could outlive its files.
        "RunStageWindowDays": str(props.run_stage_window_days),
        # For an operator's `wheelgate index rebuild` (WHEELGATE_NIGHTLY_RETENTION_MODE and
        # WHEELGATE_NIGHTLY_PAGE_RETENTION_DAYS): pages get the promoter's lock.
        "NightlyRetentionMode": props.nightly_retention_mode,
        "NightlyPageRetentionDays": str(props.nightly_page_retention_days),
        # For an operator's `wheelgate index rebuild` (WHEELGATE_LISTING_RETENTION): the
        # listing pages it writes keep what the promoter's would.
        "ListingRetention": props.listing_retention.to_json(),
        # The key that signs verdicts now (its public key is also in nightly's keys document).
        "VerdictKeyArn": gate.verdict_key.key.key_arn,
        # For the operator's `wheelgate import` (WHEELGATE_IMPORT_SOURCES): it refuses a
        # source the promoter would.
        "ImportSources": json.dumps(list(props.import_sources)),
    }


def add_outputs(scope: Construct, outputs: Mapping[str, str]) -> None:
    """A ``CfnOutput`` in ``scope`` for each of ``outputs``, its logical id the output's name."""
    for name, value in outputs.items():
        # The output's name alone, whatever the construct's id: the names CI and
        # docs/deploy.md read (one WheelGate per stack, so they never collide).
        CfnOutput(scope, name, value=value).override_logical_id(name)
