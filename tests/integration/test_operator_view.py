"""An operator's view through ``wheelgate local``: ``wheelgate status`` prints a summary for
people on a terminal (a pseudo-terminal here) and JSON to a pipe or with ``--json``;
``wheelgate runs`` lists recent decisions, newest first, from the status site's state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LocalProcess
from tests.integration.installs import evidence, pip_report, sha256
from wheelgate.core.display import human_size
from wheelgate.local.names import STAGING_BUCKET
from wheelgate.local.sample_wheels import build_wheel

# Wheelgate local and the command in processes of their own: `make test` only.
pytestmark = pytest.mark.slow

FIRST, SECOND, THIRD = "ops-view/a", "ops-view/b", "ops-view/c"
URL = "https://github.com/example/project/actions/runs/{run}"


def on_a_terminal(
    local: LocalProcess, *argv: str, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """``wheelgate ARGV`` with its stdout on a pseudo-terminal, as an operator runs it (with
    ``env`` added to its environment)."""
    primary, secondary = os.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "wheelgate", *argv],
        stdout=secondary,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **local.env, **(env or {})},
    )
    os.close(secondary)
    chunks = []
    while True:
        try:
            data = os.read(primary, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(primary)
    code = process.wait(timeout=60)
    return code, b"".join(chunks).decode().replace("\r\n", "\n")


def decide(
    local: LocalProcess, make_venv: Any, run: str, index: str, wheel: Path, result: str
) -> str:
    """Stage ``wheel`` as ``run`` in ``index``, install it from the run's index with pip's
    report as its test does, report the test's ``result`` with that report, and wait for the
    decision about that manifest; the manifest's SHA-256."""
    commit = run[-1] * 40
    staged = local.wheelgate(
        "stage", "--run-id", run, "--index", index, "--commit", commit, str(wheel)
    )
    assert staged.returncode == 0, staged.stderr
    report = pip_report(make_venv, json.loads(staged.stdout)["index_url"], [wheel])
    reported = local.wheelgate(
        *("report", "--run-id", run, "--commit", commit),
        *("--test", f"{index}:smoke={result}@{URL.format(run=run)}"),
        *evidence(index, report),
    )
    assert reported.returncode == 0, reported.stderr
    sha256 = json.loads(reported.stdout)["manifest_sha256"]
    waited = local.wheelgate("status", run, "--wait", "60", "--manifest-sha256", sha256)
    assert waited.returncode in (0, 1), waited.stdout + waited.stderr
    return str(sha256)


@pytest.fixture(scope="module")
def decided(
    local: LocalProcess, tmp_path_factory: pytest.TempPathFactory, venv_factory: Any
) -> dict[str, Any]:
    """Given run ops-1 promoted and then run ops-2 rejected in FIRST, and run ops-3 promoted
    in SECOND (in that order)."""
    wheels = tmp_path_factory.mktemp("ops-wheels")
    one = build_wheel(wheels, "ops-one", "1.0")
    two = build_wheel(wheels, "ops-one", "2.0")
    three = build_wheel(wheels, "ops-three", "1.0")
    return {
        "ops-1": (decide(local, venv_factory, "ops-1", FIRST, one, "passed"), one),
        "ops-2": (decide(local, venv_factory, "ops-2", FIRST, two, "failed"), two),
        "ops-3": (decide(local, venv_factory, "ops-3", SECOND, three, "passed"), three),
    }


def test_status_on_a_terminal_is_a_summary_for_people(
    local: LocalProcess, decided: dict[str, Any]
) -> None:
    # When an operator asks about the rejected run on a terminal
    code, text = on_a_terminal(local, "status", "ops-2")
    # Then the summary says its state and reason, its set with its test, and where the record is
    assert code == 1
    lines = text.splitlines()
    assert lines[0] == "run ops-2: rejected (tests-failed)"
    assert f"{FIRST}: rejected (tests-failed)" in lines
    assert f"  test smoke: failed  {URL.format(run='ops-2')}" in lines
    assert "  files: none released" in lines
    assert lines[-1] == f"record: s3://{STAGING_BUCKET}/records/ops-2.json"
    assert not text.lstrip().startswith("{")
    # And the promoted run names each file it released, with the test it shipped on
    code, text = on_a_terminal(local, "status", "ops-1")
    _, wheel = decided["ops-1"]
    assert code == 0
    assert text.splitlines()[0] == "run ops-1: promoted"
    assert any(
        line.startswith(f"  file {wheel.name}  ") and line.endswith("copied, shipped on smoke")
        for line in text.splitlines()
    ), text


