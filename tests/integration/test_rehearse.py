"""``wheelgate rehearse`` in a repository that copied the example workflows unchanged, with a
families file for a project of its own (not torch): the release's build-stage-test-report path
for one family against the embedded stack, then the promoted files installed from its nightly
with real pip and uv, hermetically. Two projects with different names: one with a compiled
tag (this Python's ``cpXY-cpXY-linux_x86_64``), tested through pip's route; one pure Python
(``py3-none-any``), tested through uv's."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.integration.conftest import STOP_SECONDS, uv_binary
from tests.integration.decoy import Decoy
from tests.integration.installs import pip, uv_install
from tests.integration.test_actions import SYSTEM_PATH
from wheelgate.local.sample_wheels import build_wheel

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "github"
#: The files a team copies into .github/ (README.md beside them), each as it is.
COPIED = {
    "workflows/release-nightly.yml": "release-nightly.yml",
    "workflows/report.yml": "report.yml",
    "workflows/rehearse-release.yml": "rehearse-release.yml",
    "workflows/dev.yml": "dev.yml",
    "workflows/deps.yml": "deps.yml",
    "wheelgate-uv.txt": "wheelgate-uv.txt",
}
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
_CPYTHON = f"cp{sys.version_info.major}{sys.version_info.minor}"
#: This Python's compiled-extension tag, as a project with C extensions builds for Linux
#: (cp311-cp311-linux_x86_64).
COMPILED_TAG = f"{_CPYTHON}-{_CPYTHON}-linux_{platform.machine()}"


def families(project: str, module: str) -> dict[str, Any]:
    """A families file of the project's own: one family, this Python, its build copying the
    prebuilt wheels to dist/, a test importing the module from the job's venv and one that
    installs a tool with `python -m pip` as the example's tests do (hermetically, from $TOOLS)."""
    return {
        "projects": [project],
        "install": [project],
        "build": 'mkdir -p dist && cp "$PREBUILT"/*.whl dist/',
        "pythons": [PYTHON],
        "tests": {
            "smoke": (
                f"python -c 'import os, sys, {module}; "
                'assert sys.prefix == os.environ["VIRTUAL_ENV"], sys.prefix\''
            ),
            "tool": (
                "env -u PIP_FIND_LINKS PIP_CONFIG_FILE=/dev/null python -m pip install "
                '--no-index --no-cache-dir --find-links "$TOOLS" standin-tool '
                "&& python -c 'import standin_tool'"
            ),
        },
        "families": [
            {
                "index": "v1/linux",
                "name": "linux",
                "runner": "ubuntu-24.04",
                "tests": ["smoke", "tool"],
            }
        ],
    }


def copied_repository(root: Path, document: dict[str, Any]) -> Path:
    """A repository with the examples copied unchanged and its own families file."""
    github = root / "repo" / ".github"
    (github / "workflows").mkdir(parents=True)
    for target, source in COPIED.items():
        shutil.copy2(EXAMPLES / source, github / target)
    (github / "wheelgate-families.json").write_text(json.dumps(document, indent=2))
    return root / "repo"


def runner_env(root: Path, decoy: Decoy, *, planted: bool) -> dict[str, str]:
    """This machine as a team's: on PATH the family's Python (python3.X), uv and the system's
    tools, and in the shell the settings of a deployed stack (:func:`deployed_settings`), which
    the rehearsal must not use. With ``planted``, pip's and uv's configuration is the decoy's,
    so an install that is not hermetic fails the test (pip's route reads no index but the
    run's); else it is the machine's own (uv seeds its venv with pip from its index)."""
    tools = root / "tools"
    tools.mkdir()
    base = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    for command in ("python", "python3", f"python{PYTHON}"):
        (tools / command).symlink_to(base)
    (tools / "uv").symlink_to(uv_binary())
    build_wheel(root / "tools-wheels", "standin-tool", "1.0")
    machine = {
        k: v
        for k, v in (os.environ if planted else decoy.unplanted(os.environ)).items()
        if not k.startswith(("AWS_", "WHEELGATE_"))
    }
    return {
        **machine,
        **deployed_settings(decoy),
        "PATH": f"{tools}{os.pathsep}{SYSTEM_PATH}",
        "TOOLS": str(root / "tools-wheels"),
        "PREBUILT": str(root / "prebuilt"),
    }


def deployed_settings(decoy: Decoy) -> dict[str, str]:
    """A team's shell after working on its deployed stack: a profile this machine does not
    have, service endpoints (which boto3 takes over ``AWS_ENDPOINT_URL``) and WheelGate
    settings the embedded stack does not set, all pointing at the decoy, which counts any
    request as the test's failure. A rehearsal that kept one would fail or reach it."""
    return {
        "AWS_PROFILE": "deployed",
        "AWS_ENDPOINT_URL_S3": f"{decoy.url}/deployed-s3/",
        "AWS_ENDPOINT_URL_SQS": f"{decoy.url}/deployed-sqs/",
        "AWS_ENDPOINT_URL_KMS": f"{decoy.url}/deployed-kms/",
        "WHEELGATE_STAGING_BUCKET": "deployed-staging",
        "WHEELGATE_STAGING_BASE_URL": f"{decoy.url}/deployed-staging/",
        "WHEELGATE_VERDICT_KEY_ARN": "arn:aws:kms:us-east-1:111122223333:key/deployed",
    }


