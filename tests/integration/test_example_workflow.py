"""The example release workflows' own steps, run as written against ``wheelgate local``: the
``run:`` scripts read from ``examples/github/*.yml`` and run as the runner runs them (``bash -eo
pipefail``, ``GITHUB_OUTPUT``/``GITHUB_PATH``/``GITHUB_ENV`` honoured between steps), the
WheelGate actions run from a checkout of this repository (``tests/integration/composite.py``),
with the build and the GPU tests replaced by a stand-in wheel and a test that imports it: torch
for the uv example, and for the pip example and the rehearsal projects the examples were not
written for (a hyphenated name with a compiled tag, a pure Python one), since no line of theirs
may name a project. What a user copies is what runs: the families file read into matrices,
the hash-pinned uv, the uv venv on PATH with ``wheelgate installed`` as evidence (or pip's
report), the report job's collection, ``report`` and ``status`` deciding ``promoted``."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.composite import BASH, REPO, evaluate, read_github_file, run_action
from tests.integration.conftest import LocalProcess
from tests.integration.decoy import Decoy
from tests.integration.test_actions import SYSTEM_PATH, action_checkout
from wheelgate.local.sample_wheels import build_wheel

pytestmark = pytest.mark.slow

EXAMPLES = REPO / "examples" / "github"
INDEX = "v2/gfx-example"
FAMILY = "gfx-example"
COMMIT = "b" * 40
_CPYTHON = f"cp{sys.version_info.major}{sys.version_info.minor}"


@dataclass(frozen=True)
class Project:
    """The project a families file releases: its name, the version built and the wheel's tag."""

    name: str
    version: str
    tag: str = "py3-none-any"

    @property
    def module(self) -> str:
        return self.name.replace("-", "_")

    @property
    def stand_in_test(self) -> str:
        """The stand-in for the GPU tests: the module imports, from the job's venv."""
        return (
            f"python -c 'import os, sys, {self.module}; "
            'assert sys.prefix == os.environ["VIRTUAL_ENV"], sys.prefix; '
            f"print({self.module}.__version__)'"
        )


TORCH = Project("torch", "2.9.0")
#: The pip example's project: a name with a hyphen (its wheel says acme_widget) and this
#: Python's compiled-extension tag, as a project with C extensions builds for Linux.
WIDGET = Project("acme-widget", "1.2.0", f"{_CPYTHON}-{_CPYTHON}-linux_{platform.machine()}")
#: The rehearsal's project: pure Python.
TINY = Project("tiny-tool", "0.3.1")
#: A test that installs a tool as the example's families file does, with `python -m pip`
#: (the one command for both routes: uv's venv is seeded with pip), hermetically from $TOOLS.
STAND_IN_TOOL_TEST = (
    "env -u PIP_FIND_LINKS PIP_CONFIG_FILE=/dev/null python -m pip install --no-index "
    "--no-cache-dir --find-links \"$TOOLS\" standin-tool && python -c 'import standin_tool'"
)


def workflow_steps(name: str, job: str) -> dict[str, dict[str, Any]]:
    document = yaml.safe_load((EXAMPLES / name).read_text())
    return {step.get("name", step.get("uses", "")): step for step in document["jobs"][job]["steps"]}


