"""``wheelgate bisect`` end to end on ``wheelgate local``: a history CI made (stage, a real pip
install from each run's index as its test's evidence, report, the promoter's decisions;
``bisect_history.py``), then ``bisect run`` and ``bisect install`` as a person runs them, in
their own process, with real pip and uv. A planted regression is found and no run is blamed
for WheelGate's own trouble; a test's environment is reproduced exactly; the command's exits,
a kill and a resume behave as docs/bisect.md says."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from tests.integration.bisect_history import (
    INDEX,
    PLANTED,
    TROUBLES,
    BlameHistory,
    build_history,
)
from tests.integration.conftest import LocalProcess
from tests.integration.test_bisect_install import contents, holds
from wheelgate.bisect.cache import FILES_DIR, STATE_FILE
from wheelgate.core.layout import STAGING

# Real pip and uv install into fresh virtualenvs: `make test` only.
pytestmark = pytest.mark.slow

#: Nothing listens there: a download from it fails.
CLOSED = "http://127.0.0.1:9/"


@pytest.fixture(scope="module")
def blame(
    local: LocalProcess, venv_factory: Any, tmp_path_factory: pytest.TempPathFactory
) -> BlameHistory:
    return build_history(local, venv_factory, tmp_path_factory.mktemp("blame"), "e2e-blame-")


def bisect(
    local: LocalProcess,
    history: BlameHistory,
    work: Path,
    *options: str,
    check: tuple[str, int] = ("import", -1),
    installer: str = "pip",
) -> tuple[int, dict[str, Any] | None, str]:
    """``wheelgate bisect run --json`` in its own process with the session and cache in
    ``work``, running the check script (its mode and the BUILD it acts on); its exit, its
    result (``None`` when it printed none) and what it wrote to stderr."""
    mode, at = check
    # A resumed bisect runs the command it started with (given again, it must be the same).
    command = [] if "--resume" in options else ["--", "python", str(history.script)]
    done = subprocess.run(
        [
            *(sys.executable, "-m", "wheelgate", "bisect", "run", "--index", INDEX, "--json"),
            *("--session", str(work / "session"), "--cache-dir", str(work / "cache")),
            *("--staging-url", local.staging_url, "--nightly-url", local.nightly_url),
            *("--installer", installer, *options),
            *(command and [*command, mode, str(at), str(work / "calls.log")]),
        ],
        env={**local_env(local)},
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
    )
    result = json.loads(done.stdout) if done.stdout.strip() else None
    return done.returncode, result, done.stderr


def local_env(local: LocalProcess) -> dict[str, str]:
    return {**os.environ, **local.env}


def ends(history: BlameHistory, good: int, bad: int) -> list[str]:
    return ["--good", f"run:{history.run_id(good)}", "--bad", f"run:{history.run_id(bad)}"]


def skips(result: dict[str, Any]) -> dict[str, str]:
    """Each skipped run's id and its reason."""
    return {s["run_id"]: s["reason"] for s in result["skipped"]}


def troubled(history: BlameHistory) -> dict[str, str]:
    return {history.run_id(n): reason for n, reason in TROUBLES.items()}


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_the_planted_regression_is_found_and_no_run_is_blamed_for_wheelgates_trouble(
    installer: str, local: LocalProcess, blame: BlameHistory, tmp_path: Path
) -> None:
    code, result, stderr = bisect(local, blame, tmp_path, *ends(blame, 0, 8), installer=installer)

    assert code == 0, stderr
    assert result is not None
    assert result["first_bad"]["run_id"] == blame.run_id(PLANTED)
    assert result["last_good"]["run_id"] == blame.run_id(PLANTED - 1)
    # Every run a step met trouble with is skipped with its own reason, none counted bad
    bad = {s["run_id"] for s in result["steps"] if s["verdict"] == "bad"}
    assert bad <= {blame.run_id(PLANTED), blame.run_id(8)}
    assert skips(result)
    assert skips(result).items() <= troubled(blame).items()
    # The order is the commits', which the versions' local labels (hashes) do not follow
    assert result["order"] == "commit-time"
    versions = [Version(r.wheel.name.split("-")[1]) for r in blame.runs]
    assert sorted(versions) != versions


