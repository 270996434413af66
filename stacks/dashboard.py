"""The CloudWatch dashboard of the promotion pipeline: what the promoter did and how it ran."""

from __future__ import annotations

import re
from collections.abc import Sequence

from aws_cdk import Duration, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from wheelgate.core.metrics import (
    METRIC_BYTES_COPIED,
    METRIC_FILES_COPIED,
    METRIC_INTEGRITY_REJECTIONS,
    METRIC_PROMOTION_ERRORS,
    METRIC_PROMOTION_LATENCY,
    METRIC_PROMOTIONS_REJECTED,
    METRIC_PROMOTIONS_SUCCEEDED,
    METRIC_REASON_DIMENSION,
    METRIC_REJECTIONS_BY_REASON,
    METRIC_SERVICE_DIMENSION,
    METRIC_SETTINGS_ERRORS,
    METRICS_NAMESPACE,
    SERVICE_NAME,
)

from .monitoring import PERIOD, promoter_metric

#: Suffix of the dashboard's name after the stack's.
DASHBOARD_SUFFIX = "-promotion"
# CloudWatch's rule for dashboard names: letters, digits, '-' and '_', at most 255.
_DASHBOARD_NAME = re.compile(r"[A-Za-z0-9_-]{1,255}")
#: Every graph sums or aggregates over this period.
WIDTH = 8
HEIGHT = 6


def dashboard_name(stack_name: str) -> str:
    """The dashboard's name for the stack ``stack_name`` (``<stack>-promotion``).

    Raises ``ValueError`` when the result is not a valid CloudWatch dashboard name.
    """
    name = f"{stack_name}{DASHBOARD_SUFFIX}"
    if not _DASHBOARD_NAME.fullmatch(name):
        raise ValueError(
            f"dashboard name {name!r} (from stack {stack_name!r}) must be at most 255 letters, "
            "digits, '-' or '_'"
        )
    return name


def dashboard_url(region: str, name: str) -> str:
    """The console URL of dashboard ``name`` in ``region`` (a token is fine: it resolves
    at deploy time). Built from the name, not the dashboard resource, so the promoter's
    environment can carry it while the dashboard graphs the promoter's metrics."""
    return (
        f"https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}"
        f"#dashboards/dashboard/{name}"
    )


def stack_dashboard_url(stack: Stack) -> str:
    """The console URL of the dashboard :class:`PromotionDashboard` creates in ``stack``."""
    return dashboard_url(stack.region, dashboard_name(stack.stack_name))


