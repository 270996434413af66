"""Step Functions and SQS adapters of fan-out promotion: start an execution, send a message.

Each takes its boto3 client; errors are translated here: anything the service refuses is a
:class:`~wheelgate.core.errors.TransientError` (the caller's message or step is retried).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import ClientError

from wheelgate.core.errors import TransientError

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
        started: Step Functions keeps a name for 90 days after its execution ends. Raises
        :class:`TransientError` when Step Functions refuses.
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
        try:
            response = self._client.start_execution(
                stateMachineArn=self.state_machine_arn, name=job_id, input=payload
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ExecutionAlreadyExists":
                return execution_arn(self.state_machine_arn, job_id)
            raise TransientError(f"execution {job_id} not started: {exc}") from exc
        return str(response["executionArn"])


class SqsSender:
    """Sends message bodies to SQS queues (by URL)."""

    def __init__(self, client: SQSClient) -> None:
        self._client = client

    def send(self, queue_url: str, body: str) -> None:
        """Send ``body``; raise :class:`TransientError` when SQS refuses."""
        try:
            self._client.send_message(QueueUrl=queue_url, MessageBody=body)
        except ClientError as exc:
            raise TransientError(f"message not sent to {queue_url}: {exc}") from exc
