"""The events and context Lambda hands the promoter's handler, as the tests deliver them."""

from __future__ import annotations

from typing import Any


class Context:
    """The Lambda context the handler's Powertools decorators read."""

    function_name = "promoter-test"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:promoter-test"
    aws_request_id = "req"


def sqs_message(body: str, message_id: str = "m-1") -> dict[str, Any]:
    """One message of the batch Lambda's SQS event source delivers, with ``body``."""
    return {
        "messageId": message_id,
        "receiptHandle": "h",
        "body": body,
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": {},
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:q",
        "awsRegion": "us-east-1",
    }


def sqs_batch(body: str) -> dict[str, Any]:
    """The event Lambda's SQS event source delivers for one message with ``body``."""
    return {"Records": [sqs_message(body)]}
