"""Fan-out promotion: the state machine's definition, its role, the promoter's grants and env."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Match, Template

from app import LAYER_DIR
from stacks.context import props_from_context
from stacks.fanout_machine import (
    ANY_TO_HASH,
    CONCLUDE,
    COPY_FILE,
    COPY_FILES,
    EXECUTION_STATUS_CHANGE,
    FAILED,
    HASH_FILE,
    HASH_FILES,
    JOB_KEYS,
    PROMOTED,
    PUBLISH,
    state_machine_name,
)
from stacks.wheelgate import WheelGate
from tests.infra.resolve import ACCOUNT, PARTITION, REGION, Resolver
from tests.infra.synth import Synthesis, cdk_json_context
from tests.infra.test_nag import _acknowledgements
from tests.infra.test_promoter import _function as _promoter_function
from wheelgate.core.env_names import (
    ENV_DEAD_LETTER_QUEUE_URL,
    ENV_FANOUT_MIN_BYTES,
    ENV_FANOUT_MIN_FILES,
    ENV_FANOUT_STATE_MACHINE_ARN,
    ENV_MANIFEST_QUEUE_URL,
)
from wheelgate.core.errors import PromotionRejected
from wheelgate.core.fanout_steps import FANOUT_REJECTED_ERROR, FANOUT_STEP_FIELD
from wheelgate.core.layout import STAGING
from wheelgate.core.limits import (
    FANOUT_ITEM_RETRY_ATTEMPTS,
    FANOUT_ITEM_RETRY_BACKOFF,
    FANOUT_ITEM_RETRY_INTERVAL_SECONDS,
    FANOUT_TIMEOUT_SECONDS,
)
from wheelgate.core.settings import DEFAULT_FANOUT_COPY_CONCURRENCY, DEFAULT_FANOUT_HASH_CONCURRENCY

STATE_MACHINE_ARN = f"arn:{PARTITION}:states:{REGION}:{ACCOUNT}:stateMachine:WheelGate-fanout"
EXECUTIONS = f"arn:{PARTITION}:states:{REGION}:{ACCOUNT}:execution:WheelGate-fanout"
LAMBDA_INVOKE = f"arn:{PARTITION}:states:::lambda:invoke"
RETRY = [
    # A refusal is final: never retried.
    {"ErrorEquals": [FANOUT_REJECTED_ERROR], "MaxAttempts": 0},
    {
        "ErrorEquals": ["States.ALL"],
        "IntervalSeconds": FANOUT_ITEM_RETRY_INTERVAL_SECONDS,
        "MaxAttempts": FANOUT_ITEM_RETRY_ATTEMPTS,
        "BackoffRate": FANOUT_ITEM_RETRY_BACKOFF,
    },
]
CATCH = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": CONCLUDE}]


def _state_machine(template_json: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    ((logical_id, machine),) = (
        Resolver(template_json).of_type("AWS::StepFunctions::StateMachine").items()
    )
    return logical_id, machine["Properties"]


def _definition(template_json: dict[str, Any]) -> dict[str, Any]:
    _, props = _state_machine(template_json)
    definition: dict[str, Any] = json.loads(
        Resolver(template_json).resolve(props["DefinitionString"])
    )
    return definition


def _allowed(documents: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(action, resource) of every Allow statement of ``documents``."""
    pairs = set()
    for document in documents:
        for statement in document["Statement"]:
            if statement["Effect"] != "Allow":
                continue
            actions, resources = statement["Action"], statement["Resource"]
            for action in [actions] if isinstance(actions, str) else actions:
                for resource in [resources] if isinstance(resources, str) else resources:
                    pairs.add((action, resource))
    return pairs


