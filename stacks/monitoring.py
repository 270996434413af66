"""Alarms on the promotion pipeline and the SNS topic they notify."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from wheelgate.core.errors import INTEGRITY_REASONS
from wheelgate.core.metrics import (
    METRIC_INTEGRITY_REJECTIONS,
    METRIC_PROMOTION_ERRORS,
    METRIC_SERVICE_DIMENSION,
    METRIC_SETTINGS_ERRORS,
    METRICS_NAMESPACE,
    SERVICE_NAME,
)

#: The period of every alarm and dashboard graph.
PERIOD = Duration.minutes(5)


class Monitoring(Construct):
    """Alarms on DLQ depth, promoter errors, settings errors, integrity rejections and fan-out
    executions that did not succeed, sent to one SNS topic. A routine rejection
    (``tests-failed``...) pages nobody: it is on the dashboard and the status page.

    Attributes:
        topic: the alarm topic (encrypted with ``topic_key``); email subscription if
            ``alarm_email`` is given.
        dlq_alarm / errors_alarm / promotion_errors_alarm / settings_alarm / integrity_alarm:
            the alarms.
        fanout_alarms: one alarm each on failed, timed-out and aborted executions of
            ``state_machine``.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function: lambda_.IFunction,
        dead_letter_queue: sqs.IQueue,
        state_machine: sfn.IStateMachine,
        alarm_email: str | None,
    ) -> None:
        super().__init__(scope, construct_id)
        # A customer-managed key: CloudWatch cannot publish to a topic encrypted with the
        # AWS-managed SNS key, because that key's policy cannot be changed.
        self.topic_key = kms.Key(
            self,
            "TopicKey",
            description="Encrypts the WheelGate alarm topic",
            enable_key_rotation=True,
        )
        self.topic_key.grant(
            iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*"
        )
        self.topic = sns.Topic(
            self,
            "AlarmTopic",
            display_name="WheelGate alarms",
            master_key=self.topic_key,
            enforce_ssl=True,
        )
        if alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(alarm_email))

        self.dlq_alarm = self._alarm(
            "DeadLetterQueueNotEmpty",
            "A manifest failed promotion repeatedly and is in the DLQ.",
            dead_letter_queue.metric_approximate_number_of_messages_visible(
                period=PERIOD, statistic="Maximum"
            ),
        )
        self.errors_alarm = self._alarm(
            "PromoterErrors",
            "The promoter Lambda failed as a whole (crash, timeout, out of memory).",
            function.metric_errors(period=PERIOD, statistic="Sum"),
        )
        # Failed records are reported as partial batch failures, which the invocation-level
        # Errors metric above does not count; the promoter counts them itself.
        self.promotion_errors_alarm = self._alarm(
            "PromotionErrors",
            "A promotion attempt raised and will be retried; see the promoter logs.",
            promoter_metric(METRIC_PROMOTION_ERRORS),
        )
        # The promoter fails closed on missing or bad settings: every message fails (counted
        # per message, not in PromotionErrors) and nothing is released until they are fixed.
        self.settings_alarm = self._alarm(
            "SettingsErrors",
            "The promoter's settings are missing or bad: every manifest fails and nothing is "
            "released. The promoter logs name each variable (promoter settings error); see "
            "docs/operations.md, Alarms.",
            promoter_metric(METRIC_SETTINGS_ERRORS),
        )
        self.integrity_alarm = self._alarm(
            "IntegrityRejections",
            "The promoter refused a manifest for an integrity reason ("
            + ", ".join(sorted(INTEGRITY_REASONS))
            + "): bytes or their provenance are not what they should be. See records/<run>.json "
            "and docs/operations.md, Alarms.",
            promoter_metric(METRIC_INTEGRITY_REJECTIONS),
        )
        self.fanout_alarms = self._fanout_alarms(state_machine)

    def _fanout_alarms(self, state_machine: sfn.IStateMachine) -> tuple[cloudwatch.Alarm, ...]:
        """One alarm each on failed, timed-out and aborted executions of ``state_machine``."""
        # Three alarms, not one on their sum: Step Functions publishes a count only when it is
        # not zero, and metric math adds nothing to a missing point.
        return (
            self._alarm(
                "FanOutExecutionsFailed",
                "A fan-out promotion execution failed; its conclude step recorded why and "
                "requeued the manifest or recorded the rejection (records/<run>.json).",
                state_machine.metric_failed(period=PERIOD, statistic="Sum"),
            ),
            self._alarm(
                "FanOutExecutionsTimedOut",
                "A fan-out promotion execution timed out, so the state machine's catch did not "
                "run; the EndedWithoutConclude rule ran its conclude step: the leases are given "
                "back and the manifest is re-queued. If that invocation failed (promoter logs), "
                "the directories stay leased until FANOUT_LEASE_SECONDS pass (docs/operations.md, "
                "Alarms).",
                state_machine.metric_timed_out(period=PERIOD, statistic="Sum"),
            ),
            self._alarm(
                "FanOutExecutionsAborted",
                "A fan-out promotion execution was stopped by hand. As for a timeout, the "
                "EndedWithoutConclude rule ran its conclude step: the leases are given back and "
                "the manifest is re-queued (up to FANOUT_MAX_EXECUTIONS executions, then the DLQ).",
                state_machine.metric_aborted(period=PERIOD, statistic="Sum"),
            ),
        )

    def _alarm(
        self, construct_id: str, description: str, metric: cloudwatch.IMetric
    ) -> cloudwatch.Alarm:
        """An alarm that fires on the first occurrence in a period and notifies the topic."""
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            alarm_description=description,
            metric=metric,
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            # No data means nothing happened: no messages, no invocations, no rejections.
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        alarm.add_alarm_action(actions.SnsAction(self.topic))
        return alarm


def promoter_metric(
    name: str, statistic: str = "Sum", label: str | None = None
) -> cloudwatch.Metric:
    """A metric the promoter emits through Powertools Metrics, per ``PERIOD`` (a count, summed,
    unless ``statistic`` says otherwise). Powertools adds the service name as a dimension to
    every metric, and the promoter adds no other to these (see
    ``lambdas/wheelgate/lambda_function/telemetry.py``)."""
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={METRIC_SERVICE_DIMENSION: SERVICE_NAME},
        period=PERIOD,
        statistic=statistic,
        label=label,
    )
