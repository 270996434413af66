"""cfn-lint on the synthesized template: no errors, only known and explained warnings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.infra.synth import STACK_NAME, Synthesis

# Warnings CDK itself produces, each understood:
ACCEPTED_WARNINGS = {
    # CDK adds DependsOn next to a GetAtt for the Lambda role and the notification queue.
    "W3005",
}


def test_template_has_no_cfn_lint_errors(synthesis: Synthesis) -> None:
    template = synthesis.outdir / f"{STACK_NAME}.template.json"
    completed = subprocess.run(
        [str(Path(sys.executable).with_name("cfn-lint")), "--format", "json", str(template)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    findings = json.loads(completed.stdout or "[]")
    problems = [
        f"{f['Rule']['Id']} {f['Message']}"
        for f in findings
        if f["Level"] == "Error" or f["Rule"]["Id"] not in ACCEPTED_WARNINGS
    ]
    assert problems == [], "\n".join(problems)
    # cfn-lint's exit code is a bitmask: 2 = errors, 4 = warnings, 8 = informational.
    assert completed.returncode & 2 == 0, completed.stderr
