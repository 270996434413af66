"""`cdk synth` through the pinned command-line tool, with no credentials: as `make synth` runs
it, and as docs/deploy.md's step 3b runs it in a clone, with a settings file of many lines."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.infra.synth import REPO_ROOT, STACK_NAME, cdk_json_context
from tests.infra.test_deploy_doc import DOC_PATH, shell_commands
from tests.tools import require_tool

CDK = REPO_ROOT / "node_modules" / ".bin" / "cdk"


def without_credentials(home: Path) -> dict[str, str]:
    """This process's environment with no AWS credentials to find (``home``: an empty
    home, so no ``~/.aws``)."""
    require_tool("the CDK command-line tool", str(CDK) if CDK.exists() else None, "make node")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        HOME=str(home),
        AWS_EC2_METADATA_DISABLED="true",
        CDK_DISABLE_CLI_TELEMETRY="true",
        JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20",
    )
    return env


def test_cli_synth_prints_the_template_without_credentials(tmp_path: Path) -> None:
    env = without_credentials(tmp_path)
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


def recipe_3b_synth() -> list[str]:
    """The ``cdk synth`` command of docs/deploy.md's step 3b, as its words."""
    doc = DOC_PATH.read_text()
    section = doc.split("### This repository's app, with your own settings", 1)[1]
    block = "```sh\n" + section.split("```sh\n", 1)[1].split("```", 1)[0] + "```"
    (synth,) = [w for w in shell_commands(block) if w[:2] == ["node_modules/.bin/cdk", "synth"]]
    return synth


@pytest.mark.slow
def test_the_deploy_recipe_synthesizes_with_a_multi_line_settings_file(tmp_path: Path) -> None:
    # Given a clone (this checkout's files, linked) and settings of its own in a JSON file of
    # many lines, named as step 3b names it
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in ("app.py", "cdk.json", "stacks", "lambdas", ".venv", "node_modules", "build"):
        (clone / name).symlink_to(REPO_ROOT / name)
    synth = recipe_3b_synth()
    (settings_file,) = [w.split("=", 1)[1] for w in synth if w.startswith("wheelgate_file=")]
    settings = {**cdk_json_context()["wheelgate"], "github_repo": "acme/app"}
    (clone / settings_file).write_text(json.dumps(settings, indent=2) + "\n")
    # When the recipe's synth runs as written, in the clone, with no credentials
    completed = subprocess.run(
        synth,
        cwd=clone,
        env=without_credentials(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    # Then the stack synthesizes with the file's settings: its roles trust acme/app
    assert completed.returncode == 0, completed.stderr
    assert "AWS::S3::Bucket" in completed.stdout
    assert "repo:acme/app:" in completed.stdout
