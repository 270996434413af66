"""Naming runs (REF) through a history ``wheelgate stage`` wrote on ``wheelgate local``: two
attempts of one run, two commits sharing a prefix, a run id that is also a commit prefix, and
every run staged on one day. ``bisect install REF`` says which run a REF named (a run never
reported installs its offer, and the command names it) or lists the candidates; ``latest``
is the newest run that installs."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.integration.conftest import LocalProcess
from wheelgate.local.sample_wheels import build_wheel

# Each REF is a wheelgate process of its own, a second or more on this machine.
pytestmark = pytest.mark.slow

INDEX = "e2e/naming"
SHARED = "beef" + "0" * 36
SHARED_TOO = "beef1" + "1" * 35
RUN_ID_AS_PREFIX = "cafe"
CAFE_COMMIT = "cafe" + "2" * 36


@pytest.fixture(scope="module")
def naming(local: LocalProcess, tmp_path_factory: pytest.TempPathFactory) -> LocalProcess:
    """Runs staged in this order (none reported): nm-1 attempt 1 and 2 (commit beef0...),
    nm-2 (beef1...), cafe (commit 2222...), nm-3 (commit cafe...)."""
    work = tmp_path_factory.mktemp("naming")
    staged = [
        ("nm-1", SHARED, "1", "1.0+gbeef000"),
        ("nm-1", SHARED, "2", "1.0+gbeef000"),
        ("nm-2", SHARED_TOO, "1", "1.0+gbeef111"),
        (RUN_ID_AS_PREFIX, "2" * 40, "1", "1.0+g2222222"),
        ("nm-3", CAFE_COMMIT, "1", "1.0+gcafe222"),
    ]
    # An attempt stages the very files its run's first attempt did.
    wheels = {v: build_wheel(work / v, "e2e-naming", v) for _, _, _, v in staged}
    for n, (run_id, commit, attempt, version) in enumerate(staged):
        wheel = wheels[version]
        done = local.wheelgate(
            *("stage", "--run-id", run_id, "--index", INDEX, "--commit", commit),
            *("--attempt", attempt, "--commit-time", f"2026-03-02T0{n}:00:00Z", str(wheel)),
        )
        assert done.returncode == 0, done.stderr
    local.wait_idle()
    return local


def named(local: LocalProcess, ref: str, tmp_path: Path, *options: str) -> tuple[int, str]:
    """``bisect install REF``'s exit, and its stdout and stderr."""
    done = subprocess.run(
        [
            *(sys.executable, "-m", "wheelgate", "bisect", "install", ref, "--index", INDEX),
            *("--venv", str(tmp_path / "venv"), "--cache-dir", str(tmp_path / "cache")),
            *("--staging-url", local.staging_url, "--nightly-url", local.nightly_url),
            *options,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("ref", "run"),
    [
        ("run:nm-1", "nm-1"),
        ("beef1", "nm-2"),
        ("BEEF0", "nm-1"),
        ("commit:cafe", "nm-3"),
        ("run:cafe", RUN_ID_AS_PREFIX),
    ],
)
def test_a_ref_naming_one_run_resolves_to_it(
    ref: str, run: str, naming: LocalProcess, tmp_path: Path
) -> None:
    code, said = named(naming, ref, tmp_path)

    assert code == 0, said
    assert f"run {run} (" in said
    assert "its offer (never reported)" in said


def test_latest_is_the_newest_run_which_a_run_never_reported_is_when_its_offer_installs(
    naming: LocalProcess, tmp_path: Path
) -> None:
    code, said = named(naming, "latest", tmp_path)

    assert code == 0, said
    assert "run nm-3 (" in said
    assert "its offer (never reported)" in said


def test_latest_passes_over_every_run_that_cannot_be_installed_and_says_why(
    naming: LocalProcess, tmp_path: Path
) -> None:
    # Given a project that no run staged: no run can be installed with it
    code, stderr = named(naming, "latest", tmp_path, "--project", "absent")

    assert code == 2, stderr
    assert stderr.startswith(
        "wheelgate bisect install: error: 'latest': no run of this index directory can be "
        "installed:\n  run nm-3 · cafe222"
    )
    assert stderr.count(": missing-project: ") == 4  # each run the history lists, newest first


@pytest.mark.parametrize(
    ("ref", "listed"),
    [("beef", ["nm-1", "nm-2"]), ("cafe", [RUN_ID_AS_PREFIX, "nm-3"])],
)
def test_a_ref_naming_several_runs_lists_them_and_exits_2(
    ref: str, listed: list[str], naming: LocalProcess, tmp_path: Path
) -> None:
    code, stderr = named(naming, ref, tmp_path)

    assert code == 2, stderr
    assert f"names {len(listed)} runs, say which:" in stderr
    for run in listed:
        assert f"run {run} " in stderr


def test_a_day_names_the_last_run_staged_that_day(naming: LocalProcess, tmp_path: Path) -> None:
    today = datetime.now(UTC).date().isoformat()

    code, said = named(naming, today, tmp_path)

    assert code == 0, said
    assert "run nm-3 (" in said
