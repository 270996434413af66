"""Fan-out promotion: the Step Functions state machine that copies a large set file by file.

The promoter verifies a run as always; when its copies reach the fan-out thresholds it writes
the job (``records/_jobs/<job>/``) and starts an execution of this state machine with
``{"job_id", "bucket", "items_key", "hash_items_key"}``. The execution runs the promoter
function's steps (``FANOUT_STEP_FIELD``): one ``hash`` per file whose staged bytes S3 has no
SHA-256 of (a Distributed Map over the job's hash items: every check before the first copy),
then one ``copy`` per file (a Distributed Map over the job's items), then ``publish``; on any
failure, ``conclude`` records it and gives the job's leases back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aws_cdk import ArnFormat, Aws, Duration, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from wheelgate.core.fanout_steps import FANOUT_REJECTED_ERROR, FANOUT_STEP_FIELD
from wheelgate.core.layout import JOBS_DIR, RECORDS_PREFIX
from wheelgate.core.limits import (
    FANOUT_ITEM_RETRY_ATTEMPTS,
    FANOUT_ITEM_RETRY_BACKOFF,
    FANOUT_ITEM_RETRY_INTERVAL_SECONDS,
    FANOUT_TIMEOUT_SECONDS,
)

from .log_groups import retained_log_group
from .nag import acknowledge, acknowledge_resource_wildcards, nag_text

#: The state machine's name is the stack's name with this suffix: fixed, so that the promoter's
#: environment and policy can name it before it exists (see :func:`state_machine_arn`).
NAME_SUFFIX = "-fanout"
# Step Functions: a state machine name has 1 to 80 characters.
MAX_NAME_LENGTH = 80
#: Every job object (plan, items, done markers): the only staging keys the state machine reads.
JOB_KEYS = f"{RECORDS_PREFIX}{JOBS_DIR}*"

#: Execution statuses that end an execution without its catch (so without ``Conclude``):
#: EventBridge hands them to the conclude step.
ENDED_WITHOUT_CONCLUDE = ("TIMED_OUT", "ABORTED")
#: EventBridge's detail type of an execution's status change (Step Functions' own events).
EXECUTION_STATUS_CHANGE = "Step Functions Execution Status Change"

#: Names of the states, as the execution history and the console show them.
ANY_TO_HASH = "AnyToHash"
HASH_FILES = "HashFiles"
HASH_FILE = "HashFile"
COPY_FILES = "CopyFiles"
COPY_FILE = "CopyFile"
PUBLISH = "Publish"
CONCLUDE = "Conclude"
PROMOTED = "Promoted"
FAILED = "Failed"


def state_machine_name(stack: Stack) -> str:
    """The fan-out state machine's name in ``stack``.

    Raises ``ValueError`` when the stack's name makes it longer than Step Functions allows.
    """
    name = f"{stack.stack_name}{NAME_SUFFIX}"
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(
            f"state machine name {name!r} is longer than {MAX_NAME_LENGTH} characters: "
            f"give the stack a name of at most {MAX_NAME_LENGTH - len(NAME_SUFFIX)}"
        )
    return name


def state_machine_arn(stack: Stack) -> str:
    """The fan-out state machine's ARN, built from its fixed name, not a reference to it.

    The promoter function's environment and its role's policy name the state machine, and the
    state machine invokes the function: a reference would be a CloudFormation cycle.
    """
    return stack.format_arn(
        service="states",
        resource="stateMachine",
        resource_name=state_machine_name(stack),
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )


class FanOut(Construct):
    """The fan-out state machine, its role and its log group.

    The definition (names in ``wheelgate.core.settings``): a Distributed Map
    (``HASH_FILES``) reads the JSON array of hash items at ``$.bucket``/``$.hash_items_key``
    and runs one ``hash`` step of ``function`` per item; then a Distributed Map
    (``COPY_FILES``) reads the items at ``$.bucket``/``$.items_key`` and runs one ``copy``
    step per item; the first at most ``hash_concurrency`` items at once, the second at most
    ``copy_concurrency`` (each map's ``MaxConcurrency``), with no tolerated failures; then
    ``publish``, then ``PROMOTED`` (Succeed). Every step retries any error but
    ``FANOUT_REJECTED_ERROR`` (``FANOUT_ITEM_RETRY_*``). A failure of a map or of publish is
    caught into ``$.error`` and runs ``conclude``, then ``FAILED`` (Fail, with the caught
    error). An execution times out after ``FANOUT_TIMEOUT_SECONDS``.

    Attributes:
        state_machine: the state machine (its metrics: ``ExecutionsStarted`` ...).
        state_machine_arn: its ARN as :func:`state_machine_arn` builds it (no reference).
        role: the state machine's role: invokes ``function`` only, reads only ``JOB_KEYS`` of
            ``staging``, and starts, describes, stops and redrives its own executions (the
            Distributed Map's child executions).
        log_group: its execution log (every event, with execution data).

    Raises ``ValueError`` for a log retention CloudWatch Logs does not offer or a stack name
    too long for the state machine's name.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function: lambda_.IFunction,
        staging: s3.IBucket,
        log_retention_days: int,
        hash_concurrency: int,
        copy_concurrency: int,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.state_machine_arn = state_machine_arn(stack)
        self.log_group = retained_log_group(self, "Logs", retention_days=log_retention_days)
        self.role = self._role(staging)
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            state_machine_name=state_machine_name(stack),
            state_machine_type=sfn.StateMachineType.STANDARD,
            definition_body=sfn.DefinitionBody.from_chainable(
                self._definition(function, hash_concurrency, copy_concurrency)
            ),
            role=self.role,
            timeout=Duration.seconds(FANOUT_TIMEOUT_SECONDS),
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=self.log_group, level=sfn.LogLevel.ALL, include_execution_data=True
            ),
        )
        self._acknowledge_service_wildcards(function)
        self._acknowledge_own_executions()
        self.ended_rule = self._conclude_when_ended(function)

    def _role(self, staging: s3.IBucket) -> iam.Role:
        """The state machine's role, with its policy to read the jobs' items."""
        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal(
                "states.amazonaws.com",
                conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
            ),
            description="WheelGate fan-out promotion state machine",
        )
        read_jobs = iam.PolicyStatement(
            # The Distributed Maps read the job's items and hash items (the item readers' S3
            # GetObject).
            sid="ReadJobItems",
            actions=["s3:GetObject"],
            resources=[staging.arn_for_objects(JOB_KEYS)],
        )
        job_policy = iam.Policy(self, "JobAccess", roles=[role], statements=[read_jobs])
        acknowledge_resource_wildcards(
            job_policy,
            [read_jobs],
            "S3 object ARNs can only name the jobs' key prefix (records/_jobs/) with a wildcard; "
            "job ids are chosen at run time.",
        )
        return role

    def _definition(
        self, function: lambda_.IFunction, hash_concurrency: int, copy_concurrency: int
    ) -> sfn.IChainable:
        """The states (see the class's docstring), from the first: ``ANY_TO_HASH``."""
        hash_files = self._item_map(
            function, HASH_FILES, HASH_FILE, "hash", "$.hash_items_key", hash_concurrency
        )
        copy_files = self._item_map(
            function, COPY_FILES, COPY_FILE, "copy", "$.items_key", copy_concurrency
        )
        job_id = sfn.JsonPath.string_at("$.job_id")
        publish = self._step(function, PUBLISH, {FANOUT_STEP_FIELD: "publish", "job_id": job_id})
        conclude = self._step(
            function,
            CONCLUDE,
            {
                FANOUT_STEP_FIELD: "conclude",
                "job_id": job_id,
                "error": sfn.JsonPath.object_at("$.error"),
            },
        )
        conclude.next(
            sfn.Fail(self, FAILED, error_path="$.error.Error", cause_path="$.error.Cause")
        )
        for state in (hash_files, copy_files, publish):
            state.add_catch(conclude, errors=[sfn.Errors.ALL], result_path="$.error")

        copy_files.next(publish).next(sfn.Succeed(self, PROMOTED))
        # Most jobs have nothing to hash (S3 holds the SHA-256 of every file staged in one
        # request): skip the hash map rather than run a Distributed Map over an empty list.
        return (
            sfn.Choice(self, ANY_TO_HASH)
            .when(
                sfn.Condition.number_greater_than("$.hash_items", 0),
                hash_files.next(copy_files),
            )
            .otherwise(copy_files)
        )

    def _step(
        self,
        function: lambda_.IFunction,
        construct_id: str,
        payload: Mapping[str, Any],
        output_path: str | None = None,
    ) -> tasks.LambdaInvoke:
        """A state that invokes ``function`` with ``payload``, retrying as the contract says."""
        task = tasks.LambdaInvoke(
            self,
            construct_id,
            lambda_function=function,
            payload=sfn.TaskInput.from_object(dict(payload)),
            # The retriers below are all of them, in the contract's order; States.ALL
            # already covers Lambda's own service errors.
            retry_on_service_exceptions=False,
            # Steps report through their records; the state keeps the execution's input.
            result_path=sfn.JsonPath.DISCARD,
            output_path=output_path,
        )
        task.add_retry(errors=[FANOUT_REJECTED_ERROR], max_attempts=0)
        task.add_retry(
            errors=[sfn.Errors.ALL],
            max_attempts=FANOUT_ITEM_RETRY_ATTEMPTS,
            interval=Duration.seconds(FANOUT_ITEM_RETRY_INTERVAL_SECONDS),
            backoff_rate=FANOUT_ITEM_RETRY_BACKOFF,
        )
        return task

    def _item_map(
        self,
        function: lambda_.IFunction,
        map_id: str,
        step_id: str,
        step_name: str,
        items_key: str,
        concurrency: int,
    ) -> sfn.DistributedMap:
        """A Distributed Map running step ``step_name`` once per item at ``items_key``, at
        most ``concurrency`` at once."""
        job_id = sfn.JsonPath.string_at("$.job_id")
        item_step = self._step(
            function,
            step_id,
            {
                FANOUT_STEP_FIELD: step_name,
                "job_id": job_id,
                "item": sfn.JsonPath.number_at("$.item"),
            },
            # The map gathers every child's output into its result; AWS documents the
            # 256 KiB payload limit for that result (ResultWriter is its way around), and
            # not whether a discarding ResultPath lifts it: keep each output to the item.
            output_path="$.item",
        )
        items = sfn.DistributedMap(
            self,
            map_id,
            item_reader=sfn.S3JsonItemReader(
                bucket_name_path=sfn.JsonPath.string_at("$.bucket"),
                key=sfn.JsonPath.string_at(items_key),
            ),
            item_selector={
                "job_id": job_id,
                "item": sfn.JsonPath.number_at("$$.Map.Item.Value.item"),
            },
            max_concurrency=concurrency,
            result_path=sfn.JsonPath.DISCARD,
        )
        items.item_processor(item_step)
        return items

    def _conclude_when_ended(self, function: lambda_.IFunction) -> events.Rule:
        """A timed-out or stopped execution runs no catch, so no Conclude: without this rule its
        leases would block the directories until FANOUT_LEASE_SECONDS and its manifest would
        wait for someone to write it again. EventBridge sends the status change to the same
        conclude step (the execution's name is the job id), which gives the leases back and
        sends the manifest's event back to the queue, or to the DLQ after the last attempt."""
        return events.Rule(
            self,
            "EndedWithoutConclude",
            description="A fan-out execution that timed out or was stopped: run its conclude step",
            event_pattern=events.EventPattern(
                source=["aws.states"],
                detail_type=[EXECUTION_STATUS_CHANGE],
                detail={
                    "status": list(ENDED_WITHOUT_CONCLUDE),
                    "stateMachineArn": [self.state_machine.state_machine_arn],
                },
            ),
            targets=[
                targets.LambdaFunction(
                    function,
                    event=events.RuleTargetInput.from_object(
                        {
                            FANOUT_STEP_FIELD: "conclude",
                            "job_id": events.EventField.from_path("$.detail.name"),
                            "error": {
                                "Error": events.EventField.from_path("$.detail.status"),
                                "Cause": "the execution ended without its conclude step",
                            },
                        }
                    ),
                    retry_attempts=FANOUT_ITEM_RETRY_ATTEMPTS,
                )
            ],
        )

    def grant_start_execution(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` start executions of this state machine, and nothing else of it.

        Names the state machine by :attr:`state_machine_arn`, so the promoter role (whose
        function the state machine invokes) can be granted without a cycle.
        """
        return iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["states:StartExecution"],
            resource_arns=[self.state_machine_arn],
        )

    def _acknowledge_own_executions(self) -> None:
        """The Distributed Map's policy (CDK's): its child executions and map runs are named by
        Step Functions at run time, under this state machine's name."""
        policy = self.state_machine.node.find_child("DistributedMapPolicy")
        resource = self.state_machine.node.default_child
        assert isinstance(resource, sfn.CfnStateMachine)
        # cdk-nag spells the state machine's name (CDK takes it from the ARN) as raw JSON.
        name = json.dumps(
            {
                "Fn::Select": [
                    6,
                    {"Fn::Split": [":", {"Ref": Stack.of(self).get_logical_id(resource)}]},
                ]
            },
            separators=(",", ":"),
        )
        stack = Stack.of(self)
        # <AWS::Region> and <AWS::AccountId>, or their values in a stack with an environment.
        partition, region, account = (
            nag_text(self, value) for value in (stack.partition, stack.region, stack.account)
        )
        executions = f"arn:{partition}:states:{region}:{account}:execution:{name}"
        for suffix, what in ((":*", "its executions"), ("/*:*", "its map runs' executions")):
            acknowledge(
                policy,
                f"AwsSolutions-IAM5[Resource::{executions}{suffix}]",
                f"Describe, stop and redrive {what}: Step Functions names them at run time, "
                "under this state machine's name only.",
            )

    def _acknowledge_service_wildcards(self, function: lambda_.IFunction) -> None:
        default_policy = self.role.node.try_find_child("DefaultPolicy")
        if default_policy is not None:
            acknowledge(
                default_policy,
                "AwsSolutions-IAM5[Resource::*]",
                "X-Ray tracing (xray:PutTraceSegments, PutTelemetryRecords, GetSampling*) and "
                "vended log delivery (logs:CreateLogDelivery, PutResourcePolicy, ...) have no "
                "resource-level permissions.",
            )
            acknowledge(
                default_policy,
                f"AwsSolutions-IAM5[Resource::{nag_text(self, function.function_arn)}:*]",
                "lambda:InvokeFunction on the promoter function's versions and aliases "
                "(<arn>:*), as the Lambda task grants it: still the promoter function alone.",
            )