def test_status_to_a_pipe_or_with_json_is_the_record(
    local: LocalProcess, decided: dict[str, Any]
) -> None:
    piped = local.wheelgate("status", "ops-2")
    assert piped.returncode == 1
    document = json.loads(piped.stdout)
    assert (document["run_id"], document["state"], document["reason"]) == (
        "ops-2",
        "rejected",
        "tests-failed",
    )
    # where the record is, beside it (the status action's record_url)
    assert document["record_url"] == f"s3://{STAGING_BUCKET}/records/ops-2.json"
    code, text = on_a_terminal(local, "status", "ops-2", "--json")
    assert code == 1
    assert json.loads(text) == document


def test_runs_lists_recent_decisions_newest_first(
    local: LocalProcess, decided: dict[str, Any]
) -> None:
    # When the operator lists the decisions of FIRST (JSON, as a pipe gets them)
    listed = local.wheelgate("runs", "--index", FIRST)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    # Then both runs are there, the later decision first
    assert [(r["run_id"], r["index"], r["state"], r["reason"]) for r in rows] == [
        ("ops-2", FIRST, "rejected", "tests-failed"),
        ("ops-1", FIRST, "promoted", None),
    ]
    assert rows[0]["at"] > rows[1]["at"]
    # And the filters narrow it down
    rejected = json.loads(local.wheelgate("runs", "--state", "rejected", "--limit", "50").stdout)
    assert {r["state"] for r in rejected} == {"rejected"}
    assert "ops-2" in {r["run_id"] for r in rejected}
    assert "ops-1" not in {r["run_id"] for r in rejected}
    newest = json.loads(local.wheelgate("runs", "--index", FIRST, "--limit", "1").stdout)
    assert [r["run_id"] for r in newest] == ["ops-2"]
    second = json.loads(local.wheelgate("runs", "--index", SECOND).stdout)
    assert [r["run_id"] for r in second] == ["ops-3"]
    everything = json.loads(local.wheelgate("runs", "--limit", "200").stdout)
    ats = [r["at"] for r in everything]
    assert ats == sorted(ats, reverse=True)
    assert {"ops-1", "ops-2", "ops-3"} <= {r["run_id"] for r in everything}


def test_runs_on_a_terminal_is_a_table(local: LocalProcess, decided: dict[str, Any]) -> None:
    code, text = on_a_terminal(local, "runs", "--index", FIRST)
    assert code == 0
    header, *rows = text.splitlines()
    assert header.split() == ["decided", "state", "run", "index", "commit", "reason:", "message"]
    assert rows[0].split()[3:7] == ["rejected", "ops-2", FIRST, "2" * 12]
    assert rows[1].split()[3:7] == ["promoted", "ops-1", FIRST, "1" * 12]
    assert "tests-failed: set" in rows[0]


def test_a_rejected_run_gives_the_commit_its_manifest_states(
    local: LocalProcess, decided: dict[str, Any]
) -> None:
    # When the operator asks about the rejected run, whose record the promoter wrote without
    # the commit (JSON, as a pipe gets it)
    status = json.loads(local.wheelgate("status", "ops-2").stdout)
    rows = json.loads(local.wheelgate("runs", "--index", FIRST).stdout)
    # Then both give the commit the run's manifest states
    assert status["commit"] == "2" * 40
    assert [(r["run_id"], r["commit"]) for r in rows] == [("ops-2", "2" * 40), ("ops-1", "1" * 40)]
    _, text = on_a_terminal(local, "status", "ops-2")
    assert f"commit {'2' * 40}" in text.splitlines()[2]


