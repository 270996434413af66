"""``wheelgate bisect run`` as people and attackers use it: ``latest`` names a run that
installs, ``--json`` keeps stdout for the result, ``--as-test`` reaches every step, every error
names its command, and a session trusts no directory, venv or candidate list it did not make."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.bisect_world import EXIT_FILE, FakeInstaller, linear_history, newest_first
from tests.unit.test_bisect_cli import bisect_run, use, world  # noqa: F401 - the fixture
from wheelgate.bisect.run_installer import SKIP_EXPIRED
from wheelgate.bisect.session import SessionStore
from wheelgate.cli import bisect as cli_bisect
from wheelgate.cli.main import main
from wheelgate.history.model import HistoryFile, HistoryRun

SESSION = Path(cli_bisect.DEFAULT_SESSION)


def test_latest_passes_over_a_run_that_cannot_be_installed_and_says_why(
    world: list[HistoryRun],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given the newest run expired (the planner refuses it) and the regression in run 1006
    use(monkeypatch, FakeInstaller(bad={r.run_id for r in world[6:]}, skips={"1009": SKIP_EXPIRED}))
    # When the bisect ends at latest
    assert bisect_run() == 0
    # Then latest was run 1008, and the note naming run 1009 and why is printed and kept
    out = capsys.readouterr().out
    passed = "latest: passed over run 1009"
    assert passed in out
    assert f"{SKIP_EXPIRED}: run 1009: planted {SKIP_EXPIRED}" in out
    session = SessionStore(SESSION).load()
    assert session.candidates[-1].run_id == "1008"
    assert any(note.startswith(passed) for note in session.notes)


def test_json_keeps_stdout_for_one_document_while_the_command_prints(
    world: list[HistoryRun],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    # Given a command that prints to its stdout at every step
    use(monkeypatch, FakeInstaller(bad={r.run_id for r in world[6:]}))
    noisy = f'echo "command says hello"; exit "$(cat "$VIRTUAL_ENV/{EXIT_FILE}")"'
    argv = ["bisect", "run", "--index", "v2/gfx94X-dcgpu", "--good", "1000", "--bad", "latest"]
    # When the bisect runs with --json
    code = main([*argv, "--json", "--", "sh", "-c", noisy])
    captured = capfd.readouterr()
    # Then the command's words went to stderr, and stdout parses as one JSON document
    assert code == 0
    assert "command says hello" in captured.err
    assert json.loads(captured.out)["conclusion"] == "found"


def test_as_test_is_kept_in_the_session_and_used_at_every_step(
    world: list[HistoryRun],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    installer = FakeInstaller(bad={r.run_id for r in world[6:]})
    use(monkeypatch, installer)
    assert bisect_run("--as-test", "smoke") == 0
    assert SessionStore(SESSION).load().args.as_test == "smoke"
    assert installer.as_tests
    assert set(installer.as_tests) == {"smoke"}


@pytest.mark.parametrize(
    ("argv", "prefix"),
    [
        (["bisect", "log", "--session", "nowhere"], "wheelgate bisect log: error: "),
        (
            ["bisect", "install", "abc", "--index", "v2/gfx94X-dcgpu"],
            "wheelgate bisect install: error: ",
        ),
    ],
)
def test_every_bisect_error_starts_with_its_own_command(
    world: list[HistoryRun],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    prefix: str,
) -> None:
    monkeypatch.setattr(
        "wheelgate.cli.bisect_install.read_runs", lambda args, index, chosen: newest_first(world)
    )
    monkeypatch.setattr(
        "wheelgate.cli.bisect_install.build_installer", lambda chosen, **how: FakeInstaller()
    )
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith(prefix)


def test_a_short_commit_prefix_says_four_digits_are_needed_as_bisect_run(
    world: list[HistoryRun],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    use(monkeypatch, FakeInstaller())
    assert bisect_run(good="abc") == 2
    err = capsys.readouterr().err
    assert err.startswith("wheelgate bisect run: error: 'abc': a commit prefix needs at least 4")


def test_a_new_session_refuses_a_venv_it_did_not_make(
    world: list[HistoryRun],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a venv planted in the session directory, whose python would run at every step
    planted = SESSION / "venv" / "bin" / "python"
    planted.parent.mkdir(parents=True)
    planted.write_text("#!/bin/sh\necho planted\n")
    assert not SessionStore(SESSION).exists()
    installer = FakeInstaller(bad={r.run_id for r in world[6:]})
    use(monkeypatch, installer)
    # When a new bisect starts there: it is refused, and nothing was installed or run
    assert bisect_run() == 2
    assert f"{SESSION / 'venv'} exists" in capsys.readouterr().err
    assert not installer.installs


def test_a_session_directory_others_can_write_is_refused(
    world: list[HistoryRun],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    SESSION.mkdir(mode=0o777)
    SESSION.chmod(0o777)
    assert SESSION.stat().st_mode & 0o002
    use(monkeypatch, FakeInstaller())
    assert bisect_run() == 2
    err = capsys.readouterr().err
    assert "can be written by other users" in err
    assert "chmod go-w" in err


def aborted(runs: list[HistoryRun], monkeypatch: pytest.MonkeyPatch) -> FakeInstaller:
    """A bisect whose third probe's command was killed, its session saved; the installer will
    not kill it again."""
    installer = FakeInstaller(bad={r.run_id for r in runs[6:]}, exits={"1004": 137})
    use(monkeypatch, installer)
    assert bisect_run() == cli_bisect.EXIT_ABORTED
    installer.exits.clear()
    return installer


def test_a_resumed_session_refuses_a_directory_made_writable_since(
    world: list[HistoryRun],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    aborted(world, monkeypatch)
    SESSION.chmod(0o777)
    assert main(["bisect", "run", "--resume"]) == 2
    assert "can be written by other users" in capsys.readouterr().err
    assert main(["bisect", "log"]) == 2


def test_resume_refuses_a_session_whose_candidates_changed_naming_the_change(
    world: list[HistoryRun],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a bisect aborted mid-way, then session.json's candidate 1005 given other bytes
    installer = aborted(world, monkeypatch)
    saved = json.loads((SESSION / "session.json").read_text())
    forged = next(c for c in saved["candidates"] if c["run_id"] == "1005")
    forged["files"][0]["sha256"] = "f" * 64
    (SESSION / "session.json").write_text(json.dumps(saved))
    assert SessionStore(SESSION).load().candidates[5].files[0].sha256 == "f" * 64
    # When it is resumed: refused, naming the run and its file, and nothing installed again
    installs = sum(installer.installs.values())
    assert main(["bisect", "run", "--resume"]) == 2
    err = capsys.readouterr().err
    assert "run 1005: its files changed" in err
    assert "sha256:ffffffffffff" in err
    assert sum(installer.installs.values()) == installs


def test_resume_refuses_when_the_history_lost_a_candidate(
    world: list[HistoryRun],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    aborted(world, monkeypatch)
    rewritten = [r for r in world if r.run_id != "1003"]
    monkeypatch.setattr(cli_bisect, "read_runs", lambda args, index, url: newest_first(rewritten))
    assert main(["bisect", "run", "--resume"]) == 2
    assert "run 1003 is no longer in the history" in capsys.readouterr().err


def test_changed_files_are_named_by_name_and_hash() -> None:
    from wheelgate.bisect.session import changed_candidates

    runs = linear_history(2)
    other = HistoryFile(**{**runs[1].files[0].model_dump(), "sha256": "e" * 64})
    now = [runs[0], runs[1].model_copy(update={"files": (other,)})]
    assert changed_candidates(runs, runs) == []
    assert changed_candidates(runs, now) == [
        f"run 1001: its files changed (no longer {other.filename} "
        f"sha256:{runs[1].files[0].sha256[:12]}, now {other.filename} sha256:eeeeeeeeeeee)"
    ]
