"""The promotion pipeline: manifest (and history entry) notifications -> SQS (with DLQ) ->
promoter Lambda."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Duration, IgnoreMode, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_notifications as s3n
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from wheelgate.core.layout import (
    HISTORY_ENTRIES_DIR,
    HISTORY_PREFIX,
    MANIFEST_SUFFIX,
    MANIFESTS_PREFIX,
)
from wheelgate.core.limits import LEASE_BUSY_RETRY_SECONDS, LEASE_SECONDS, PROMOTER_TIMEOUT_SECONDS
from wheelgate.core.metrics import METRICS_NAMESPACE, SERVICE_NAME
from wheelgate.core.settings import PromoterSettings

from .lambda_asset import asset_files, data_files, glob_excludes_keeping, handler_module
from .log_groups import retained_log_group
from .nag import acknowledge

HANDLER = "wheelgate.lambda_function.handler.lambda_handler"
#: Folders of package data the promoter reads at run time, which its imports do not name: the
#: status and history pages' Jinja2 templates (wheelgate.status.pages and wheelgate.history.page
#: load them from their packages).
PROMOTER_DATA = ("wheelgate/status/templates", "wheelgate/history/templates")

# A 1,000-file set is 1,000 server-side copies (multi-GB wheels are multipart copies) plus the
# index rewrite; 15 minutes is the Lambda maximum and leaves headroom.
FUNCTION_TIMEOUT = Duration.seconds(PROMOTER_TIMEOUT_SECONDS)
# Memory also buys CPU and network for the parallel copies and page rendering.
FUNCTION_MEMORY_MB = 1024
# AWS guidance for SQS event sources: visibility timeout at least six times the function timeout.
QUEUE_VISIBILITY_TIMEOUT = Duration.seconds(6 * FUNCTION_TIMEOUT.to_seconds())
# At most this many promotions run at once: the event source mapping's maximum concurrency
# (2 is the least AWS accepts). Not reserved concurrency: an SQS event source whose function is
# throttled still receives messages, and those receives count towards maxReceiveCount. Two
# promotions into one index directory are kept apart by the promoter's lease instead.
MAX_CONCURRENCY = 2
# Every receive counts towards maxReceiveCount, a busy one included. A message that finds its
# directory leased comes back every LEASE_BUSY_RETRY_SECONDS, so the count covers the longest a
# lease can be held (a killed invocation's, LEASE_SECONDS) in busy receives, plus five attempts
# that fail for other reasons (each after the whole visibility timeout): a manifest never
# reaches the DLQ just because another run was being promoted into its directory.
BUSY_RECEIVES = -(-LEASE_SECONDS // LEASE_BUSY_RETRY_SECONDS)
MAX_RECEIVE_COUNT = BUSY_RECEIVES + 5

#: The staging keys (prefix, suffix) whose creation the queue is told of: the manifests, and
#: the history entries (``StagingLayout.history_entry``: ``.json`` objects).
NOTIFIED_KEYS = (
    (MANIFESTS_PREFIX, MANIFEST_SUFFIX),
    (f"{HISTORY_PREFIX}{HISTORY_ENTRIES_DIR}", ".json"),
)

# Construct id CDK gives the singleton Lambda behind bucket notifications.
NOTIFICATIONS_HANDLER_ID = "BucketNotificationsHandler050a0587b7544547bf325f094a3db834"


class PromoterFunction(Construct):
    """Staging manifest notifications, their queue and DLQ, and the promoter function.

    Attributes:
        queue: receives ``s3:ObjectCreated`` events for ``manifests/*.json`` and for the run
            history's entries (``history/_entries/*.json``, which the promoter folds into the
            history) in staging.
        dead_letter_queue: messages that failed ``MAX_RECEIVE_COUNT`` times (and manifests
            whose fan-out executions failed ``FANOUT_MAX_EXECUTIONS`` times).
        function: the promoter Lambda (``HANDLER`` and the modules it imports from
            ``code_dir``, see :func:`promoter_code`; deps in the layer). It may send messages
            to both queues, whose URLs join ``settings`` in its environment
            (:meth:`~wheelgate.core.settings.PromoterSettings.to_env`), for failed fan-out
            executions.
        log_group: the function's log group.

    The dependency layer's code is ``layer_code`` (:func:`stacks.promoter_layer.layer_code`).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        staging: s3.IBucket,
        role: iam.IRole,
        code_dir: Path,
        layer_code: lambda_.Code,
        settings: PromoterSettings,
        log_retention_days: int,
    ) -> None:
        super().__init__(scope, construct_id)

        self._queues(staging)
        self.log_group = retained_log_group(self, "Logs", retention_days=log_retention_days)
        layer = lambda_.LayerVersion(
            self,
            "Dependencies",
            code=layer_code,
            compatible_runtimes=[lambda_.Runtime.PYTHON_3_13],
            compatible_architectures=[lambda_.Architecture.ARM_64],
            description="boto3, Powertools, pydantic and packaging for the WheelGate promoter",
        )
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=lambda_.Runtime.PYTHON_3_13,
            architecture=lambda_.Architecture.ARM_64,
            handler=HANDLER,
            code=promoter_code(code_dir),
            layers=[layer],
            role=role,
            timeout=FUNCTION_TIMEOUT,
            memory_size=FUNCTION_MEMORY_MB,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=self.log_group,
            environment={
                # The queues are this construct's, so their URLs join here; they are tokens,
                # which the promoter checks at cold start (hence no validation on the copy).
                **settings.model_copy(
                    update={
                        "manifest_queue_url": self.queue.queue_url,
                        "dead_letter_queue_url": self.dead_letter_queue.queue_url,
                    }
                ).to_env(),
                "POWERTOOLS_SERVICE_NAME": SERVICE_NAME,
                "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
            },
            description="Verifies a staged run's manifest and promotes it to nightly",
        )
        self.log_group.grant_write(role)
        role.add_to_principal_policy(
            iam.PolicyStatement(
                # A failed fan-out execution sends its manifest's S3 event back to the queue
                # for a new execution, or to the DLQ after FANOUT_MAX_EXECUTIONS of them.
                sid="RequeueFailedFanOuts",
                actions=["sqs:SendMessage"],
                resources=[self.queue.queue_arn, self.dead_letter_queue.queue_arn],
            )
        )
        # The event source's grant (consuming messages) includes sqs:ChangeMessageVisibility
        # on the queue, which the handler uses to retry a busy directory's message sooner.
        self.function.add_event_source(
            sources.SqsEventSource(
                self.queue,
                # One manifest (up to 1,000 files) can use most of the timeout on its own.
                batch_size=1,
                report_batch_item_failures=True,
                max_concurrency=MAX_CONCURRENCY,
            )
        )
        self._acknowledge_findings(role)

    def _queues(self, staging: s3.IBucket) -> None:
        """The manifest queue, notified of each manifest and history entry staging receives,
        and its DLQ."""
        self.dead_letter_queue = sqs.Queue(
            self,
            "DeadLetterQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        acknowledge(
            self.dead_letter_queue,
            "AwsSolutions-SQS3",
            "This is the manifest queue's dead-letter queue; a DLQ needs no DLQ of its own.",
        )
        self.queue = sqs.Queue(
            self,
            "ManifestQueue",
            # SSE-SQS rather than KMS: S3 event notifications cannot publish to a queue
            # encrypted with the AWS-managed KMS key.
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=QUEUE_VISIBILITY_TIMEOUT,
            retention_period=Duration.days(4),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letter_queue, max_receive_count=MAX_RECEIVE_COUNT
            ),
        )
        # A stage call's history entry is folded in by the promoter as it is written, so a run
        # that is staged and never reported is still in the history. The two prefixes do not
        # overlap, as S3 requires of two filters of one event type.
        for prefix, suffix in NOTIFIED_KEYS:
            staging.add_event_notification(
                s3.EventType.OBJECT_CREATED,
                s3n.SqsDestination(self.queue),
                s3.NotificationKeyFilter(prefix=prefix, suffix=suffix),
            )

    def _acknowledge_findings(self, role: iam.IRole) -> None:
        """cdk-nag's findings on the function, its role's default policy and CDK's
        bucket-notification handler, each acknowledged on that construct alone."""
        acknowledge(
            self.function,
            "AwsSolutions-L1",
            "The dependency layer is built for CPython 3.13 (`make layer`); moving the runtime "
            "means rebuilding the layer for the new version.",
        )
        default_policy = role.node.try_find_child("DefaultPolicy")
        if default_policy is not None:
            acknowledge(
                default_policy,
                "AwsSolutions-IAM5[Resource::*]",
                "Active tracing adds xray:PutTraceSegments and xray:PutTelemetryRecords, which "
                "have no resource-level permissions.",
            )
        notifications = Stack.of(self).node.try_find_child(NOTIFICATIONS_HANDLER_ID)
        role_of_handler = notifications.node.try_find_child("Role") if notifications else None
        if role_of_handler is not None:
            acknowledge(
                role_of_handler,
                "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AWSLambdaBasicExecutionRole]",
                "CDK's bucket-notification custom resource (runs at deploy time only) logs "
                "through the AWS-managed basic execution policy; it has no other permissions "
                "beyond s3:PutBucketNotification.",
            )


def promoter_files(code_dir: Path) -> tuple[str, ...]:
    """The files of ``code_dir`` the promoter needs, sorted: those that importing ``HANDLER``
    runs, and the package data of :data:`PROMOTER_DATA`.

    Raises ``FileNotFoundError`` when the handler, a module it imports or its data is missing.
    """
    return tuple(
        sorted(asset_files(code_dir, handler_module(HANDLER)) + data_files(code_dir, PROMOTER_DATA))
    )


def promoter_code(code_dir: Path) -> lambda_.AssetCode:
    """The promoter's code: only the files of ``code_dir`` it needs (:func:`promoter_files`).

    Raises ``FileNotFoundError`` when the handler, a module it imports or its data is missing.
    """
    files = promoter_files(code_dir)
    # Excluding in place rather than copying the files to a staging directory: CDK hashes only
    # the files the patterns keep (not the patterns), so an edit to the CLI or local mode leaves
    # the asset hash, and the deployed function, unchanged; and synthesis writes nothing
    # outside its output directory, whether `cdk synth` or the tests run it.
    return lambda_.Code.from_asset(
        str(code_dir),
        exclude=glob_excludes_keeping(files),
        ignore_mode=IgnoreMode.GLOB,
    )