def test_definition_hashes_then_copies_then_publishes_and_catches_into_conclude(
    template_json: dict[str, Any],
) -> None:
    definition = _definition(template_json)
    states = definition["States"]
    assert set(states) == {
        ANY_TO_HASH,
        HASH_FILES,
        COPY_FILES,
        PUBLISH,
        PROMOTED,
        CONCLUDE,
        FAILED,
    }
    # A job with files to hash -> hash map -> copy map; one without -> copy map: every hash
    # read ends before the first copy
    assert definition["StartAt"] == ANY_TO_HASH
    assert states[ANY_TO_HASH] == {
        "Type": "Choice",
        "Choices": [{"Variable": "$.hash_items", "NumericGreaterThan": 0, "Next": HASH_FILES}],
        "Default": COPY_FILES,
    }
    assert states[HASH_FILES]["Type"] == "Map"
    assert states[HASH_FILES]["Next"] == COPY_FILES
    assert states[COPY_FILES]["Type"] == "Map"
    assert states[COPY_FILES]["Next"] == PUBLISH
    assert states[PUBLISH]["Next"] == PROMOTED
    assert states[PROMOTED] == {"Type": "Succeed"}
    # Any failure of a map or of publish -> conclude -> Fail, with the caught error
    assert states[HASH_FILES]["Catch"] == CATCH
    assert states[COPY_FILES]["Catch"] == CATCH
    assert states[PUBLISH]["Catch"] == CATCH
    assert "Catch" not in states[CONCLUDE]
    assert states[CONCLUDE]["Next"] == FAILED
    assert states[FAILED] == {
        "Type": "Fail",
        "ErrorPath": "$.error.Error",
        "CausePath": "$.error.Cause",
    }
    assert definition["TimeoutSeconds"] == FANOUT_TIMEOUT_SECONDS


@pytest.mark.parametrize(
    ("map_state", "item_state", "items_key"),
    [(HASH_FILES, HASH_FILE, "$.hash_items_key"), (COPY_FILES, COPY_FILE, "$.items_key")],
)
def test_maps_read_the_jobs_items_from_staging(
    template_json: dict[str, Any], map_state: str, item_state: str, items_key: str
) -> None:
    copy_files = _definition(template_json)["States"][map_state]
    assert copy_files["ItemReader"] == {
        "Resource": f"arn:{PARTITION}:states:::s3:getObject",
        "ReaderConfig": {"InputType": "JSON"},
        "Parameters": {"Bucket.$": "$.bucket", "Key.$": items_key},
    }
    assert copy_files["ItemSelector"] == {
        "job_id.$": "$.job_id",
        "item.$": "$$.Map.Item.Value.item",
    }
    assert copy_files["ItemProcessor"]["ProcessorConfig"] == {
        "Mode": "DISTRIBUTED",
        "ExecutionType": "STANDARD",
    }
    # No tolerated failures: one file that cannot be copied fails the map.
    assert not {k for k in copy_files if k.startswith("ToleratedFailure")}
    # The map's result is discarded: publish and conclude read the execution's input.
    assert copy_files["ResultPath"] is None
    assert copy_files["ItemProcessor"]["StartAt"] == item_state
    assert set(copy_files["ItemProcessor"]["States"]) == {item_state}


def test_each_map_runs_as_many_items_at_once_as_its_setting(
    template_json: dict[str, Any],
) -> None:
    # Given cdk.json, which leaves the fanout concurrency settings at their defaults
    states = _definition(template_json)["States"]
    assert states[HASH_FILES]["MaxConcurrency"] == DEFAULT_FANOUT_HASH_CONCURRENCY
    assert states[COPY_FILES]["MaxConcurrency"] == DEFAULT_FANOUT_COPY_CONCURRENCY
    # Given settings that differ for each map, then each map carries its own
    context = cdk_json_context()
    settings = {**context["wheelgate"]["fanout"], "hash_concurrency": 120, "copy_concurrency": 340}
    context["wheelgate"] = {**context["wheelgate"], "fanout": settings}
    app = cdk.App(context=context, analytics_reporting=False)
    stack = cdk.Stack(app, "Concurrency")
    WheelGate(stack, "Default", props_from_context(context), layer_dir=LAYER_DIR)
    states = _definition(Template.from_stack(stack).to_json())["States"]
    assert (states[HASH_FILES]["MaxConcurrency"], states[COPY_FILES]["MaxConcurrency"]) == (
        120,
        340,
    )


