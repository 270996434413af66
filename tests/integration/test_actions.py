"""The GitHub composite actions in ``actions/``, run as the runner runs them
(``tests/integration/composite.py``) against ``wheelgate local``: what they pass to the
command, what they expose as outputs, and that no input is ever run as shell."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.composite import ACTIONS, REPO, ActionResult, run_action
from tests.integration.conftest import LocalProcess, uv_binary
from wheelgate import __version__
from wheelgate.local.sample_wheels import build_wheel

INDEX = "v2/gfx-actions"
COMMIT = "a" * 40
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class Job:
    """A job after the setup action, in a workspace with a wheel in dist/: this checkout's
    `wheelgate` on PATH, and the local stack's buckets and endpoint in the environment, as
    the workflows set them."""

    workspace: Path
    env: dict[str, str]

    def run(self, action: str, run_id: str, **inputs: str) -> ActionResult:
        return run_action(
            action, inputs, workspace=self.workspace, env=self.env, run_id=run_id, sha=COMMIT
        )

    def ok(self, action: str, run_id: str, **inputs: str) -> ActionResult:
        result = self.run(action, run_id, **inputs)
        assert result.returncode == 0, result.stdout + result.stderr
        return result


@pytest.fixture
def job(local: LocalProcess, tmp_path: Path) -> Job:
    build_wheel(tmp_path / "dist", "actions-demo", "1.0")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "wheelgate").symlink_to(Path(sys.executable).parent / "wheelgate")
    return Job(tmp_path, {**os.environ, **local.env, "PATH": f"{bin_dir}{os.pathsep}{SYSTEM_PATH}"})


def test_stage_pins_report_and_status_drive_a_run_to_promotion(job: Job) -> None:
    # Given a wheel in dist/, staged with a glob as a build job would
    staged = job.ok("stage", "actions-1", index=INDEX, files="\n  dist/*.whl  \n")
    summary = json.loads(staged.outputs["summary"])
    assert summary["run_id"] == "actions-1"
    assert summary["uploaded"] == ["actions_demo-1.0-py3-none-any.whl"]

    # When the pins, report and status actions run for the same run
    pins = job.ok(
        "pins",
        "actions-1",
        index=INDEX,
        target="cp311-manylinux_2_28_x86_64",
        projects="\n  actions-demo \n",
    )
    requirements = Path(pins.outputs["requirements"]).read_text()
    assert "for target cp311-manylinux_2_28_x86_64: actions-demo and" in requirements
    assert "actions-demo==1.0" in requirements
    assert "--hash=sha256:" in requirements
    # (the test installed with those pins and --require-hashes: they are its evidence)
    reported = job.ok(
        "report",
        "actions-1",
        tests=f"{INDEX}:smoke=passed@https://github.com/ROCm/TheRock/actions/runs/1",
        installed=f"{INDEX}:smoke={pins.outputs['requirements']}",
    )
    assert json.loads(reported.outputs["summary"])["sets"] == 1
    status = job.ok("status", "actions-1", wait="60")

    # Then the run is promoted and the outputs say so
    assert status.outputs["state"] == "promoted"
    assert json.loads(status.outputs["record"])["state"] == "promoted"


def test_a_rejected_run_fails_the_status_step_and_still_sets_its_outputs(job: Job) -> None:
    # Given a staged run whose test failed, reported from a results file
    job.ok("stage", "actions-2", index=INDEX, files="dist/actions_demo-1.0-py3-none-any.whl")
    (job.workspace / "results").mkdir()
    (job.workspace / "results" / "gfx.txt").write_text(f"{INDEX}:smoke=failed\n")
    job.ok("report", "actions-2", **{"test-files": "results/*.txt"})
    # When the status action waits for the decision
    status = job.run("status", "actions-2", wait="60")
    # Then the step fails with the command's exit code, and the outputs tell why
    assert status.returncode == 1
    assert status.outputs["state"] == "rejected"
    assert json.loads(status.outputs["record"])["reason"] == "tests-failed"
    assert "::error::run actions-2 is rejected" in status.stdout


def test_inputs_are_never_run_as_shell(job: Job) -> None:
    # Given inputs that would run commands if a script interpolated them
    hostile = "$(touch pwned-a)\n`touch pwned-b`\n'; touch pwned-c; '\n\"; touch pwned-d; \""
    # When the stage and report actions get them
    staged = job.run("stage", "actions-3", index='v2/x"; touch pwned-e; "', files=hostile)
    reported = job.run("report", "$(touch pwned-f)", tests=hostile, **{"dry-run": "true"})
    # Then each fails as bad input, and nothing ran
    assert staged.returncode == 2
    assert "::error::no file matches $(touch pwned-a)" in staged.stdout
    assert reported.returncode == 2
    assert sorted(p.name for p in job.workspace.glob("pwned*")) == []


def test_command_actions_say_when_setup_has_not_run(tmp_path: Path) -> None:
    for name, inputs in (("stage", {"index": INDEX, "files": "dist/*.whl"}), ("status", {})):
        result = run_action(
            name, inputs, workspace=tmp_path, env={**os.environ, "PATH": SYSTEM_PATH}
        )
        assert result.returncode == 2
        assert "wheelgate is not on PATH: run the wheelgate setup action" in result.stdout


def action_checkout(dest: Path) -> Path:
    """What the runner downloads for `uses: <owner>/wheelgate/actions/setup@<commit>`: the
    repository at that commit (here, the files the install reads and the actions)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("pyproject.toml", "setup.py", "README.md", "requirements.txt"):
        shutil.copy2(REPO / name, dest / name)
    shutil.copytree(REPO / "lambdas" / "wheelgate", dest / "lambdas" / "wheelgate", ignore=ignore)
    # setup.py ships the CDK construct (stacks/) as wheelgate.cdk
    shutil.copytree(REPO / "stacks", dest / "stacks", ignore=ignore)
    shutil.copytree(ACTIONS, dest / "actions", ignore=ignore)
    return dest / "actions"


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_setup_puts_the_base_install_on_path(tmp_path: Path, installer: str) -> None:
    # Given the action's checkout, and a runner with or without uv
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    actions = action_checkout(checkout)
    tools = tmp_path / "tools"
    tools.mkdir()
    if installer == "uv":
        (tools / "uv").symlink_to(uv_binary())
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    # When the setup action runs
    result = run_action(
        "setup",
        {"python": sys.executable},
        workspace=workspace,
        env={**os.environ, "PATH": f"{tools}{os.pathsep}{SYSTEM_PATH}"},
        action_root=actions,
        timeout=600,
    )
    # Then `wheelgate` alone is on PATH, in a venv with the base install and no extra
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.outputs["version"] == __version__
    (bin_dir,) = result.path
    assert sorted(p.name for p in Path(bin_dir).iterdir()) == ["wheelgate"]
    ran = subprocess.run(
        ["wheelgate", "--version"],
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{SYSTEM_PATH}"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert ran.stdout.strip() == f"wheelgate {__version__}"
    venv_python = result.outputs["python"]
    probe = "import boto3, pydantic, yaml, packaging, importlib.util as u; " + (
        "print(u.find_spec('moto'), u.find_spec('aws_lambda_powertools'))"
    )
    absent = subprocess.run(
        [venv_python, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert absent.strip() == "None None"