def test_when_skips_hide_the_first_bad_run_each_is_listed_with_its_reason(
    local: LocalProcess, blame: BlameHistory, tmp_path: Path
) -> None:
    # Given a check that calls run 6 bad too: only troubled runs lie between it and run 1, which
    # was never reported and installs by its offer
    code, result, stderr = bisect(
        local, blame, tmp_path, *ends(blame, 0, 8), check=("threshold", 6)
    )

    assert code == 6, stderr
    assert result is not None
    assert result["conclusion"] == "inconclusive"
    assert [r["run_id"] for r in result["could_be"]] == [blame.run_id(n) for n in range(2, 7)]
    [offer] = [s for s in result["steps"] if s["run_id"] == blame.run_id(1)]
    assert (offer["verdict"], offer["install"]["route"]) == ("good", "offer")
    assert skips(result) == troubled(blame)


@pytest.mark.parametrize(
    ("check", "options", "exit_code", "step_exit", "verdict"),
    [
        (("skip", 7), [], 6, 125, "skip"),
        (("hang", 7), ["--timeout", "2"], 0, 124, "bad"),
        (("hang", 7), ["--timeout", "2", "--timeout-is", "skip"], 6, 124, "skip"),
    ],
    ids=["125-skips", "timeout-is-bad", "timeout-is-skip"],
)
def test_the_commands_exit_is_read_as_git_bisect_run_reads_it(
    check: tuple[str, int],
    options: list[str],
    exit_code: int,
    step_exit: int,
    verdict: str,
    local: LocalProcess,
    blame: BlameHistory,
    tmp_path: Path,
) -> None:
    code, result, stderr = bisect(local, blame, tmp_path, *ends(blame, 6, 8), *options, check=check)

    assert code == exit_code, stderr
    assert result is not None
    [step] = [s for s in result["steps"] if s["run_id"] == blame.run_id(PLANTED)]
    assert (step["exit_code"], step["verdict"]) == (step_exit, verdict)


def test_an_end_that_does_not_hold_exits_1(
    local: LocalProcess, blame: BlameHistory, tmp_path: Path
) -> None:
    code, result, stderr = bisect(local, blame, tmp_path, *ends(blame, PLANTED, 8))

    assert code == 1, stderr
    assert result is not None
    assert result["conclusion"] == "good-end-is-bad"


def test_a_command_killed_by_a_signal_aborts_and_resume_finishes_without_retesting(
    local: LocalProcess, blame: BlameHistory, tmp_path: Path
) -> None:
    code, _, stderr = bisect(local, blame, tmp_path, *ends(blame, 6, 8), check=("signal", 7))
    assert code == 130, stderr
    assert "aborted" in stderr

    # When the command is fixed and the bisect resumed
    (tmp_path / "calls.log.fixed").touch()
    code, result, stderr = bisect(local, blame, tmp_path, "--resume")

    assert code == 0, stderr
    assert result is not None
    assert result["first_bad"]["run_id"] == blame.run_id(PLANTED)
    assert calls(tmp_path) == Counter({6: 1, 8: 1, 7: 2})


def calls(work: Path) -> Counter[int]:
    """How often the check ran on each BUILD."""
    return Counter(int(line) for line in (work / "calls.log").read_text().split())