def test_each_step_invokes_the_promoter_function_with_its_step(
    template_json: dict[str, Any],
) -> None:
    definition = _definition(template_json)
    function_id, _ = _promoter_function(template_json)
    function_arn = Resolver(template_json).get_att(function_id, "Arn")
    copy_file = definition["States"][COPY_FILES]["ItemProcessor"]["States"][COPY_FILE]
    hash_file = definition["States"][HASH_FILES]["ItemProcessor"]["States"][HASH_FILE]
    steps = {
        "hash": (hash_file, {"job_id.$": "$.job_id", "item.$": "$.item"}),
        "copy": (copy_file, {"job_id.$": "$.job_id", "item.$": "$.item"}),
        "publish": (definition["States"][PUBLISH], {"job_id.$": "$.job_id"}),
        "conclude": (
            definition["States"][CONCLUDE],
            {"job_id.$": "$.job_id", "error.$": "$.error"},
        ),
    }
    for name, (state, fields) in steps.items():
        assert state["Type"] == "Task", name
        assert state["Resource"] == LAMBDA_INVOKE, name
        assert state["Parameters"] == {
            "FunctionName": function_arn,
            "Payload": {FANOUT_STEP_FIELD: name, **fields},
        }, name
        assert state["ResultPath"] is None, name
    # A child's output is what the map gathers (AWS's 256 KiB result limit): the number.
    for item_step in (hash_file, copy_file):
        assert item_step["OutputPath"] == "$.item"
        assert item_step["End"] is True


def test_retriers_never_retry_a_refusal_and_use_the_settings_numbers(
    template_json: dict[str, Any],
) -> None:
    definition = _definition(template_json)
    copy_file = definition["States"][COPY_FILES]["ItemProcessor"]["States"][COPY_FILE]
    hash_file = definition["States"][HASH_FILES]["ItemProcessor"]["States"][HASH_FILE]
    for state in (
        hash_file,
        copy_file,
        definition["States"][PUBLISH],
        definition["States"][CONCLUDE],
    ):
        # Exactly these, in this order: Step Functions takes the first retrier that matches.
        assert state["Retry"] == RETRY
    # The error name is the class name Lambda reports for the step's exception.
    assert PromotionRejected.__name__ == FANOUT_REJECTED_ERROR


def test_state_machine_is_named_logged_and_traced(template_json: dict[str, Any]) -> None:
    _, props = _state_machine(template_json)
    resolver = Resolver(template_json)
    assert props["StateMachineName"] == "WheelGate-fanout"
    assert props["StateMachineType"] == "STANDARD"
    assert props["TracingConfiguration"] == {"Enabled": True}
    logging = props["LoggingConfiguration"]
    assert logging["Level"] == "ALL"
    assert logging["IncludeExecutionData"] is True
    (destination,) = logging["Destinations"]
    log_group_id = destination["CloudWatchLogsLogGroup"]["LogGroupArn"]["Fn::GetAtt"][0]
    retention = resolver.resources[log_group_id]["Properties"]["RetentionInDays"]
    assert retention == cdk_json_context()["wheelgate"]["log_retention_days"]
    assert props["RoleArn"] == {"Fn::GetAtt": [resolver.logical_id("fanout"), "Arn"]}


