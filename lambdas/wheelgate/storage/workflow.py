"""Step Functions and SQS adapters of fan-out promotion: start an execution, send a message.

Each takes its boto3 client; errors are translated here (:mod:`wheelgate.storage.errors`): an
unreachable endpoint, a timeout or throttling is :class:`StorageUnavailable` (a
:class:`~wheelgate.core.errors.TransientError`), a refusal :class:`AccessError`; either way the
caller's message or step fails and is retried.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import ClientError

from wheelgate.storage.errors import endpoint_of, error_code, translated

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


class StepFunctionsClient(Protocol):
    """The one call of boto3's ``stepfunctions`` client used here (no stub package needed)."""

    def start_execution(self, **kwargs: Any) -> Mapping[str, Any]: ...


def execution_arn(state_machine_arn: str, name: str) -> str:
    """The ARN of execution ``name`` of a standard state machine
    (``arn:<partition>:states:<region>:<account>:stateMachine:<machine>``)."""
    parts = state_machine_arn.split(":")
    if len(parts) != 7 or parts[2] != "states" or parts[5] != "stateMachine":
        raise ValueError(f"not a Step Functions state machine ARN: {state_machine_arn!r}")
    return ":".join([*parts[:5], "execution", parts[6], name])


class StepFunctionsLauncher:
    """Starts fan-out executions of one state machine, named after their job."""

    def __init__(self, client: StepFunctionsClient, state_machine_arn: str) -> None:
        self._client = client
        self.state_machine_arn = state_machine_arn

    def start(
        self, *, job_id: str, bucket: str, items_key: str, hash_items_key: str, hash_items: int
    ) -> str:
        """Start the execution named ``job_id`` with the contract's input (``job_id``,
        ``bucket``, ``items_key``, ``hash_items_key``, and ``hash_items``, their count, which
        lets the state machine skip an empty hash map); return its ARN.

        An execution of that name that exists already (a redelivered manifest) counts as
        started: Step Functions keeps a name for 90 days after its execution ends. Raises the
        storage errors of :mod:`wheelgate.storage.errors`.
        """
        payload = json.dumps(
            {
                "job_id": job_id,
                "bucket": bucket,
                "items_key": items_key,
                "hash_items_key": hash_items_key,
                "hash_items": hash_items,
            }
        )
        target = f"execution {job_id} of {self.state_machine_arn}"
        with translated("StartExecution", target, endpoint_of(self._client)):
            try:
                response = self._client.start_execution(
                    stateMachineArn=self.state_machine_arn, name=job_id, input=payload
                )
            except ClientError as exc:
                if error_code(exc) != "ExecutionAlreadyExists":
                    raise
                return execution_arn(self.state_machine_arn, job_id)
        return str(response["executionArn"])


class SqsSender:
    """Sends message bodies to SQS queues (by URL)."""

    def __init__(self, client: SQSClient) -> None:
        self._client = client

    def send(self, queue_url: str, body: str) -> None:
        """Send ``body``; raises the storage errors of :mod:`wheelgate.storage.errors`."""
        with translated("SendMessage", queue_url, endpoint_of(self._client)):
            self._client.send_message(QueueUrl=queue_url, MessageBody=body)