@dataclass
class Runner:
    """One job on a runner: its workspace, environment, RUNNER_TEMP, the directories steps
    added to PATH and the variables they added to GITHUB_ENV, and the expressions it knows."""

    workspace: Path
    env: dict[str, str]
    runner_temp: Path
    actions: Path
    context: dict[str, str]
    path: list[str] = field(default_factory=list)
    added_env: dict[str, str] = field(default_factory=dict)
    count: int = 0

    def environment(self) -> dict[str, str]:
        env = {**self.env, **self.added_env}
        env["PATH"] = os.pathsep.join([*reversed(self.path), self.env["PATH"]])
        return env

    def run(self, step: dict[str, Any], job_env: dict[str, str]) -> dict[str, str]:
        """A ``run:`` step as written, with its ``env`` evaluated; its outputs. Fails the test
        if the step fails."""
        self.count += 1
        files = {k: self.runner_temp / f"{k}.{self.count}" for k in ("output", "path", "env")}
        for file in files.values():
            file.write_text("")
        script = self.runner_temp / f"step{self.count}.sh"
        script.write_text(step["run"])
        env = {
            **self.environment(),
            **{k: evaluate(str(v), self.context) for k, v in job_env.items()},
            **{k: evaluate(str(v), self.context) for k, v in (step.get("env") or {}).items()},
            "GITHUB_OUTPUT": str(files["output"]),
            "GITHUB_PATH": str(files["path"]),
            "GITHUB_ENV": str(files["env"]),
            "GITHUB_WORKSPACE": str(self.workspace),
            "RUNNER_TEMP": str(self.runner_temp),
        }
        done = subprocess.run(
            [*BASH, str(script)],
            cwd=self.workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, f"{step.get('name')}:\n{done.stdout}\n{done.stderr}"
        self.path += files["path"].read_text().split()
        self.added_env |= read_github_file(files["env"].read_text())
        return read_github_file(files["output"].read_text())

    def action(self, name: str, **inputs: str) -> dict[str, str]:
        result = run_action(
            name,
            inputs,
            workspace=self.workspace,
            env=self.environment(),
            run_id=self.context["github.run_id"],
            sha=COMMIT,
            action_root=self.actions,
            runner_temp=self.runner_temp,
            timeout=600,
        )
        assert result.returncode == 0, f"{name}:\n{result.stdout}\n{result.stderr}"
        self.path += result.path
        return result.outputs


@pytest.fixture(scope="module")
def actions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return action_checkout(tmp_path_factory.mktemp("checkout") / "wheelgate")


def runner(
    tmp: Path, name: str, stack_env: Mapping[str, str], actions: Path, decoy: Decoy, run: str
) -> Runner:
    """A fresh runner whose `python`/`python3` is a plain Python (as setup-python's), with
    ``stack_env`` (the local stack's buckets and URLs, as the workflows set them) and no other
    AWS or WheelGate setting in its environment."""
    workspace, runner_temp, tools = tmp / name, tmp / f"{name}-temp", tmp / f"{name}-tools"
    for directory in (workspace, runner_temp, tools):
        directory.mkdir()
    base = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    for command in (
        "python",
        "python3",
        f"python{sys.version_info.major}.{sys.version_info.minor}",
    ):
        (tools / command).symlink_to(base)
    machine = {
        k: v
        for k, v in decoy.unplanted(os.environ).items()
        if not k.startswith(("AWS_", "WHEELGATE_"))
    }
    wheels = tmp / "tools-wheels"
    if not wheels.exists():
        build_wheel(wheels, "standin-tool", "1.0")
    env = {
        **machine,
        **stack_env,
        "PATH": f"{tools}{os.pathsep}{SYSTEM_PATH}",
        "TOOLS": str(wheels),
    }
    context = {
        "github.run_id": run,
        "github.run_attempt": "1",
        "github.server_url": "https://github.com",
        "github.repository": "ROCm/TheRock",
        "steps.python.outputs.python-path": str(tools / "python3"),
    }
    return Runner(workspace, env, runner_temp, actions, context)


def families_file(directory: Path, project: Project) -> None:
    """The user's families file, one family whose build hands over the project's stand-in
    wheel and whose tests import it and install a tool with pip (from ``TOOLS``, which
    :func:`runner` sets)."""
    (directory / ".github").mkdir(parents=True, exist_ok=True)
    (directory / ".github" / "wheelgate-families.json").write_text(
        json.dumps(
            {
                "projects": [project.name],
                "install": [project.name],
                "build": 'mkdir -p dist && cp "$PREBUILT"/*.whl dist/',
                # This Python: the one the runner has (python3.X), as setup-python's would be.
                "pythons": [f"{sys.version_info.major}.{sys.version_info.minor}"],
                "tests": {"smoke": project.stand_in_test, "unit": STAND_IN_TOOL_TEST},
                "families": [
                    {
                        "index": INDEX,
                        "name": FAMILY,
                        "runner": "linux-mi300-1gpu",
                        "tests": ["smoke", "unit"],
                    }
                ],
            }
        )
    )
    shutil.copy2(EXAMPLES / "wheelgate-uv.txt", directory / ".github" / "wheelgate-uv.txt")


def passed_lines(run: str) -> str:
    """The test job's results: both tests of the families file passed."""
    url = f"https://github.com/ROCm/TheRock/actions/runs/{run}/attempts/1"
    return f"{INDEX}:smoke=passed@{url}\n{INDEX}:unit=passed@{url}\n"


def evidence_lines() -> str:
    """The report job's installed.txt: each test's evidence is its job's one file."""
    evidence = f"results/{FAMILY}/{FAMILY}.installed.json"
    return f"{INDEX}:smoke={evidence}\n{INDEX}:unit={evidence}\n"


def copy_tree(source: Path, target: Path) -> None:
    """An artifact downloaded with merge-multiple: the uploaded directory's files, merged."""
    shutil.copytree(source, target, dirs_exist_ok=True)


def stage(job: Runner) -> None:
    """The stage action: its output in the job's context, as the later steps read it."""
    job.context["steps.stage.outputs.index_url"] = job.action(
        "stage", index=INDEX, files="dist/*.whl"
    )["index_url"]


def build_job(build: Runner, release: str) -> None:
    """The build job's steps after checkout: setup, build, stage, hand over."""
    job_env = yaml.safe_load((EXAMPLES / release).read_text())["jobs"]["build"]["env"]
    steps = workflow_steps(release, "build")
    build.action("setup")
    build.run(steps["Build wheels"], job_env)
    stage(build)
    build.run(steps["Tell the test jobs what to install, and from where"], job_env)


def report_and_wait(jobs: Runner, test_result: str = "success") -> dict[str, str]:
    """report.yml's steps after the downloads: collect, report, status."""
    steps = workflow_steps("report.yml", "report")
    jobs.context["inputs.test-result"] = test_result
    jobs.action("setup")
    jobs.run(steps["Collect the test results of every staged directory"], {})
    reported = jobs.action(
        "report", **{"test-files": "tests.txt", "installed-files": "installed.txt"}
    )
    return jobs.action("status", **{"manifest-sha256": reported["manifest_sha256"], "wait": "120"})


@dataclass(frozen=True)
class Night:
    """One release run of an example against the local stack: every job's runner has the
    stack's buckets and URLs and the run's id."""

    tmp_path: Path
    local: LocalProcess
    actions: Path
    decoy: Decoy
    run: str

    def runner(self, name: str) -> Runner:
        return runner(self.tmp_path, name, self.local.env, self.actions, self.decoy, self.run)


def plan_and_build(night: Night, release: str, project: Project) -> tuple[Runner, dict[str, Any]]:
    """A release example's plan job (setup, then the families file read into the matrices)
    and its build job (the families file's command, the project's stand-in wheel,
    stage, hand over): the build's runner, and the test matrix's one entry."""
    plan = night.runner("plan")
    families_file(plan.workspace, project)
    plan.action("setup")
    outputs = plan.run(workflow_steps(release, "plan")["Read the families"], {})
    build_matrix, test_matrix = json.loads(outputs["build"]), json.loads(outputs["test"])
    assert [b["index"] for b in build_matrix] == [t["index"] for t in test_matrix] == [INDEX]

    build_wheel(night.tmp_path / "prebuilt", project.name, project.version, tag=project.tag)
    build = night.runner("build")
    families_file(build.workspace, project)
    build.env["PREBUILT"] = str(night.tmp_path / "prebuilt")
    build.context |= {f"matrix.{k}": v for k, v in build_matrix[0].items()}
    build_job(build, release)
    return build, test_matrix[0]


def start_test_job(night: Night, build: Runner, entry: dict[str, Any], project: Project) -> Runner:
    """The test job of the matrix ``entry`` on a fresh runner, with the build's artifact."""
    test = night.runner("test")
    families_file(test.workspace, project)
    copy_tree(build.workspace / "staged", test.workspace / "staged")
    test.context |= {f"matrix.{k}": v for k, v in entry.items() if isinstance(v, str)}
    test.context["toJSON(matrix.tests)"] = json.dumps(entry["tests"])
    return test


def report_job(night: Night, build: Runner, test: Runner) -> tuple[Runner, dict[str, str]]:
    """The report job on the build's and the test's artifacts: its runner, the status."""
    report = night.runner("report")
    copy_tree(build.workspace / "staged", report.workspace / "staged")
    copy_tree(test.workspace / "results", report.workspace / "results")
    return report, report_and_wait(report)


def test_the_uv_example_stages_tests_in_the_uv_venv_reports_and_is_promoted(
    local: LocalProcess, actions: Path, decoy: Decoy, tmp_path: Path
) -> None:
    run, release = "example-uv", "release-nightly-uv.yml"
    night = Night(tmp_path, local, actions, decoy, run)
    # Given the plan job's matrices, and the build job that built, staged and handed over
    build, entry = plan_and_build(night, release, TORCH)

    # When the test job installs uv by its hashes, torch with it, and runs the stand-in test
    test = start_test_job(night, build, entry, TORCH)
    job_env = yaml.safe_load((EXAMPLES / release).read_text())["jobs"]["test"]["env"]
    steps = workflow_steps(release, "test")
    test.run(steps["Install uv, hash-pinned"], job_env)
    test.action("setup")
    test.run(steps["Install from the run's staging index with uv, as users do"], job_env)
    test.run(steps["Run the tests"], job_env)

    # Then the build handed over the torch version it built, and the evidence is wheelgate
    # installed's, of the uv venv, holding the staged torch
    assert (build.workspace / "staged" / f"{FAMILY}.txt").read_text().splitlines()[:2] == [
        INDEX,
        f"torch=={TORCH.version}",
    ]
    results = test.workspace / "results" / FAMILY
    evidence = json.loads((results / f"{FAMILY}.installed.json").read_text())
    assert evidence["schema"] == "wheelgate/environment/v1"
    assert [d["version"] for d in evidence["distributions"] if d["name"] == "torch"] == [
        TORCH.version
    ]
    assert (results / f"{FAMILY}.txt").read_text() == passed_lines(run)

    # When the report job collects the artifacts, reports and waits
    report, status = report_job(night, build, test)

    # Then the run is promoted: the bytes the uv venv held are the bytes released
    assert (status["state"], status["reason"]) == ("promoted", "")
    assert (report.workspace / "installed.txt").read_text() == evidence_lines()


def test_the_pip_example_stages_tests_in_the_pip_venv_with_its_report_and_is_promoted(
    local: LocalProcess, actions: Path, decoy: Decoy, tmp_path: Path
) -> None:
    run, release = "example-pip", "release-nightly.yml"
    night = Night(tmp_path, local, actions, decoy, run)
    # Given the plan job's matrices, and the build job that built, staged and handed over
    # for a project the examples were not written for: acme-widget, with a compiled tag
    build, entry = plan_and_build(night, release, WIDGET)
    # and pinned the run's closure (what a --require-hashes test would install)
    pins = build.action("pins", index=INDEX, projects=WIDGET.name)["requirements"]
    assert f"{WIDGET.name}=={WIDGET.version} \\\n    --hash=sha256:" in Path(pins).read_text()
    handover = (build.workspace / "staged" / f"{FAMILY}.txt").read_text().splitlines()
    assert handover[:2] == [INDEX, f"{WIDGET.name}=={WIDGET.version}"]

    # When the test job installs it with pip, keeping its report, and runs the stand-in test
    test = start_test_job(night, build, entry, WIDGET)
    job_env = yaml.safe_load((EXAMPLES / release).read_text())["jobs"]["test"]["env"]
    steps = workflow_steps(release, "test")
    test.action("setup")
    test.run(steps["Install from the run's staging index with pip, as users do"], job_env)
    test.run(steps["Run the tests"], job_env)

    # Then the evidence is pip's report of the venv the test ran in, holding the staged wheel
    results = test.workspace / "results" / FAMILY
    evidence = json.loads((results / f"{FAMILY}.installed.json").read_text())
    installed = {i["metadata"]["name"]: i["metadata"]["version"] for i in evidence["install"]}
    assert installed == {WIDGET.name: WIDGET.version}
    wheels = [i["download_info"]["url"].rsplit("/", 1)[-1] for i in evidence["install"]]
    assert wheels == [f"{WIDGET.module}-{WIDGET.version}-{WIDGET.tag}.whl"]
    assert (results / f"{FAMILY}.txt").read_text() == passed_lines(run)

    # When the report job collects the artifacts, reports and waits
    report, status = report_job(night, build, test)

    # Then the run is promoted on pip's report as evidence
    assert (status["state"], status["reason"]) == ("promoted", "")
    assert (report.workspace / "installed.txt").read_text() == evidence_lines()


def processes_under(path: Path) -> list[int]:
    """The processes whose command line names ``path`` (a test's own temporary directory):
    what a step left running in the background, as the runner's job end would stop it."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(path) in (proc / "cmdline").read_text():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.fixture
def rehearsal_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    for pid in processes_under(tmp_path / "rehearse-temp"):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


# The uv route only: the pip route differs in the --installer wheelgate rehearse gets, which
# tests/integration/test_rehearse.py runs; a second run here would cost a minute of CI (the
# local extra's install) for no step this one does not run.
@pytest.mark.parametrize("installer", ["uv"])
def test_the_rehearsal_runs_a_family_against_wheelgate_local_on_the_runner_alone(
    actions: Path, decoy: Decoy, rehearsal_dir: Path, installer: str
) -> None:
    tmp_path, run = rehearsal_dir, f"rehearsal-{installer}"
    document = yaml.safe_load((EXAMPLES / "rehearse-release.yml").read_text())
    workflow_env = document["env"]
    # Given the plan job for the family asked for (workflow_dispatch's input), on a runner
    # with no AWS or WheelGate setting at all, of a project that is not torch
    plan = runner(tmp_path, "plan", {}, actions, decoy, run)
    families_file(plan.workspace, TINY)
    plan.context["inputs.family"] = FAMILY
    plan.action("setup")
    steps = workflow_steps("rehearse-release.yml", "plan")
    test_matrix = json.loads(plan.run(steps["Read the family"], workflow_env)["test"])
    # and the dist/ the build job uploaded
    job = runner(tmp_path, "rehearse", {}, actions, decoy, run)
    families_file(job.workspace, TINY)
    build_wheel(job.workspace / "dist", TINY.name, TINY.version, tag=TINY.tag)
    # and the WheelGate repository at the actions' commit, checked out to .wheelgate
    shutil.copytree(actions.parent, job.workspace / ".wheelgate")
    (entry,) = test_matrix
    job.context |= {f"matrix.{k}": v for k, v in entry.items() if isinstance(v, str)}
    job.context |= {"inputs.family": FAMILY, "inputs.installer": installer}
    steps = workflow_steps("rehearse-release.yml", "rehearse")

    # When the rehearsal job runs its steps: uv (on its route), wheelgate's local extra, and
    # wheelgate rehearse on the family
    for name in (
        "Install uv, hash-pinned",
        "Install wheelgate with its local extra",
        "Rehearse the release against the embedded stack",
    ):
        job.run(steps[name], workflow_env)

    # Then the embedded promoter, requiring the family's tests, promoted the run: both tests
    # of the one families file passed in uv's venv, pip's tool install included
    decision = json.loads((job.runner_temp / "decision.json").read_text())
    assert (decision["state"], decision["reason"]) == ("promoted", "")
    assert decision["requirements"] == [f"{TINY.name}=={TINY.version}"]
    assert decision["env"]["AWS_ENDPOINT_URL"].startswith("http://127.0.0.1:")
    assert decision["env"]["WHEELGATE_ALLOWED_INDEXES"] == json.dumps([INDEX])