class Rehearsal:
    """``wheelgate rehearse --serve`` running in the repository: its decision, its log."""

    def __init__(self, repo: Path, env: dict[str, str], installer: str) -> None:
        self.repo = repo
        self.log = repo.parent / "rehearse.log"
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [
                    *(sys.executable, "-m", "wheelgate", "rehearse", "--family", "linux"),
                    *("--installer", installer, "--serve"),
                ],
                cwd=repo,
                env=env,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, self.log.read_text()
        self.decision: dict[str, Any] = json.loads(line)

    def steps(self) -> set[str]:
        """The ``wheelgate job`` steps it ran."""
        return set(
            re.findall(r"^wheelgate rehearse: \$ wheelgate job (\w+)", self.log.read_text(), re.M)
        )

    def stop(self) -> None:
        """SIGTERM, as Ctrl-C; the embedded stack stops with it (its endpoint refuses)."""
        self.process.terminate()
        self.process.wait(timeout=STOP_SECONDS)
        endpoint = urlsplit(self.decision["env"]["AWS_ENDPOINT_URL"])
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((str(endpoint.hostname), int(endpoint.port or 0)), 5)


@pytest.fixture
def rehearse(tmp_path: Path, decoy: Decoy) -> Iterator[Callable[..., Rehearsal]]:
    started: list[Rehearsal] = []

    def run(project: str, version: str, tag: str, installer: str) -> Rehearsal:
        module = project.replace("-", "_")
        build_wheel(tmp_path / "prebuilt", project, version, tag=tag)
        repo = copied_repository(tmp_path, families(project, module))
        env = runner_env(tmp_path, decoy, planted=installer == "pip")
        started.append(Rehearsal(repo, env, installer))
        return started[-1]

    yield run
    for rehearsal in started:
        rehearsal.stop()


def installed_version(venv: Path, module: str) -> str:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", f"import {module}; print({module}.__version__)"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def copy_findings(repo: Path) -> set[str]:
    """The kinds of finding ``wheelgate check-workflows`` names in the copies, held to a
    deployment of the family (its index directory, tests and workflow files)."""
    settings = [
        *("--index-dir", "v1/linux", "--release-event", "schedule"),
        *("--release-workflow", ".github/workflows/release-nightly.yml"),
        *("--reporter-workflow", ".github/workflows/report.yml"),
        *("--deps-workflow", ".github/workflows/deps.yml"),
        *("--required-test", "v1/linux=smoke", "--required-test", "v1/linux=tool"),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "wheelgate", "check-workflows", *settings],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    return {line.split(": ")[1] for line in done.stdout.splitlines()}


def assert_promoted_and_installable(
    rehearsal: Rehearsal, project: str, version: str, venv_factory: Any
) -> None:
    decision = rehearsal.decision
    assert (decision["state"], decision["reason"]) == ("promoted", ""), rehearsal.log.read_text()
    assert decision["requirements"] == [f"{project}=={version}"]
    # the rehearsal ran the release workflow's own steps, each named in the copied workflows
    copied = "".join((EXAMPLES / source).read_text() for source in COPIED.values())
    assert rehearsal.steps() == {"handover", "install", "test", "collect"}
    assert all(f"wheelgate job {step} " in copied for step in rehearsal.steps())
    # and the promoted file installs from the embedded stack's nightly with pip and with uv
    url, module = decision["nightly_index_url"], project.replace("-", "_")
    with_pip, with_uv = venv_factory("nightly-pip"), venv_factory("nightly-uv")
    done = pip(with_pip, "install", "--no-cache-dir", "--index-url", url, f"{project}=={version}")
    assert done.returncode == 0, done.stdout + done.stderr
    done = uv_install(with_uv, "--no-cache", "--index-url", url, f"{project}=={version}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert installed_version(with_pip, module) == installed_version(with_uv, module) == version


def test_a_compiled_project_rehearsed_with_pip_is_promoted_and_installs_from_nightly(
    rehearse: Callable[..., Rehearsal], venv_factory: Any
) -> None:
    # Given a repository that copied the examples unchanged, for acme-widget, whose build
    # leaves a wheel tagged for this Python's compiled extensions
    # When its team rehearses the release of its family with pip's route
    rehearsal = rehearse("acme-widget", "1.2.0", COMPILED_TAG, "pip")
    # Then the embedded promoter promoted it, and pip and uv install it from nightly
    assert_promoted_and_installable(rehearsal, "acme-widget", "1.2.0", venv_factory)
    assert COMPILED_TAG in rehearsal.log.read_text()
    # and check-workflows finds nothing in the copies but the placeholders left to fill: no
    # project of another team, no family or test the deployment does not know
    assert copy_findings(rehearsal.repo) == {"placeholder"}


def test_a_pure_python_project_rehearsed_with_uv_is_promoted_and_installs_from_nightly(
    rehearse: Callable[..., Rehearsal], venv_factory: Any
) -> None:
    # Given the same copies, for tiny-tool, a pure Python project (py3-none-any)
    # When its team rehearses the release of its family with uv's route
    rehearsal = rehearse("tiny-tool", "0.3.1", "py3-none-any", "uv")
    # Then it is promoted, and pip and uv install it from nightly
    assert_promoted_and_installable(rehearsal, "tiny-tool", "0.3.1", venv_factory)
