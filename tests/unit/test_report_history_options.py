"""``wheelgate report`` states, as the reporter's word, when the run's commit was made
(``--commit-time``, default: the commit's time in the git checkout at hand) and the CI run's
attempt (``--attempt``, default: ``$GITHUB_RUN_ATTEMPT``); a bad value is one line and exit 2,
before any storage call."""

from __future__ import annotations

import json

import pytest

from tests.unit.samples import COMMIT, INDEX
from tests.unit.test_cli_options import no_storage as no_storage
from tests.unit.test_cli_options import refused
from wheelgate.core.manifest import ManifestFile
from wheelgate.staging.manifest_building import build_manifest

FILE = ManifestFile(filename="pkg-1.0-py3-none-any.whl", sha256="a" * 64, size=1)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            ["--commit-time", "2099-01-01T00:00:00.000000"],
            "--commit-time: '2099-01-01T00:00:00.000000' has no UTC offset (add Z or +HH:MM)",
        ),
        (["--commit-time", "soon"], "--commit-time: 'soon' is not an ISO 8601 time"),
        (["--attempt", "0"], "--attempt must be a positive integer (the CI run's attempt)"),
    ],
)
def test_report_refuses_a_bad_commit_time_or_attempt_naming_the_option(
    options: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["report", "--run-id", "1", "--commit", COMMIT, f"--test={INDEX}:smoke=passed"]
    assert refused([*argv, *options], capsys).startswith(f"wheelgate report: error: {message}")


def test_the_manifest_states_the_commit_time_and_attempt_when_they_are_known() -> None:
    stated = build_manifest(
        run_id="1",
        commit=COMMIT,
        staged={INDEX: [FILE]},
        tests=[],
        commit_time="2026-03-02T13:05:00.000000Z",
        attempt=2,
    )
    unknown = build_manifest(run_id="1", commit=COMMIT, staged={INDEX: [FILE]}, tests=[])

    assert (stated.commit_time, stated.attempt) == ("2026-03-02T13:05:00.000000Z", 2)
    assert {"commit_time", "attempt"} - set(json.loads(unknown.to_json())) == {
        "commit_time",
        "attempt",
    }