def test_promoter_environment_names_the_state_machine_without_a_reference(
    template_json: dict[str, Any],
) -> None:
    resolver = Resolver(template_json)
    machine_id, _ = _state_machine(template_json)
    _, function = _promoter_function(template_json)
    raw = function["Environment"]["Variables"]
    env = resolver.resolve(raw)
    # The same ARN as the state machine's own, built from its fixed name: a reference from the
    # function to the state machine that invokes it would be a CloudFormation cycle.
    assert env[ENV_FANOUT_STATE_MACHINE_ARN] == resolver.ref(machine_id) == STATE_MACHINE_ARN
    assert machine_id not in json.dumps(raw[ENV_FANOUT_STATE_MACHINE_ARN])
    fanout = cdk_json_context()["wheelgate"]["fanout"]
    assert env[ENV_FANOUT_MIN_FILES] == str(fanout["min_files"])
    assert env[ENV_FANOUT_MIN_BYTES] == str(fanout["min_bytes"])
    queues = resolver.of_type("AWS::SQS::Queue")
    (main_id,) = [lid for lid, q in queues.items() if "RedrivePolicy" in q["Properties"]]
    dlq_id = queues[main_id]["Properties"]["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
    assert env[ENV_MANIFEST_QUEUE_URL] == resolver.ref(main_id)
    assert env[ENV_DEAD_LETTER_QUEUE_URL] == resolver.ref(dlq_id)


def test_promoter_role_starts_this_state_machine_and_requeues_to_its_queues_only(
    template_json: dict[str, Any],
) -> None:
    resolver = Resolver(template_json)
    allowed = _allowed(resolver.role_policies("promoter"))
    assert {p for p in allowed if p[0].startswith("states:")} == {
        ("states:StartExecution", STATE_MACHINE_ARN)
    }
    queues = resolver.of_type("AWS::SQS::Queue")
    assert {p for p in allowed if p[0] == "sqs:SendMessage"} == {
        ("sqs:SendMessage", resolver.get_att(lid, "Arn")) for lid in queues
    }


def test_state_machine_role_has_exactly_its_actions(template_json: dict[str, Any]) -> None:
    resolver = Resolver(template_json)
    function_id, _ = _promoter_function(template_json)
    function_arn = resolver.get_att(function_id, "Arn")
    staging = f"arn:{PARTITION}:s3:::wheelgate-staging"
    allowed = _allowed(resolver.role_policies("fanout"))
    unscoped = {action for action, resource in allowed if resource == "*"}
    assert allowed - {(action, "*") for action in unscoped} == {
        # The promoter function (and its versions) only.
        ("lambda:InvokeFunction", function_arn),
        ("lambda:InvokeFunction", f"{function_arn}:*"),
        # The job objects only (the items the map reads), never other staging keys.
        ("s3:GetObject", f"{staging}/{JOB_KEYS}"),
        # Its own executions: the Distributed Map's child executions and their redrive.
        ("states:StartExecution", STATE_MACHINE_ARN),
        ("states:DescribeExecution", f"{EXECUTIONS}:*"),
        ("states:StopExecution", f"{EXECUTIONS}:*"),
        ("states:RedriveExecution", f"{EXECUTIONS}/*:*"),
    }
    # Only actions without resource-level permissions are granted on every resource.
    assert unscoped == {
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
        "xray:GetSamplingRules",
        "xray:GetSamplingTargets",
        "logs:CreateLogDelivery",
        "logs:GetLogDelivery",
        "logs:UpdateLogDelivery",
        "logs:DeleteLogDelivery",
        "logs:ListLogDeliveries",
        "logs:PutResourcePolicy",
        "logs:DescribeResourcePolicies",
        "logs:DescribeLogGroups",
    }
    # Both maps' item readers read under the job keys.
    for items_key in (STAGING.job_items("12345-1"), STAGING.job_hash_items("12345-1")):
        assert f"{staging}/{items_key}".startswith(f"{staging}/{JOB_KEYS}".rstrip("*"))


def test_state_machine_role_trusts_step_functions_of_this_account(
    template_json: dict[str, Any],
) -> None:
    (statement,) = Resolver(template_json).trust_policy("fanout")["Statement"]
    assert statement["Principal"] == {"Service": "states.amazonaws.com"}
    assert statement["Action"] == "sts:AssumeRole"
    assert statement["Condition"] == {"StringEquals": {"aws:SourceAccount": ACCOUNT}}


def test_alarms_on_failed_timed_out_and_aborted_executions(
    template: Template, template_json: dict[str, Any]
) -> None:
    machine_id, _ = _state_machine(template_json)
    for metric in ("ExecutionsFailed", "ExecutionsTimedOut", "ExecutionsAborted"):
        template.has_resource_properties(
            "AWS::CloudWatch::Alarm",
            {
                "Namespace": "AWS/States",
                "MetricName": metric,
                "Dimensions": [{"Name": "StateMachineArn", "Value": {"Ref": machine_id}}],
                "Statistic": "Sum",
                "Threshold": 1,
                "AlarmActions": [{"Ref": Match.string_like_regexp("^MonitoringAlarmTopic")}],
            },
        )


def test_an_execution_ended_without_its_catch_is_concluded_by_the_promoter(
    template_json: dict[str, Any],
) -> None:
    # A timed-out or stopped execution runs no Conclude: EventBridge hands its status change
    # to the promoter function as the conclude step of the job the execution is named after.
    machine_id, _ = _state_machine(template_json)
    resolver = Resolver(template_json)
    [rule] = resolver.of_type("AWS::Events::Rule").values()
    properties = rule["Properties"]
    assert properties["EventPattern"] == {
        "source": ["aws.states"],
        "detail-type": [EXECUTION_STATUS_CHANGE],
        "detail": {
            "status": ["TIMED_OUT", "ABORTED"],
            "stateMachineArn": [{"Ref": machine_id}],
        },
    }
    [target] = properties["Targets"]
    [function_id] = [
        lid
        for lid, r in resolver.of_type("AWS::Lambda::Function").items()
        if r["Properties"].get("Handler") == "wheelgate.lambda_function.handler.lambda_handler"
    ]
    assert target["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]}
    transformer = target["InputTransformer"]
    paths = transformer["InputPathsMap"]
    step = json.loads(
        transformer["InputTemplate"]
        .replace("<" + next(k for k, v in paths.items() if v == "$.detail.name") + ">", '"J"')
        .replace("<" + next(k for k, v in paths.items() if v == "$.detail.status") + ">", '"S"')
    )
    assert step == {
        FANOUT_STEP_FIELD: "conclude",
        "job_id": "J",
        "error": {"Error": "S", "Cause": "the execution ended without its conclude step"},
    }
    # The function lets exactly this rule invoke it.
    [permission] = [
        r["Properties"]
        for r in resolver.of_type("AWS::Lambda::Permission").values()
        if r["Properties"].get("Principal") == "events.amazonaws.com"
    ]
    assert permission["SourceArn"] == {
        "Fn::GetAtt": [next(iter(resolver.of_type("AWS::Events::Rule"))), "Arn"]
    }


def test_stack_exposes_the_state_machine_and_its_arn(template_json: dict[str, Any]) -> None:
    # The dashboard graphs ExecutionsStarted/Succeeded/Failed of stack.fanout.state_machine.
    app = cdk.App(context=cdk_json_context(), analytics_reporting=False)
    gate = WheelGate(
        cdk.Stack(app, "Exposed"),
        "Default",
        props_from_context(app.node.get_all_context()),
        layer_dir=LAYER_DIR,
    )
    assert isinstance(gate.fanout.state_machine, sfn.StateMachine)
    assert gate.fanout.state_machine.metric_started().metric_name == "ExecutionsStarted"
    machine_id, _ = _state_machine(template_json)
    outputs = template_json["Outputs"]
    assert outputs["FanOutStateMachineArn"]["Value"] == {"Ref": machine_id}


def test_a_stack_name_too_long_for_the_state_machine_is_refused() -> None:
    app = cdk.App(analytics_reporting=False)
    assert state_machine_name(cdk.Stack(app, "W" * 73)) == "W" * 73 + "-fanout"
    with pytest.raises(ValueError, match="longer than 80 characters"):
        state_machine_name(cdk.Stack(app, "W" * 74))


def test_nag_acknowledgements_are_on_the_fanout_policies_alone(synthesis: Synthesis) -> None:
    acknowledged = {
        (path.removeprefix("/WheelGate/Default/FanOut/"), rule)
        for path, rule, _ in _acknowledgements(synthesis.outdir)
        if path.startswith("/WheelGate/Default/FanOut/")
    }
    function_id, _ = _promoter_function(synthesis.template)
    machine_id, _ = _state_machine(synthesis.template)
    staging_id = Resolver(synthesis.template).logical_id("wheelgate-staging")
    name = f'{{"Fn::Select":[6,{{"Fn::Split":[":",{{"Ref":"{machine_id}"}}]}}]}}'
    executions = f"arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:{name}"
    assert acknowledged == {
        ("Role/DefaultPolicy", "AwsSolutions-IAM5[Resource::*]"),
        ("Role/DefaultPolicy", f"AwsSolutions-IAM5[Resource::<{function_id}.Arn>:*]"),
        ("JobAccess", f"AwsSolutions-IAM5[Resource::<{staging_id}.Arn>/{JOB_KEYS}]"),
        ("StateMachine/DistributedMapPolicy", f"AwsSolutions-IAM5[Resource::{executions}:*]"),
        ("StateMachine/DistributedMapPolicy", f"AwsSolutions-IAM5[Resource::{executions}/*:*]"),
    }


def test_the_alarms_on_ended_executions_say_the_rule_concludes_them(
    template_json: dict[str, Any],
) -> None:
    # A timed-out or stopped execution is concluded by the EndedWithoutConclude rule: its
    # alarm must not tell on-call that the run stays leased with nothing to run the conclude.
    alarms = Resolver(template_json).of_type("AWS::CloudWatch::Alarm").values()
    said = {
        a["Properties"]["MetricName"]: a["Properties"]["AlarmDescription"]
        for a in alarms
        if a["Properties"].get("Namespace") == "AWS/States"
    }
    for metric in ("ExecutionsTimedOut", "ExecutionsAborted"):
        assert "EndedWithoutConclude rule ran its conclude step" in said[metric], said[metric]
        assert "re-queued" in said[metric]
