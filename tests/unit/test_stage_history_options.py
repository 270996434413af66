"""``wheelgate stage``'s options for the run history: ``--commit-time`` (default: the commit's
time in the git checkout at hand) and ``--attempt`` (default: ``$GITHUB_RUN_ATTEMPT``); a bad
value is one line and exit 2, before any storage call."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.unit.samples import COMMIT, INDEX
from tests.unit.test_cli_options import WHEEL, refused
from tests.unit.test_cli_options import no_storage as no_storage
from wheelgate.cli.stage import attempt_option, commit_time_option, git_commit_time

ATTEMPT = "must be a positive integer (the CI run's attempt), not"
ISO = "is not an ISO 8601 time (e.g. 2026-03-02T14:05:00+01:00)"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--attempt", "0"], f"--attempt {ATTEMPT} '0'"),
        (["--attempt", "two"], f"--attempt {ATTEMPT} 'two'"),
        (["--commit-time", "yesterday"], f"--commit-time: 'yesterday' {ISO}"),
        (
            ["--commit-time", "2026-03-02T14:05:00"],
            "--commit-time: '2026-03-02T14:05:00' has no UTC offset (add Z or +HH:MM)",
        ),
    ],
)
def test_a_bad_history_option_is_one_line_and_exit_2(
    options: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["stage", "--run-id", "1", "--index", INDEX, "--commit", COMMIT, *options, WHEEL]
    assert refused(argv, capsys) == f"wheelgate stage: error: {message}"


def test_a_bad_github_run_attempt_is_named(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_RUN_ATTEMPT", "-1")
    argv = ["stage", "--run-id", "1", "--index", INDEX, "--commit", COMMIT, WHEEL]
    assert refused(argv, capsys) == (
        "wheelgate stage: error: GITHUB_RUN_ATTEMPT must be a positive integer "
        "(the CI run's attempt), not '-1'"
    )


def test_the_attempt_comes_from_the_option_then_the_environment_then_is_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GITHUB_RUN_ATTEMPT", raising=False)
    assert attempt_option(None) is None
    monkeypatch.setenv("GITHUB_RUN_ATTEMPT", "3")
    assert (attempt_option(None), attempt_option("2")) == (3, 2)


def test_a_commit_time_with_an_offset_is_recorded_in_utc() -> None:
    assert commit_time_option("2026-03-02T14:05:00+01:00", COMMIT) == "2026-03-02T13:05:00.000000Z"


def test_the_commit_time_defaults_to_the_checkouts_commit_and_to_none_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {
        "GIT_COMMITTER_DATE": "2026-03-02T14:05:00+01:00",
        "GIT_AUTHOR_DATE": "2026-03-02T14:05:00+01:00",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "PATH": "/usr/bin:/bin",
    }
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True, env=env)
    subprocess.run(
        [*git, "commit", "-q", "--allow-empty", "-m", "x"], cwd=repo, check=True, env=env
    )
    sha = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()

    monkeypatch.chdir(repo)
    assert git_commit_time(sha) == "2026-03-02T14:05:00+01:00"
    assert commit_time_option(None, sha) == "2026-03-02T13:05:00.000000Z"
    assert git_commit_time(COMMIT) is None  # not in this checkout
    monkeypatch.chdir(tmp_path)
    assert commit_time_option(None, sha) is None  # not a checkout
