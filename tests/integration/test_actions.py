"""The GitHub composite actions in ``actions/``, run as the runner runs them
(``tests/integration/composite.py``) from a checkout of this repository, against ``wheelgate
local``: the first action of a job installs the command from its own checkout and later ones
reuse it; what they pass to the command; what they expose as outputs; how each exit code of
the command becomes the step's outcome; and that no input is ever run as shell."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.integration import broken_storage
from tests.integration.composite import ACTIONS, REPO, ActionResult, run_action
from tests.integration.conftest import LocalProcess, uv_binary
from tests.integration.decoy import Decoy
from tests.integration.installs import pip
from wheelgate import __version__
from wheelgate.local.names import STAGING_BUCKET
from wheelgate.local.sample_wheels import build_wheel

# The composite actions, each installing wheelgate into a fresh virtualenv: `make test` only.
pytestmark = pytest.mark.slow

INDEX = "v2/gfx-actions"
COMMIT = "a" * 40
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
TEST_URL = "https://github.com/ROCm/TheRock/actions/runs/1"
#: What a step logs when it installs the command, and when it reuses an earlier step's install.
INSTALLING = "installing wheelgate from "
REUSING = f"wheelgate {__version__}, installed earlier in this job in "
#: setup.py of a probed checkout records the environment its build runs in here.
BUILD_ENV_PROBE = "WHEELGATE_TEST_BUILD_ENV"


def action_checkout(dest: Path, *, probe_build_env: bool = False) -> Path:
    """What the runner downloads for `uses: <owner>/wheelgate/actions/<name>@<ref>`: the
    repository at that ref (here, the files the install reads and the actions). With
    ``probe_build_env``, its setup.py writes the names of the variables the build sees to the
    file ``$WHEELGATE_TEST_BUILD_ENV`` names."""
    dest.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("pyproject.toml", "setup.py", "README.md", "requirements.txt"):
        shutil.copy2(REPO / name, dest / name)
    shutil.copytree(REPO / "lambdas" / "wheelgate", dest / "lambdas" / "wheelgate", ignore=ignore)
    # setup.py ships the CDK construct (stacks/) as wheelgate.cdk
    shutil.copytree(REPO / "stacks", dest / "stacks", ignore=ignore)
    shutil.copytree(ACTIONS, dest / "actions", ignore=ignore)
    if probe_build_env:
        with (dest / "setup.py").open("a") as setup_py:
            setup_py.write(
                "\nimport json as _json, os as _os, pathlib as _pathlib\n"
                f"if {BUILD_ENV_PROBE!r} in _os.environ:\n"
                f"    _pathlib.Path(_os.environ[{BUILD_ENV_PROBE!r}])"
                ".write_text(_json.dumps(sorted(_os.environ)))\n"
            )
    return dest / "actions"


def runner_path(tmp: Path, *, uv: bool) -> str:
    """PATH of a runner with or without uv, and a `wheelgate` that is not the action's (a user's
    own install): the actions must never run it."""
    tools = tmp / "tools"
    tools.mkdir(exist_ok=True)
    if uv:
        (tools / "uv").symlink_to(uv_binary())
    impostor = tools / "wheelgate"
    impostor.write_text("#!/bin/sh\necho 'not the action'\"'\"'s wheelgate' >&2\nexit 99\n")
    impostor.chmod(0o755)
    return f"{tools}{os.pathsep}{SYSTEM_PATH}"


@dataclass
class Job:
    """One job on a runner: its workspace (a wheel in dist/), its environment (the local
    stack's buckets, endpoint and URLs, as the workflows set them), the actions' checkout and
    the runner's RUNNER_TEMP."""

    workspace: Path
    env: dict[str, str]
    actions: Path
    runner_temp: Path
    results: list[ActionResult] = field(default_factory=list)

    def run(self, action: str, run_id: str, **inputs: str) -> ActionResult:
        result = run_action(
            action,
            inputs,
            workspace=self.workspace,
            env=self.env,
            run_id=run_id,
            sha=COMMIT,
            action_root=self.actions,
            runner_temp=self.runner_temp,
            timeout=600,
        )
        self.results.append(result)
        return result

    def ok(self, action: str, run_id: str, **inputs: str) -> ActionResult:
        result = self.run(action, run_id, **inputs)
        assert result.returncode == 0, result.stdout + result.stderr
        return result

    def installs(self) -> list[Path]:
        """The installs in RUNNER_TEMP (one per actions' checkout)."""
        return sorted(self.runner_temp.glob("wheelgate-*/installed"))


def new_job(
    tmp: Path,
    local: LocalProcess,
    actions: Path,
    runner_temp: Path,
    path: str,
    decoy: Decoy,
    project: str = "actions-demo",
) -> Job:
    """A job whose first wheelgate step installs the command from the package registry with
    the runner's own pip and uv configuration, as users' jobs do: the decoy is no part of it."""
    workspace = tmp / "workspace"
    workspace.mkdir()
    build_wheel(workspace / "dist", project, "1.0")
    env = {**decoy.unplanted(os.environ), **local.env, "PATH": path}
    return Job(workspace, env, actions, runner_temp)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return action_checkout(tmp_path_factory.mktemp("checkout") / "wheelgate")


def run_setup(checkout: Path, tmp: Path, decoy: Decoy, *, uv: bool) -> tuple[Path, ActionResult]:
    """The setup action run with this Python on a runner with or without uv (installing with
    the runner's own configuration, not the decoy's): the runner's RUNNER_TEMP, and what setup
    said (it must succeed)."""
    runner_temp = tmp / "runner_temp"
    workspace = tmp / "workspace"
    workspace.mkdir()
    result = run_action(
        "setup",
        {"python": sys.executable},
        workspace=workspace,
        env={**decoy.unplanted(os.environ), "PATH": runner_path(tmp, uv=uv)},
        action_root=checkout,
        runner_temp=runner_temp,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return runner_temp, result


@pytest.fixture(scope="module")
def set_up(
    checkout: Path, tmp_path_factory: pytest.TempPathFactory, decoy: Decoy
) -> tuple[Path, ActionResult]:
    """A runner where the setup action installed the command with uv."""
    return run_setup(checkout, tmp_path_factory.mktemp("runner"), decoy, uv=True)


@pytest.fixture
def job(
    local: LocalProcess,
    checkout: Path,
    set_up: tuple[Path, ActionResult],
    tmp_path: Path,
    decoy: Decoy,
) -> Job:
    """A job on the runner where setup installed the command."""
    return new_job(tmp_path, local, checkout, set_up[0], runner_path(tmp_path, uv=True), decoy)


# -- a job with no setup step -------------------------------------------------------------


def test_a_job_stages_installs_reports_and_waits_with_no_setup_step(
    local: LocalProcess, tmp_path: Path, decoy: Decoy, venv_factory: Any
) -> None:
    # Given a job on a runner with uv, nothing of wheelgate installed, and AWS credentials
    # and an OIDC token request in its environment (a role already assumed)
    actions = action_checkout(tmp_path / "checkout", probe_build_env=True)
    runner_temp, path = tmp_path / "runner_temp", runner_path(tmp_path, uv=True)
    job = new_job(tmp_path, local, actions, runner_temp, path, decoy, project="actions-e2e")
    build_env = tmp_path / "build-env.json"
    job.env |= {
        BUILD_ENV_PROBE: str(build_env),
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "token",
        "ACTIONS_ID_TOKEN_REQUEST_URL": "https://token.example/",
    }
    run = "actions-e2e"

    # When the stage action stages dist/ (the first wheelgate step of the job)
    staged = job.ok("stage", run, index=INDEX, files="dist/*.whl")
    # Then it installed the command from its own checkout, which saw no credentials
    assert INSTALLING in staged.stdout, staged.stdout
    assert f"installed wheelgate {__version__} in " in staged.stdout
    seen = set(json.loads(build_env.read_text()))
    assert "AWS_ACCESS_KEY_ID" in local.env
    assert {v for v in seen if v.startswith(("AWS_", "ACTIONS_ID_TOKEN"))} == set()
    (installed,) = job.installs()
    first_install = installed.stat().st_mtime_ns
    # and its index_url is the run's own index
    index_url = staged.outputs["index_url"]
    assert index_url == local.run_index(run, INDEX)
    assert json.loads(staged.outputs["summary"])["index_url"] == index_url

    # When the test installs from index_url with real pip (hermetic), keeping its report
    venv = venv_factory("actions-e2e-test")
    report_file = job.workspace / "installed.json"
    installed_by_pip = pip(
        venv, "install", "--report", str(report_file), "--index-url", index_url, "actions-e2e==1.0"
    )
    assert installed_by_pip.returncode == 0, installed_by_pip.stderr
    # and the report action writes the manifest with that evidence
    reported = job.ok(
        "report",
        run,
        tests=f"{INDEX}:smoke=passed@{TEST_URL}",
        installed=f"{INDEX}:smoke=installed.json",
    )
    sha256 = reported.outputs["manifest_sha256"]
    assert sha256 == json.loads(reported.outputs["summary"])["manifest_sha256"]
    # and the status action waits (by default) for the decision about that manifest
    status = job.ok("status", run, **{"manifest-sha256": sha256})

    # Then the run is promoted, and the outputs say so and where the record is
    assert status.outputs["state"] == "promoted"
    assert status.outputs["reason"] == ""
    assert status.outputs["record_url"] == f"s3://{STAGING_BUCKET}/records/{run}.json"
    record = json.loads(status.outputs["record"])
    assert record["manifest_decision"]["state"] == "promoted"
    assert record["manifest_sha256"] == sha256
    # And the later steps reused the first step's install: nothing was installed again
    for later in (reported, status):
        assert INSTALLING not in later.stdout
        assert REUSING in later.stdout
    assert job.installs() == [installed]
    assert installed.stat().st_mtime_ns == first_install


# -- after a setup step -------------------------------------------------------------------


def assert_base_install(result: ActionResult) -> None:
    """`wheelgate` alone is on PATH, the version asked for, in a venv with the base install
    and no extra."""
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
    probe = "import boto3, pydantic, yaml, packaging, pip, importlib.util as u; " + (
        "print(u.find_spec('moto'), u.find_spec('aws_lambda_powertools'))"
    )
    absent = subprocess.run(
        [result.outputs["python"], "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert absent.strip() == "None None"


def test_setup_with_uv_puts_the_base_install_on_path(set_up: tuple[Path, ActionResult]) -> None:
    assert_base_install(set_up[1])


def test_setup_with_pip_puts_the_base_install_on_path(
    checkout: Path, tmp_path: Path, decoy: Decoy
) -> None:
    # Given a runner without uv, when the setup action runs, pip installs the base install
    assert_base_install(run_setup(checkout, tmp_path, decoy, uv=False)[1])


def test_stage_pins_report_and_status_drive_a_run_to_promotion(job: Job, venv_factory: Any) -> None:
    # Given a wheel in dist/, staged with a glob as a build job would, after a setup step
    staged = job.ok("stage", "actions-1", index=INDEX, files="\n  dist/*.whl  \n")
    summary = json.loads(staged.outputs["summary"])
    assert summary["run_id"] == "actions-1"
    assert summary["uploaded"] == ["actions_demo-1.0-py3-none-any.whl"]

    # When the pins action runs for the test's target, and the test installs with those pins
    # and --require-hashes from the run's index...
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
    venv = venv_factory("actions-test")
    installed = pip(
        venv,
        *("install", "--require-hashes", "--index-url", summary["index_url"]),
        *("-r", pins.outputs["requirements"]),
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    probe = [
        str(venv / "bin" / "python"),
        "-c",
        "import actions_demo; print(actions_demo.__version__)",
    ]
    assert subprocess.run(probe, capture_output=True, text=True, check=True).stdout == "1.0\n"
    # ...and the report action passes on the pins it installed with as its evidence, and the
    # status action waits for the decision
    reported = job.ok(
        "report",
        "actions-1",
        tests=f"{INDEX}:smoke=passed@{TEST_URL}",
        installed=f"{INDEX}:smoke={pins.outputs['requirements']}",
    )
    assert json.loads(reported.outputs["summary"])["sets"] == 1
    status = job.ok(
        "status", "actions-1", **{"manifest-sha256": reported.outputs["manifest_sha256"]}
    )

    # Then the run is promoted and the outputs say so
    assert status.outputs["state"] == "promoted"
    assert json.loads(status.outputs["record"])["state"] == "promoted"
    # And every step ran setup's install
    for result in job.results:
        assert INSTALLING not in result.stdout
        assert REUSING in result.stdout


def test_pins_passes_pips_target_options(job: Job) -> None:
    job.ok("stage", "actions-pins", index=INDEX, files="dist/*.whl")
    pins = job.ok(
        "pins",
        "actions-pins",
        index=INDEX,
        **{
            "python-version": "3.12",
            "platform": "manylinux_2_28_x86_64\nlinux_x86_64",
            "implementation": "cp",
            "abi": "cp312\nabi3",
        },
    )
    requirements = Path(pins.outputs["requirements"]).read_text()
    assert (
        "for pip --python-version 3.12 --platform manylinux_2_28_x86_64 --platform linux_x86_64 "
        "--implementation cp --abi cp312 --abi abi3: actions-demo" in requirements
    ), requirements
    assert "actions-demo==1.0 \\\n    --hash=sha256:" in requirements


# -- exit codes ---------------------------------------------------------------------------


def test_a_rejection_sets_state_rejected_and_fails_the_step_unless_told_not_to(job: Job) -> None:
    # Given a staged run whose test failed, reported from a results file
    job.ok("stage", "actions-2", index=INDEX, files="dist/actions_demo-1.0-py3-none-any.whl")
    (job.workspace / "results").mkdir()
    (job.workspace / "results" / "gfx.txt").write_text(f"{INDEX}:smoke=failed\n")
    reported = job.ok("report", "actions-2", **{"test-files": "results/*.txt"})
    sha256 = reported.outputs["manifest_sha256"]
    # When the status action waits for the decision
    status = job.run("status", "actions-2", **{"manifest-sha256": sha256})
    # Then the step fails with the command's exit code, and the outputs tell why
    assert status.returncode == 1
    assert status.outputs["state"] == "rejected"
    assert status.outputs["reason"] == "tests-failed"
    assert status.outputs["record_url"] == f"s3://{STAGING_BUCKET}/records/actions-2.json"
    assert json.loads(status.outputs["record"])["reason"] == "tests-failed"
    assert "::error::run actions-2 was rejected (tests-failed): " in status.stdout
    # When it is told a rejection is not a failure
    tolerant = job.run(
        "status", "actions-2", **{"manifest-sha256": sha256, "fail-on-rejected": "false"}
    )
    # Then the step succeeds with the same outputs, and a warning
    assert tolerant.returncode == 0, tolerant.stdout + tolerant.stderr
    assert (tolerant.outputs["state"], tolerant.outputs["reason"]) == ("rejected", "tests-failed")
    assert "::warning::run actions-2 was rejected (tests-failed)" in tolerant.stdout


def test_a_wait_that_ends_undecided_sets_state_pending_and_fails_the_step(job: Job) -> None:
    # Given a run staged that nobody reported, waited for one second (a run id nothing is
    # staged under is unknown: exit 5, no answer)
    job.ok("stage", "actions-never-reported", index=INDEX, files="dist/*.whl")
    status = job.run("status", "actions-never-reported", wait="1")
    # Then the step fails with exit 3: pending, not rejected
    assert status.returncode == 3
    assert status.outputs["state"] == "pending"
    assert status.outputs["reason"] == ""
    assert "::error::run actions-never-reported has no decision after 1 s: " in status.stdout


#: The inputs each action needs to get as far as its first storage request.
STORAGE_STEPS = {
    "stage": {"index": INDEX, "files": "dist/*.whl"},
    "report": {"tests": f"{INDEX}:smoke=passed@{TEST_URL}"},
    "pins": {"index": INDEX},
    "status": {"wait": "0"},
}


@pytest.mark.parametrize("action", sorted(STORAGE_STEPS))
def test_a_storage_error_fails_the_step_with_the_commands_line_and_no_state(
    job: Job, action: str
) -> None:
    # Given an S3 endpoint nobody listens on, and two attempts per request (botocore's own
    # variable, which the command honours)
    unreachable = broken_storage.unreachable()
    job.env["AWS_MAX_ATTEMPTS"] = "2"
    # When the action runs against it
    result = job.run(
        action, "actions-storage", **STORAGE_STEPS[action], **{"endpoint-url": unreachable.endpoint}
    )
    # Then the step fails with exit 4 and the command's one line as the error annotation
    assert result.returncode == 4, result.stdout + result.stderr
    (annotation,) = [line for line in result.stdout.splitlines() if line.startswith("::error::")]
    assert re.fullmatch(
        rf"::error::wheelgate {action}: storage error: \w+ s3://\S+ at "
        rf"{re.escape(unreachable.endpoint)}: EndpointConnectionError: .*",
        annotation,
    ), annotation
    assert "Traceback" not in result.stderr
    # and no output claims a decision: never state=rejected
    assert result.outputs.get("state", "") == ""
    assert "rejected" not in result.stdout


@pytest.fixture(params=["slow-down", "bad-credentials", "no-credentials"])
def broken(request: pytest.FixtureRequest) -> Iterator[broken_storage.BrokenStorage]:
    """Storage that answers, but not with a record: 503 SlowDown to every request, a refusal
    of unknown keys (403), or no credentials anywhere botocore looks."""
    if request.param == "bad-credentials":
        with broken_storage.refusing_made_up_keys() as storage:
            yield storage
    else:
        with broken_storage.slowing_down() as storage:
            if request.param == "no-credentials":
                storage = broken_storage.no_credentials(storage.endpoint)
            yield storage


def test_status_meets_storage_that_answers_wrongly_with_no_state(
    job: Job, broken: broken_storage.BrokenStorage
) -> None:
    # Given storage that fails this way, and two attempts per request
    for variable, value in broken.env.items():
        if value is None:
            job.env.pop(variable, None)
        else:
            job.env[variable] = value
    job.env["AWS_MAX_ATTEMPTS"] = "2"
    # When the status action asks for a run's decision
    result = job.run("status", "actions-storage", wait="0", **{"endpoint-url": broken.endpoint})
    # Then the step fails with exit 4 and the command's line naming the error, and no state
    assert result.returncode == 4, result.stdout + result.stderr
    (annotation,) = [line for line in result.stdout.splitlines() if line.startswith("::error::")]
    assert annotation.startswith("::error::wheelgate status: storage error: ")
    assert re.search(broken.error, annotation), annotation
    assert result.outputs["state"] == ""


def test_bad_input_fails_the_step_with_the_commands_line(job: Job) -> None:
    result = job.run("status", "../actions")
    assert result.returncode == 2
    (annotation,) = [line for line in result.stdout.splitlines() if line.startswith("::error::")]
    assert annotation.startswith("::error::wheelgate status: error: RUN_ID: ")
    assert result.outputs["state"] == ""


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
    assert "::error::wheelgate report: error: " in reported.stdout
    assert sorted(p.name for p in job.workspace.glob("pwned*")) == []


# -- before anything is installed ---------------------------------------------------------


def test_stage_without_a_staging_url_fails_before_installing_or_uploading(
    local: LocalProcess, checkout: Path, tmp_path: Path, decoy: Decoy
) -> None:
    # Given a job whose environment does not say where the staging index is served
    runner_temp, path = tmp_path / "runner_temp", runner_path(tmp_path, uv=True)
    job = new_job(tmp_path, local, checkout, runner_temp, path, decoy)
    del job.env["WHEELGATE_STAGING_BASE_URL"]
    # When the stage action runs without a staging-url input
    result = job.run("stage", "actions-4", index=INDEX, files="dist/*.whl")
    # Then it fails as bad input, saying what to set, before installing or staging anything
    assert result.returncode == 2
    assert (
        "::error::the staging URL is unknown, so the run's index_url cannot be given: set the "
        "staging-url input or WHEELGATE_STAGING_BASE_URL" in result.stdout
    )
    assert job.installs() == []
    listed = local.client("s3").list_objects_v2(Bucket=STAGING_BUCKET, Prefix="runs/actions-4/")
    assert listed["KeyCount"] == 0


def test_first_use_names_a_python_too_old(checkout: Path, tmp_path: Path) -> None:
    # Given a runner whose python3 is 3.10, and no uv
    path = runner_path(tmp_path, uv=False)
    old = tmp_path / "tools" / "python3"
    old.write_text('#!/bin/sh\n[ "$1" = -V ] && echo "Python 3.10.12"; exit 1\n')
    old.chmod(0o755)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    # When an action needs the command
    result = run_action(
        "status", {}, workspace=workspace, env={**os.environ, "PATH": path}, action_root=checkout
    )
    # Then it says which Python it found and what to do
    assert result.returncode == 2
    assert (
        "::error::wheelgate needs Python 3.11 or newer, and python3 is Python 3.10.12: set up a "
        "newer one first (actions/setup-python)" in result.stdout
    )
