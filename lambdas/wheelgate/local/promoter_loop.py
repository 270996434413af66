"""Local mode's Lambda event source: a loop that receives the manifest queue's messages, stamps
the identity a real S3 notification would carry, and calls the promoter handler with the SQS
event Lambda would deliver, deleting what it processed and retrying the rest soon."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus

from wheelgate.local.names import (
    LOCAL_DEPS_PRINCIPAL,
    LOCAL_REPORTER_PRINCIPAL,
    MIRROR_MANIFEST_PREFIX,
    REGION,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

#: A Lambda handler as the loop calls it: the SQS event and a context (duck-typed) in.
LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


@dataclass
class LocalContext:
    """The attributes of a Lambda context the Powertools decorators read."""

    function_name: str = "wheelgate-promoter-local"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = (
        f"arn:aws:lambda:{REGION}:000000000000:function:wheelgate-promoter-local"
    )
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def get_remaining_time_in_millis(self) -> int:
        return 900_000


def sqs_lambda_event(messages: list[Any], queue_arn: str) -> dict[str, Any]:
    """The event Lambda's SQS event source would deliver for ``messages``."""
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "messageAttributes": {},
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": REGION,
            }
            for m in messages
        ]
    }


#: Who wrote an object, when local mode knows better than its default: ``(bucket, key)`` in,
#: a principal or ``None`` out (:func:`wheelgate.local.writers.principal_of`).
WriterOf = Callable[[str, str], "str | None"]


def _nobody_known(bucket: str, key: str) -> str | None:
    return None


def stamp_identity(body: str, principal: str, writer_of: WriterOf = _nobody_known) -> str:
    """Fill in what a real S3 notification carries and moto leaves out: who wrote the object
    (the identity local mode knows: ``writer_of``'s when it knows one, such as the break-glass
    role's; else its reporter, or its mirror role for a mirror run's manifest), and the
    request fields."""
    try:
        payload = json.loads(body)
    except json.JSONDecodeError:
        return body
    if not isinstance(payload, dict) or "Records" not in payload:
        return body
    for record in payload["Records"]:
        if not isinstance(record, dict):
            continue
        key = unquote_plus(str(record.get("s3", {}).get("object", {}).get("key", "")))
        # Only the mirror role may write a mirror run's manifest (the stack's bucket policy);
        # local mode has no IAM, so it stamps the identity that policy would have allowed.
        bucket = record.get("s3", {}).get("bucket", {})
        writer = writer_of(str(bucket.get("name", "")), key) or (
            LOCAL_DEPS_PRINCIPAL
            if principal == LOCAL_REPORTER_PRINCIPAL and key.startswith(MIRROR_MANIFEST_PREFIX)
            else principal
        )
        record.setdefault("userIdentity", {"principalId": writer})
        record.setdefault("requestParameters", {"sourceIPAddress": "127.0.0.1"})
        record.setdefault("responseElements", {"x-amz-request-id": "LOCAL", "x-amz-id-2": "LOCAL"})
        bucket.setdefault("ownerIdentity", {"principalId": "LOCAL"})
    return json.dumps(payload)


@dataclass
class PromoterLoop:
    """Feeds the messages of ``queue_url`` (whose ARN is ``queue_arn``) to ``handler`` until
    ``stop`` is set, stamping ``principal`` on manifest events (``writer_of``'s writer where it
    knows one)."""

    sqs: SQSClient
    queue_url: str
    queue_arn: str
    handler: LambdaHandler
    principal: str
    stop: threading.Event = field(default_factory=threading.Event)
    writer_of: WriterOf = _nobody_known

    def run(self) -> None:
        """Receive, call the handler, settle each message; until stopped."""
        while not self.stop.is_set():
            try:
                received = self.sqs.receive_message(
                    QueueUrl=self.queue_url,
                    MaxNumberOfMessages=10,
                    WaitTimeSeconds=1,
                    MessageSystemAttributeNames=["All"],
                )
            except Exception:
                time.sleep(0.2)
                continue
            messages = received.get("Messages", [])
            if messages:
                self._deliver(messages)

    def _deliver(self, messages: list[Any]) -> None:
        for m in messages:
            m["Body"] = stamp_identity(m["Body"], self.principal, self.writer_of)
        try:
            response = self.handler(sqs_lambda_event(messages, self.queue_arn), LocalContext())
            failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
        except Exception:
            failed = {m["MessageId"] for m in messages}
        for m in messages:
            if m["MessageId"] in failed:
                # Retry soon rather than after the full visibility timeout.
                self.sqs.change_message_visibility(
                    QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=1
                )
            else:
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])