class PromotionDashboard(Construct):
    """One dashboard for the promotion pipeline, named after the stack.

    Rows: promotion latency (p50/p90/max), files and bytes copied, promotions, rejections,
    integrity rejections and rejections by reason (a SEARCH over the reason dimension, so a new
    reason code needs no change here);
    the dead-letter queue's depth and the promoter function's errors (settings errors
    included), throttles and duration;
    and, when ``state_machine`` (the fan-out promotion's) is given, its executions started,
    succeeded, failed and timed out.

    Attributes:
        dashboard: the CloudWatch dashboard.
        dashboard_name: its name (``<stack>-promotion``).
        dashboard_url: its console URL, in the stack's region.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function: lambda_.IFunction,
        dead_letter_queue: sqs.IQueue,
        state_machine: sfn.IStateMachine | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        if Token.is_unresolved(stack.stack_name):
            raise ValueError("the dashboard needs a stack with a concrete name")
        self.dashboard_name = dashboard_name(stack.stack_name)
        self.dashboard_url = stack_dashboard_url(stack)
        self.dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            dashboard_name=self.dashboard_name,
            default_interval=Duration.days(1),
        )
        self.dashboard.add_widgets(*_promotion_row())
        self.dashboard.add_widgets(*_pipeline_row(function, dead_letter_queue))
        if state_machine is not None:
            self.dashboard.add_widgets(_fanout_graph(state_machine))


def _promotion_row() -> list[cloudwatch.IWidget]:
    """What the promoter did: latency, files and bytes copied, decisions."""
    latency = [
        promoter_metric(METRIC_PROMOTION_LATENCY, statistic, label)
        for statistic, label in (("p50", "p50"), ("p90", "p90"), ("Maximum", "max"))
    ]
    return [
        _graph(
            "Promotion latency (manifest written to pages published)",
            latency,
            left_label="seconds",
        ),
        _graph(
            "Files and bytes copied into nightly",
            [promoter_metric(METRIC_FILES_COPIED, "Sum", "files")],
            right=[promoter_metric(METRIC_BYTES_COPIED, "Sum", "bytes")],
            left_label="files",
            right_label="bytes",
        ),
        _graph(
            "Promotions and rejections by reason",
            [
                promoter_metric(METRIC_PROMOTIONS_SUCCEEDED, "Sum", "promoted"),
                promoter_metric(METRIC_PROMOTIONS_REJECTED, "Sum", "rejected"),
                promoter_metric(METRIC_INTEGRITY_REJECTIONS, "Sum", "integrity (alarmed)"),
                _rejections_by_reason(),
            ],
            left_label="decisions",
        ),
    ]


def _pipeline_row(
    function: lambda_.IFunction, dead_letter_queue: sqs.IQueue
) -> list[cloudwatch.IWidget]:
    """How it ran: the dead-letter queue's depth, the function's errors and duration."""
    return [
        _graph(
            "Dead-letter queue depth",
            [
                dead_letter_queue.metric_approximate_number_of_messages_visible(
                    period=PERIOD, statistic="Maximum", label="messages"
                )
            ],
            left_label="messages",
        ),
        _graph(
            "Promoter errors and throttles",
            [
                function.metric_errors(period=PERIOD, statistic="Sum", label="errors"),
                function.metric_throttles(period=PERIOD, statistic="Sum", label="throttles"),
                promoter_metric(METRIC_PROMOTION_ERRORS, "Sum", "promotion errors"),
                promoter_metric(METRIC_SETTINGS_ERRORS, "Sum", "settings errors (alarmed)"),
            ],
            left_label="count",
        ),
        _graph(
            "Promoter duration",
            [
                function.metric_duration(period=PERIOD, statistic=statistic, label=label)
                for statistic, label in (("p50", "p50"), ("p90", "p90"), ("Maximum", "max"))
            ],
            left_label="milliseconds",
        ),
    ]


def _fanout_graph(state_machine: sfn.IStateMachine) -> cloudwatch.IWidget:
    """The fan-out state machine's executions, the width of a row."""
    return _graph(
        "Fan-out executions",
        [
            state_machine.metric_started(period=PERIOD, label="started"),
            state_machine.metric_succeeded(period=PERIOD, label="succeeded"),
            state_machine.metric_failed(period=PERIOD, label="failed"),
            state_machine.metric_timed_out(period=PERIOD, label="timed out"),
        ],
        left_label="executions",
        width=3 * WIDTH,
    )


def _rejections_by_reason() -> cloudwatch.MathExpression:
    """One line per rejection reason the promoter has emitted (each reason is its own metric,
    so a SEARCH finds the ones that exist)."""
    search = (
        f"{{{METRICS_NAMESPACE},{METRIC_REASON_DIMENSION},{METRIC_SERVICE_DIMENSION}}} "
        f'MetricName="{METRIC_REJECTIONS_BY_REASON}" {METRIC_SERVICE_DIMENSION}="{SERVICE_NAME}"'
    )
    return cloudwatch.MathExpression(
        expression=f"SEARCH('{search}', 'Sum', {int(PERIOD.to_seconds())})",
        using_metrics={},
        period=PERIOD,
        # Empty: each line is labelled with its reason (the dimension value) by CloudWatch.
        label="",
    )


def _graph(
    title: str,
    left: Sequence[cloudwatch.IMetric],
    *,
    right: Sequence[cloudwatch.IMetric] = (),
    left_label: str,
    right_label: str | None = None,
    width: int = WIDTH,
) -> cloudwatch.GraphWidget:
    return cloudwatch.GraphWidget(
        title=title,
        left=list(left),
        right=list(right),
        left_y_axis=cloudwatch.YAxisProps(label=left_label, show_units=False, min=0),
        right_y_axis=(
            cloudwatch.YAxisProps(label=right_label, show_units=False, min=0)
            if right_label
            else None
        ),
        width=width,
        height=HEIGHT,
    )
