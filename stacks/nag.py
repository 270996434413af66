"""Helpers for acknowledging cdk-nag findings precisely, one finding at a time."""

from __future__ import annotations

from typing import Any

from aws_cdk import Acknowledgment, Stack, Validations
from aws_cdk import aws_iam as iam
from constructs import IConstruct

PACK = "AwsSolutions"


def acknowledge(scope: IConstruct, finding: str, reason: str) -> None:
    """Acknowledge the cdk-nag ``finding`` (``AwsSolutions-<rule>[...]``) on ``scope`` only."""
    Validations.of(scope).acknowledge(Acknowledgment(id=f"{PACK}::{finding}", reason=reason))


def nag_text(scope: IConstruct, value: str) -> str:
    """``value`` spelled as cdk-nag spells it in a finding id (``<Logical.Arn>/runs/*``)."""
    return _render(Stack.of(scope).resolve(value))


def _render(node: Any) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, dict) and "Fn::Join" in node:
        separator, parts = node["Fn::Join"]
        return str(separator).join(_render(p) for p in parts)
    if isinstance(node, dict) and "Fn::GetAtt" in node:
        logical_id, attribute = node["Fn::GetAtt"]
        return f"<{logical_id}.{attribute}>"
    if isinstance(node, dict) and "Ref" in node:
        return f"<{node['Ref']}>"
    raise ValueError(f"cannot spell {node!r} as a cdk-nag finding")


def acknowledge_resource_wildcards(
    policy: iam.Policy, statements: list[iam.PolicyStatement], reason: str
) -> None:
    """Acknowledge ``AwsSolutions-IAM5`` for each wildcard resource of the Allow statements."""
    for statement in statements:
        if statement.effect != iam.Effect.ALLOW:
            continue
        for resource in statement.resources:
            text = nag_text(policy, resource)
            if "*" in text:
                acknowledge(policy, f"AwsSolutions-IAM5[Resource::{text}]", reason)