def test_a_run_staged_and_never_reported_shows_what_is_staged(
    local: LocalProcess, tmp_path: Path
) -> None:
    # Given a run that was staged and never reported
    wheel = build_wheel(tmp_path, "ops-staged", "1.0")
    staged = local.wheelgate(
        *("stage", "--run-id", "ops-6", "--index", FIRST, "--commit", "6" * 40, str(wheel))
    )
    assert staged.returncode == 0, staged.stderr
    # When the operator asks about it
    asked = local.wheelgate("status", "ops-6")
    # Then it is pending, with its files, their commit and its index
    assert asked.returncode == 3
    document = json.loads(asked.stdout)
    assert document["state"] == "pending"
    assert document["message"].startswith("staged, not reported yet")
    assert document["commit"] == "6" * 40
    [found] = document["staged"]
    assert found["index_url"] == json.loads(staged.stdout)["index_url"]
    assert found["commit"] == "6" * 40
    assert found["files"] == [
        {"filename": wheel.name, "sha256": sha256(wheel), "size": wheel.stat().st_size}
    ]
    code, text = on_a_terminal(local, "status", "ops-6")
    assert code == 3
    assert f"  index: {found['index_url']}" in text.splitlines()
    assert (
        f"  file {wheel.name}  {human_size(wheel.stat().st_size)}  sha256 {sha256(wheel)}" in text
    )
    # And it says there is no record yet, never where one would be
    assert document["record_url"] is None
    assert text.splitlines()[-1] == "record: none yet (not decided yet)"
    assert "s3://" not in text


def test_a_run_nothing_is_known_of_is_told_apart_from_a_pending_one(local: LocalProcess) -> None:
    asked = local.wheelgate("status", "ops-never")
    assert asked.returncode == 5
    document = json.loads(asked.stdout)
    assert (document["state"], document["message"]) == (
        "unknown",
        "unknown run: nothing is staged, reported or decided under this run id",
    )
    assert document["record_url"] is None
    code, text = on_a_terminal(local, "status", "ops-never")
    assert (code, text.splitlines()[0]) == (5, "run ops-never: unknown")
    assert text.splitlines()[-1] == "record: none (no such run)"
    assert "s3://" not in text


def test_a_yank_prints_a_summary_and_is_listed_once(
    local: LocalProcess, tmp_path_factory: pytest.TempPathFactory, venv_factory: Any
) -> None:
    # Given a run promoted in THIRD
    wheel = build_wheel(tmp_path_factory.mktemp("ops-yank"), "ops-yanked", "1.0")
    decide(local, venv_factory, "ops-7", THIRD, wheel, "passed")
    # When the operator yanks its file on a terminal
    code, text = on_a_terminal(
        local, "yank", "--index", THIRD, wheel.name, "--reason", "broken on gfx942"
    )
    # Then the outcome says what it did to which file, not the record's JSON
    assert code == 0, text
    lines = text.splitlines()
    assert lines[0] == f"yanked {wheel.name} in {THIRD} (reason: broken on gfx942)"
    assert lines[1].startswith("  request yank-")
    assert lines[1].endswith(": promoted")
    assert not any(line.lstrip().startswith("{") for line in lines)
    yank_id = lines[1].split()[1].rstrip(":")
    # And --json gets the record, on a terminal too (and a pipe: the other tests' `local`)
    code, text = on_a_terminal(local, "unyank", "--index", THIRD, wheel.name, "--json")
    unyank = json.loads(text)
    assert (code, unyank["state"]) == (0, "promoted")
    # And the decisions list each request once, under THIRD, never under its archive
    rows = json.loads(local.wheelgate("runs", "--limit", "200").stdout)
    listed = [(r["run_id"], r["index"]) for r in rows if r["kind"] == "yank"]
    assert listed.count((yank_id, THIRD)) == 1
    assert listed.count((unyank["run_id"], THIRD)) == 1
    assert [run for run, _ in listed].count(yank_id) == 1
    assert not [r for r in rows if "_archive" in (r["index"] or "")]


def test_runs_on_a_terminal_shows_every_configured_directory(
    local: LocalProcess, decided: dict[str, Any]
) -> None:
    # Given the configured directories (the stack's index_dirs) include one never promoted to
    configured = {"WHEELGATE_ALLOWED_INDEXES": json.dumps([FIRST, SECOND, "ops-view/empty"])}
    # When the operator lists the decisions on a terminal
    code, text = on_a_terminal(local, "runs", env=configured)
    # Then below the table each directory says the run it was last promoted from, or none
    assert code == 0
    tail = text.split("\n\n")[-1].splitlines()
    # (the session's stack is shared: other modules' directories may be listed too)
    [first] = [line for line in tail if line.startswith(f"{FIRST}: ")]
    assert first.startswith(f"{FIRST}: run ops-1 promoted ")
    assert f"commit {'1' * 12}" in first
    assert "ops-view/empty: No run promoted yet" in tail
    assert any(line.startswith(f"{SECOND}: run ops-3 promoted ") for line in tail)
