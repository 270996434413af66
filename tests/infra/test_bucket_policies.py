"""The bucket policies' rules as named fields (stacks/bucket_policies.py ``DenyRule``): what a
rule may say, the statement it becomes, and the rules each bucket gets.

What the synthesized policies deny, principal by principal, is tests/infra/test_access.py's and
the IAM matrix's (tests/infra/test_iam_matrix.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_s3 as s3

from stacks.bucket_policies import (
    DenyRule,
    Principals,
    cache_denies,
    nightly_denies,
    staging_denies,
)

OBJECTS = "arn:aws:s3:::bucket/*"
PAGES = "arn:aws:s3:::bucket/*/index.html"
ROLE = "arn:aws:iam::111122223333:role"
BREAK_GLASS = f"{ROLE}/break-glass"


def _principals(break_glass: tuple[str, ...] = ()) -> Principals:
    return Principals(
        build=f"{ROLE}/build",
        reporter=f"{ROLE}/reporter",
        promoter=f"{ROLE}/promoter",
        deps=f"{ROLE}/deps",
        deploy=f"{ROLE}/deploy",
        break_glass=break_glass,
    )


def _buckets() -> dict[str, s3.IBucket]:
    stack = cdk.Stack(cdk.App(), "Rules")
    return {name: s3.Bucket(stack, name) for name in ("staging", "nightly", "cache")}


def _rules(who: Principals) -> dict[str, list[DenyRule]]:
    buckets = _buckets()
    return {
        "staging": staging_denies(buckets["staging"], who),
        "nightly": nightly_denies(
            buckets["nightly"], who, lock_mode="GOVERNANCE", retention_days=365
        ),
        "cache": cache_denies(buckets["cache"], who),
    }


def test_a_deny_rule_becomes_a_deny_for_every_principal() -> None:
    rule = DenyRule(
        sid="DenyDeletes",
        actions=["s3:DeleteObject", "s3:DeleteObjectVersion"],
        resources=[OBJECTS],
        condition={"ArnNotEquals": {"aws:PrincipalArn": [BREAK_GLASS]}},
    )
    assert rule.statement().to_statement_json() == {
        "Sid": "DenyDeletes",
        "Effect": "Deny",
        "Principal": {"AWS": "*"},
        "Action": ["s3:DeleteObject", "s3:DeleteObjectVersion"],
        "Resource": OBJECTS,
        "Condition": {"ArnNotEquals": {"aws:PrincipalArn": [BREAK_GLASS]}},
    }


def test_a_rule_that_leaves_keys_out_names_them_as_not_resources() -> None:
    rule = DenyRule(sid="DenyFileWrites", actions=["s3:PutObject"], not_resources=[PAGES])
    statement: dict[str, Any] = rule.statement().to_statement_json()
    assert statement["NotResource"] == PAGES
    assert "Resource" not in statement
    assert "Condition" not in statement


@pytest.mark.parametrize(
    "keys",
    [{}, {"resources": [OBJECTS], "not_resources": [PAGES]}],
    ids=["neither", "both"],
)
def test_a_rule_names_resources_or_not_resources_never_both(keys: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="DenyWrites needs resources or not_resources"):
        DenyRule(sid="DenyWrites", actions=["s3:PutObject"], **keys)


def test_a_rule_that_denies_no_action_is_refused() -> None:
    with pytest.raises(ValueError, match="DenyNothing denies no action"):
        DenyRule(sid="DenyNothing", actions=[], resources=[OBJECTS])


def test_a_rule_is_spelled_with_field_names_and_never_changes() -> None:
    with pytest.raises(TypeError):
        DenyRule("DenyWrites", ["s3:PutObject"], [OBJECTS])  # type: ignore[misc]
    rule = DenyRule(sid="DenyWrites", actions=["s3:PutObject"], resources=[OBJECTS])
    with pytest.raises(dataclasses.FrozenInstanceError):
        rule.sid = "AllowWrites"  # type: ignore[misc]


def test_each_bucket_policy_names_each_rule_once() -> None:
    for bucket, rules in _rules(_principals((BREAK_GLASS,))).items():
        sids = [rule.sid for rule in rules]
        assert len(sids) == len(set(sids)), bucket


def test_without_a_break_glass_role_its_exemptions_are_gone() -> None:
    # Given the rules with and without a break-glass role
    with_role = _rules(_principals((BREAK_GLASS,)))
    without = _rules(_principals())
    # Then a rule that exempted only the break-glass role applies to everyone without it
    for bucket in ("staging", "nightly"):
        (deletes,) = [r for r in with_role[bucket] if r.sid == "DenyDeletes"]
        assert deletes.condition == {"ArnNotEquals": {"aws:PrincipalArn": [BREAK_GLASS]}}
        (deletes,) = [r for r in without[bucket] if r.sid == "DenyDeletes"]
        assert deletes.condition is None
    # And no rule names it
    assert all(BREAK_GLASS not in repr(r) for rules in without.values() for r in rules)
