"""cdk-nag AwsSolutions as a gate: zero unacknowledged findings, narrow acknowledgements."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.infra.synth import STACK_NAME, Synthesis


def test_no_unacknowledged_findings(synthesis: Synthesis) -> None:
    # The session fixture would already have raised on a finding; the report says so too.
    reports = {r["pluginName"]: r for r in synthesis.report["pluginReports"]}
    assert reports["AwsSolutions"]["conclusion"] == "success"
    assert reports["AwsSolutions"]["violations"] == []


def _acknowledgements(outdir: Path) -> list[tuple[str, str, str]]:
    """(construct path, rule id, reason) of every cdk-nag acknowledgement in the assembly."""
    metadata = json.loads((outdir / f"{STACK_NAME}.metadata.json").read_text())
    found = []
    for path, entries in metadata.items():
        for entry in entries:
            if entry["type"] == "aws:cdk:acknowledged-rules":
                for rule, reason in entry["data"].items():
                    if rule.startswith("AwsSolutions::"):
                        found.append((path, rule.removeprefix("AwsSolutions::"), reason))
    return found


def test_acknowledgements_are_narrow_and_reasoned(synthesis: Synthesis) -> None:
    acknowledged = _acknowledgements(synthesis.outdir)
    rules = {rule.split("[")[0] for _, rule, _ in acknowledged}
    assert rules == {
        "AwsSolutions-S1",
        "AwsSolutions-IAM4",
        "AwsSolutions-IAM5",
        "AwsSolutions-CFR1",
        "AwsSolutions-CFR2",
        "AwsSolutions-CFR4",
        "AwsSolutions-SQS3",
        "AwsSolutions-L1",
    }
    for path, rule, reason in acknowledged:
        # Never on the app or the stack: always on the construct the finding is about.
        assert path.count("/") >= 3, (path, rule)
        assert len(reason) >= 30, (path, rule)
        # IAM5 is acknowledged per wildcard resource, never for a wildcard action.
        if rule.startswith("AwsSolutions-IAM5"):
            assert rule.startswith("AwsSolutions-IAM5[Resource::"), rule
    xray = [a for a in acknowledged if a[1] == "AwsSolutions-IAM5[Resource::*]"]
    # Tracing (both) and vended log delivery (the state machine's): no resource-level permissions.
    assert sorted(path for path, _, _ in xray) == [
        "/WheelGate/Default/Access/PromoterRole/DefaultPolicy",
        "/WheelGate/Default/FanOut/Role/DefaultPolicy",
    ]


def test_gate_rejects_an_unacknowledged_finding(tmp_path: Path) -> None:
    """The same plugin wiring as app.py fails synthesis on a non-compliant resource."""
    import aws_cdk as cdk
    from aws_cdk import aws_sqs as sqs
    from cdk_nag import AwsSolutionsChecks

    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Probe")
    sqs.Queue(stack, "NoDlqNoTls")
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    with pytest.raises(Exception, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    rules = {v["ruleName"] for p in report["pluginReports"] for v in p["violations"]}
    assert "AwsSolutions-SQS3" in rules