def test_killed_mid_step_and_resumed_no_step_is_retested_and_no_file_downloaded_twice(
    local: LocalProcess, blame: BlameHistory, tmp_path: Path
) -> None:
    # Given a bisect whose process is killed (SIGKILL) while the command runs its third step
    code, _, _ = bisect(local, blame, tmp_path, *ends(blame, 0, 8), check=("kill-parent", 2))
    assert code == -signal.SIGKILL
    before = calls(tmp_path)
    assert sum(before.values()) == 3

    # When it is resumed
    code, result, stderr = bisect(local, blame, tmp_path, "--resume")

    # Then it finds the culprit; only the killed step ran again, and each file came once
    assert code == 0, stderr
    assert result is not None
    assert result["first_bad"]["run_id"] == blame.run_id(PLANTED)
    after = calls(tmp_path)
    [killed] = [build for build, n in after.items() if n == 2]
    assert after == Counter({**dict.fromkeys(after, 1), killed: 2})
    tested = [s["run_id"] for s in result["steps"]]
    assert len(tested) == len(set(tested))
    state = json.loads((tmp_path / "cache" / STATE_FILE).read_text())
    stored = list((tmp_path / "cache" / FILES_DIR).iterdir())
    assert state["counters"]["downloads"] == len(stored) == len(state["entries"])
    log = subprocess.run(
        [
            sys.executable,
            "-m",
            "wheelgate",
            "bisect",
            "log",
            "--session",
            str(tmp_path / "session"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert log.stdout.count("→") == len(tested)


def install(
    local: LocalProcess, run_id: str, work: Path, installer: str, *, staging: str, nightly: str
) -> dict[str, Any]:
    """``wheelgate bisect install run:ID --as-test install --json``; what it installed."""
    done = installing(local, run_id, work, installer, staging=staging, nightly=nightly)
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(json.loads(done.stdout))


def installing(
    local: LocalProcess, run_id: str, work: Path, installer: str, *, staging: str, nightly: str
) -> subprocess.CompletedProcess[str]:
    """The ``bisect install`` process :func:`install` runs, however it ended."""
    return subprocess.run(
        [
            *(sys.executable, "-m", "wheelgate", "bisect", "install", f"run:{run_id}"),
            *("--index", INDEX, "--as-test", "install", "--json", "--installer", installer),
            *("--venv", str(work / f"venv-{nightly == CLOSED}"), "--cache-dir", str(work / "c")),
            *("--staging-url", staging, "--nightly-url", nightly),
        ],
        env=local_env(local),
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
    )


def evidence(local: LocalProcess, run_id: str) -> set[str]:
    """The SHA-256s the run's manifest says its test ``install`` installed."""
    s3 = local.client("s3")
    body = s3.get_object(Bucket=local.env["WHEELGATE_STAGING_BUCKET"], Key=STAGING.manifest(run_id))
    manifest = json.loads(body["Body"].read())
    [test] = [t for s in manifest["sets"] for t in s["tests"] if t["name"] == "install"]
    return {i["sha256"] for i in test["installed"]}


def run_pages(local: LocalProcess, run_id: str) -> list[str]:
    """The keys of the run's own index pages in staging."""
    listed = local.client("s3").list_objects_v2(
        Bucket=local.env["WHEELGATE_STAGING_BUCKET"], Prefix=STAGING.run_prefix(run_id)
    )
    return [
        o["Key"]
        for o in listed.get("Contents", [])
        if o["Key"].endswith(("index.html", "index.json"))
    ]


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_a_test_is_reproduced_exactly_after_its_runs_pages_expire_and_again_offline(
    installer: str, local: LocalProcess, blame: BlameHistory, tmp_path: Path
) -> None:
    # Given run 6 (promoted: its files come from nightly) whose own pages have expired
    run_id = blame.run_id(6)
    for key in run_pages(local, run_id):
        local.client("s3").delete_object(Bucket=local.env["WHEELGATE_STAGING_BUCKET"], Key=key)
    assert run_pages(local, run_id) == []

    # When its test "install" is installed, then again with staging and nightly out of reach
    first = install(
        local, run_id, tmp_path, installer, staging=local.staging_url, nightly=local.nightly_url
    )
    second = install(local, run_id, tmp_path, installer, staging=CLOSED, nightly=CLOSED)

    # Then both environments hold exactly the bytes the manifest's evidence names
    wanted = evidence(local, run_id)
    assert (first["route"], first["test"]) == ("evidence", "install")
    assert {f["sha256"] for f in first["files"]} == wanted
    cached = [next((tmp_path / "c" / FILES_DIR / sha).iterdir()) for sha in wanted]
    assert holds(tmp_path / "venv-False") == holds(tmp_path / "venv-True") == contents(*cached)
    assert [f["downloaded"] for f in first["files"]] == [True]
    assert [f["downloaded"] for f in second["files"]] == [False]
    state = json.loads((tmp_path / "c" / STATE_FILE).read_text())
    assert state["counters"]["downloads"] == 1


def test_offline_a_cached_history_others_could_have_written_is_refused(
    local: LocalProcess, blame: BlameHistory, tmp_path: Path
) -> None:
    # Given run 6 installed once (its history cached), then the cached history's directory
    # made writable by every user of the machine, and staging and nightly out of reach
    run_id = blame.run_id(6)
    install(local, run_id, tmp_path, "pip", staging=local.staging_url, nightly=local.nightly_url)
    shared = tmp_path / "c" / "history"
    shared.chmod(0o777)
    assert shared.stat().st_mode & 0o002
    # When it is installed again offline
    done = installing(local, run_id, tmp_path, "pip", staging=CLOSED, nightly=CLOSED)
    # Then the cached copy is refused, naming where and the fix, and nothing was installed
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("wheelgate bisect install: error: the cached run history")
    assert f"chmod go-w {shared}" in done.stderr
    assert not (tmp_path / "venv-True").exists()
