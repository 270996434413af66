"""The promotion dashboard: its graphs read the metrics the promoter emits, under the names
and dimensions of ``core/settings.py``, and the status page gets its URL without a cycle."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template

from stacks.dashboard import PromotionDashboard, dashboard_name, dashboard_url
from stacks.promoter_function import HANDLER
from tests.infra.resolve import REGION, Resolver
from tests.infra.synth import STACK_NAME
from wheelgate.core.env_names import ENV_DASHBOARD_URL
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
    METRIC_SETTINGS_ERRORS,
    METRICS_NAMESPACE,
    SERVICE_NAME,
)

EXPECTED_URL = (
    f"https://{REGION}.console.aws.amazon.com/cloudwatch/home?region={REGION}"
    f"#dashboards/dashboard/{STACK_NAME}-promotion"
)
SFN_METRICS = {"ExecutionsStarted", "ExecutionsSucceeded", "ExecutionsFailed", "ExecutionsTimedOut"}


def dashboard_body(template_json: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The one dashboard's name and its body, with every intrinsic resolved."""
    resolver = Resolver(template_json)
    [dashboard] = resolver.of_type("AWS::CloudWatch::Dashboard").values()
    properties = dashboard["Properties"]
    return properties["DashboardName"], json.loads(resolver.resolve(properties["DashboardBody"]))


def graphs(body: dict[str, Any]) -> dict[str, list[list[Any]]]:
    """Widget title -> its metrics (CloudWatch's array form)."""
    return {w["properties"]["title"]: w["properties"]["metrics"] for w in body["widgets"]}


def plain_metrics(body: dict[str, Any]) -> list[tuple[str, str, dict[str, str], str]]:
    """(namespace, metric, dimensions, statistic) of every metric line that is not an
    expression."""
    found = []
    for lines in graphs(body).values():
        for line in lines:
            *names, options = line
            if len(names) < 2:
                continue
            namespace, metric, *pairs = names
            dimensions = dict(zip(pairs[::2], pairs[1::2], strict=True))
            found.append((namespace, metric, dimensions, options["stat"]))
    return found


def expressions(body: dict[str, Any]) -> list[str]:
    return [
        line[0]["expression"]
        for lines in graphs(body).values()
        for line in lines
        if len(line) == 1 and "expression" in line[0]
    ]


def test_dashboard_is_named_after_the_stack_and_its_url_is_an_output(
    template_json: dict[str, Any],
) -> None:
    name, _ = dashboard_body(template_json)
    assert name == f"{STACK_NAME}-promotion"
    resolver = Resolver(template_json)
    assert resolver.resolve(template_json["Outputs"]["DashboardUrl"]["Value"]) == EXPECTED_URL


def test_the_promoter_gets_the_dashboard_url_without_referencing_the_dashboard(
    template_json: dict[str, Any],
) -> None:
    resolver = Resolver(template_json)
    [(logical_id, function)] = [
        (lid, r)
        for lid, r in resolver.of_type("AWS::Lambda::Function").items()
        if r["Properties"].get("Handler") == HANDLER
    ]
    raw = function["Properties"]["Environment"]["Variables"][ENV_DASHBOARD_URL]
    assert resolver.resolve(raw) == EXPECTED_URL
    # Built from the region and the fixed name: no reference to the dashboard, which itself
    # refers to the function (that would be a dependency cycle).
    [dashboard_id] = resolver.of_type("AWS::CloudWatch::Dashboard")
    assert dashboard_id not in json.dumps(raw)
    assert logical_id in json.dumps(template_json["Resources"][dashboard_id])


def test_promoter_metrics_match_the_names_the_promoter_emits(
    template_json: dict[str, Any],
) -> None:
    _, body = dashboard_body(template_json)
    service = {"service": SERVICE_NAME}
    ours = {
        (metric, stat)
        for namespace, metric, dimensions, stat in plain_metrics(body)
        if namespace == METRICS_NAMESPACE
    }
    assert ours == {
        (METRIC_PROMOTION_LATENCY, "p50"),
        (METRIC_PROMOTION_LATENCY, "p90"),
        (METRIC_PROMOTION_LATENCY, "Maximum"),
        (METRIC_FILES_COPIED, "Sum"),
        (METRIC_BYTES_COPIED, "Sum"),
        (METRIC_PROMOTIONS_SUCCEEDED, "Sum"),
        (METRIC_PROMOTIONS_REJECTED, "Sum"),
        (METRIC_INTEGRITY_REJECTIONS, "Sum"),
        (METRIC_PROMOTION_ERRORS, "Sum"),
        (METRIC_SETTINGS_ERRORS, "Sum"),
    }
    # Powertools gives every metric of the promoter the service dimension, and only that one.
    for namespace, metric, dimensions, _ in plain_metrics(body):
        if namespace == METRICS_NAMESPACE:
            assert dimensions == service, metric


