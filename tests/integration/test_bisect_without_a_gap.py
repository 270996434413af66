"""Bisecting across runs that failed and runs never reported, on ``wheelgate local`` with real
pip and uv: a directory with one required smoke test, a regression entering in a run whose
smoke test failed (as every later one did), and the newest run still unreported. ``--good
promoted --bad latest`` installs the failed runs by their test's evidence and the newest by
its offer (its wheel needing a dependency that lives only in nightly), and names the culprit
exactly; so is a culprit that was never reported."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LocalProcess
from tests.integration.installs import pip
from wheelgate.local.sample_wheels import build_wheel

# Real pip installs each run's test job, then a bisect per installer: `make test` only.
pytestmark = pytest.mark.slow

INDEX = "e2e/gap"
#: Each run: its version, whether its smoke test passed, whether it is reported at all. From
#: gap-2 on the build is broken; gap-6, never reported, breaks it again after gap-5 fixed it,
#: and the newest, gap-7, is not reported yet.
RUNS = {
    "gap-0": ("1.0", True, True),
    "gap-1": ("1.1", True, True),
    "gap-2": ("1.2", False, True),
    "gap-3": ("1.3", False, True),
    "gap-4": ("1.4", False, False),
    "gap-5": ("1.5", True, True),
    "gap-6": ("1.6", False, False),
    "gap-7": ("1.7", False, False),
}
CULPRIT = "gap-2"
BROKEN = {"gap-2", "gap-3", "gap-4", "gap-6", "gap-7"}
CHECK = "import gap_core, sys; sys.exit(1 if gap_core.BROKEN else 0)"


def commit(run_id: str) -> str:
    return hashlib.sha256(run_id.encode()).hexdigest()[:40]


@pytest.fixture(scope="module")
def gap(local: LocalProcess, venv_factory: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Stage, test and report the runs of :data:`RUNS`; run gap-0 also releases gap-dep."""
    work = tmp_path_factory.mktemp("gap")
    for n, (run_id, (version, passed, reported)) in enumerate(RUNS.items()):
        source = f"BROKEN = {run_id in BROKEN}\n"
        core = build_wheel(
            work / run_id, "gap-core", version, requires=["gap-dep"], module_source=source
        )
        files = [str(core)]
        if n == 0:
            files.append(str(build_wheel(work / run_id, "gap-dep", "1.0")))
        staged = local.wheelgate(
            *("stage", "--run-id", run_id, "--index", INDEX, "--commit", commit(run_id)),
            *("--commit-time", f"2026-03-02T0{n}:00:00Z", *files),
        )
        assert staged.returncode == 0, staged.stderr
        if reported:
            index_url = json.loads(staged.stdout)["index_url"]
            _smoke(local, venv_factory(f"gap-{n}"), run_id, index_url, passed)
    local.wait_idle()
    return INDEX


def _smoke(local: LocalProcess, venv: Path, run_id: str, index_url: str, passed: bool) -> None:
    report = venv / "installed.json"
    done = pip(venv, "install", "--report", str(report), "--index-url", index_url, "gap-core")
    assert done.returncode == 0, done.stdout + done.stderr
    url = f"https://github.com/example/project/actions/runs/{run_id}"
    result = "passed" if passed else "failed"
    reported = local.wheelgate(
        *("report", "--run-id", run_id, "--commit", commit(run_id)),
        *("--test", f"{INDEX}:smoke={result}@{url}", "--installed", f"{INDEX}:smoke={report}"),
    )
    assert reported.returncode == 0, reported.stderr
    status = local.wheelgate("status", run_id, "--wait", "60")
    assert status.returncode == (0 if passed else 1), status.stdout + status.stderr


def bisect(
    local: LocalProcess, index: str, work: Path, good: str, bad: str, installer: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *(sys.executable, "-m", "wheelgate", "bisect", "run", "--index", index, "--json"),
            *("--good", good, "--bad", bad, "--installer", installer),
            *("--session", str(work / "session"), "--cache-dir", str(work / "cache")),
            *("--staging-url", local.staging_url, "--nightly-url", local.nightly_url),
            *("--", "python", "-c", CHECK),
        ],
        env={**os.environ, **local.env},
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
    )


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_the_culprit_entering_in_a_failed_run_is_found_between_promoted_and_a_later_run(
    installer: str, local: LocalProcess, gap: str, tmp_path: Path
) -> None:
    done = bisect(local, gap, tmp_path, "run:gap-1", "run:gap-4", installer)

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["first_bad"]["run_id"] == CULPRIT
    assert result["last_good"]["run_id"] == "gap-1"
    installed = {s["run_id"]: s["install"] for s in result["steps"]}
    assert installed["gap-4"] == {"route": "offer", "test": None, "reason": ""}
    assert installed[CULPRIT] == {"route": "evidence", "test": "smoke", "reason": ""}
    assert " · offer · " in done.stderr
    assert " · test 'smoke' · " in done.stderr


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_a_culprit_never_reported_is_found_by_its_offer_while_latest_is_unreported(
    installer: str, local: LocalProcess, gap: str, tmp_path: Path
) -> None:
    done = bisect(local, gap, tmp_path, "promoted", "latest", installer)

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["last_good"]["run_id"], result["first_bad"]["run_id"]) == ("gap-5", "gap-6")
    routes = {s["run_id"]: (s["verdict"], s["install"]["route"]) for s in result["steps"]}
    assert routes["gap-6"] == routes["gap-7"] == ("bad", "offer")
