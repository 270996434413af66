"""`cdk synth` through the pinned command-line tool, as `make synth` runs it: no credentials."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.infra.synth import REPO_ROOT, STACK_NAME
from tests.tools import require_tool

CDK = REPO_ROOT / "node_modules" / ".bin" / "cdk"


def test_cli_synth_prints_the_template_without_credentials(tmp_path: Path) -> None:
    require_tool("the CDK command-line tool", str(CDK) if CDK.exists() else None, "make node")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        HOME=str(tmp_path),  # no ~/.aws
        AWS_EC2_METADATA_DISABLED="true",
        CDK_DISABLE_CLI_TELEMETRY="true",
        JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20",
    )
    # The timeout only guards against a hang (a credential lookup waiting on the network);
    # how long synthesis takes is the machine's business, not this test's.
    completed = subprocess.run(
        [
            str(CDK),
            "synth",
            "--no-notices",
            "--no-version-reporting",
            "-o",
            str(tmp_path / "out"),
            STACK_NAME,
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("Description:"), completed.stdout[:200]
    assert "AWS::S3::Bucket" in completed.stdout
