"""CloudWatch log groups kept for the ``log_retention_days`` of ``cdk.json``."""

from __future__ import annotations

from aws_cdk import aws_logs as logs
from constructs import Construct

from .props import LOG_RETENTION_DAYS


def retained_log_group(
    scope: Construct, construct_id: str, *, retention_days: int
) -> logs.LogGroup:
    """A log group whose events are kept ``retention_days`` days.

    Raises ``ValueError`` for a period CloudWatch Logs does not offer, listing those it does.
    """
    if retention_days not in LOG_RETENTION_DAYS:
        raise ValueError(
            f"log retention of {retention_days} days is not one CloudWatch Logs offers: "
            f"use one of {', '.join(map(str, LOG_RETENTION_DAYS))}"
        )
    log_group = logs.LogGroup(scope, construct_id)
    # The L2 takes an enum of named periods; the day count from cdk.json maps directly.
    resource = log_group.node.default_child
    assert isinstance(resource, logs.CfnLogGroup)
    resource.retention_in_days = retention_days
    return log_group