def test_rejections_by_reason_are_a_search_over_the_reason_dimension(
    template_json: dict[str, Any],
) -> None:
    _, body = dashboard_body(template_json)
    [search] = expressions(body)
    schema = f"{{{METRICS_NAMESPACE},{METRIC_REASON_DIMENSION},service}}"
    assert search == (
        f'SEARCH(\'{schema} MetricName="{METRIC_REJECTIONS_BY_REASON}" '
        f"service=\"{SERVICE_NAME}\"', 'Sum', 300)"
    )
    lines = graphs(body)["Promotions and rejections by reason"]
    assert [{"expression": search}] in lines


def test_queue_and_function_health_are_graphed(template_json: dict[str, Any]) -> None:
    _, body = dashboard_body(template_json)
    aws = {
        (ns, metric, stat)
        for ns, metric, _, stat in plain_metrics(body)
        if ns not in (METRICS_NAMESPACE, "AWS/States")
    }
    assert aws == {
        ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum"),
        ("AWS/Lambda", "Errors", "Sum"),
        ("AWS/Lambda", "Throttles", "Sum"),
        ("AWS/Lambda", "Duration", "p50"),
        ("AWS/Lambda", "Duration", "p90"),
        ("AWS/Lambda", "Duration", "Maximum"),
    }
    # The promoter function's and the dead-letter queue's own metrics, not another's.
    resolver = Resolver(template_json)
    [function_id] = [
        lid
        for lid, r in resolver.of_type("AWS::Lambda::Function").items()
        if r["Properties"].get("Handler") == HANDLER
    ]
    [dlq_id] = [lid for lid in resolver.of_type("AWS::SQS::Queue") if "DeadLetter" in lid]
    functions = {d["FunctionName"] for ns, _, d, _ in plain_metrics(body) if ns == "AWS/Lambda"}
    queues = {d["QueueName"] for ns, _, d, _ in plain_metrics(body) if ns == "AWS/SQS"}
    assert functions == {resolver.ref(function_id)}
    assert queues == {resolver.get_att(dlq_id, "QueueName")}


def test_the_fanout_state_machine_executions_are_graphed(template_json: dict[str, Any]) -> None:
    _, body = dashboard_body(template_json)
    resolver = Resolver(template_json)
    [machine_id] = resolver.of_type("AWS::StepFunctions::StateMachine")
    states = [(m, d) for ns, m, d, _ in plain_metrics(body) if ns == "AWS/States"]
    assert {m for m, _ in states} >= {
        "ExecutionsStarted",
        "ExecutionsSucceeded",
        "ExecutionsFailed",
        "ExecutionsTimedOut",
    }
    # The stack's fan-out state machine's own executions, not another's.
    assert {d["StateMachineArn"] for _, d in states} == {resolver.ref(machine_id)}


def small_stack(with_state_machine: bool) -> dict[str, Any]:
    """A stack with only a function, a queue and (optionally) a state machine, and the
    dashboard over them."""
    app = cdk.App()
    stack = cdk.Stack(app, "Probe", env=cdk.Environment(account="111122223333", region=REGION))
    function = lambda_.Function(
        stack,
        "Fn",
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context): pass"),
    )
    queue = sqs.Queue(stack, "Dlq")
    machine = None
    if with_state_machine:
        machine = sfn.StateMachine(
            stack,
            "Machine",
            definition_body=sfn.DefinitionBody.from_chainable(sfn.Pass(stack, "P")),
        )
    PromotionDashboard(
        stack, "Dashboard", function=function, dead_letter_queue=queue, state_machine=machine
    )
    return Template.from_stack(stack).to_json()


def state_machine_lines(template: dict[str, Any]) -> list[list[Any]]:
    [dashboard] = [
        r for r in template["Resources"].values() if r["Type"] == "AWS::CloudWatch::Dashboard"
    ]
    parts = dashboard["Properties"]["DashboardBody"]["Fn::Join"][1]
    # References stand in as their logical ids so the body parses.
    text = "".join(
        p if isinstance(p, str) else p["Ref"] if "Ref" in p else p["Fn::GetAtt"][0] for p in parts
    )
    body = json.loads(text)
    return [
        line
        for lines in graphs(body).values()
        for line in lines
        if len(line) > 1 and line[0] == "AWS/States"
    ]


def test_state_machine_executions_are_graphed_only_when_given() -> None:
    # Given the dashboard over a state machine
    lines = state_machine_lines(small_stack(with_state_machine=True))
    # Then its executions started, succeeded, failed and timed out are graphed, for it alone
    assert {line[1] for line in lines} == SFN_METRICS
    assert all(line[2] == "StateMachineArn" for line in lines)
    assert all(line[3].startswith("Machine") for line in lines)
    # And without one, there is no such graph
    assert state_machine_lines(small_stack(with_state_machine=False)) == []


def test_dashboard_names_follow_cloudwatch_rules() -> None:
    assert dashboard_name("WheelGate-dev") == "WheelGate-dev-promotion"
    with pytest.raises(ValueError, match="must be at most 255 letters"):
        dashboard_name("x" * 250)
    with pytest.raises(ValueError, match=r"from stack 'a\.b'"):
        dashboard_name("a.b")
    assert dashboard_url("eu-west-1", "n").startswith("https://eu-west-1.console.aws.amazon.com/")
