"""A bisect's steps over a fake installer and a real shell command: no wrong blame, skips
with their reasons, resume with no step retested, prefetch of the next two candidates."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.bisect_world import SHELL_COMMAND, FakeInstaller, linear_history
from wheelgate.bisect.candidates import Order
from wheelgate.bisect.command import CommandAborted, CommandResult, run_command
from wheelgate.bisect.prefetch import next_possible
from wheelgate.bisect.run_installer import (
    SKIP_BY_COMMAND,
    SKIP_EXPIRED,
    SKIP_HASH_MISMATCH,
    SKIP_INSTALL_FAILED,
    SKIP_MISSING_FILE,
    SKIP_MISSING_PROJECT,
)
from wheelgate.bisect.runner import run_bisect
from wheelgate.bisect.search import Bisection, Conclusion, Verdict
from wheelgate.bisect.session import InstallerArgs, Session, SessionArgs, SessionStore, Step
from wheelgate.history.model import HistoryRun


def shell(venv: Path) -> CommandResult:
    return run_command(SHELL_COMMAND, venv)


def session_of(runs: list[HistoryRun]) -> Session:
    args = SessionArgs(
        index=runs[0].index,
        good="1000",
        bad="latest",
        command=SHELL_COMMAND,
        install=InstallerArgs(python="python3", cache_dir="/unused", staging_url="http://s/"),
    )
    return Session(
        schema="wheelgate/bisect-session/v1",
        args=args,
        order=Order.COMMIT_TIME,
        candidates=tuple(runs),
    )


def bad_from(runs: list[HistoryRun], first: int) -> set[str]:
    return {r.run_id for r in runs[first:]}


def test_the_planted_culprit_is_found_and_every_kind_of_trouble_is_skipped(tmp_path: Path) -> None:
    # Given 12 runs, the 9th bad onward, and the runs the search probes first in trouble
    runs = linear_history(12)
    planted = {
        "1005": SKIP_MISSING_PROJECT,
        "1004": SKIP_EXPIRED,
        "1006": SKIP_MISSING_FILE,
        "1003": SKIP_HASH_MISMATCH,
        "1007": SKIP_INSTALL_FAILED,
    }
    installer = FakeInstaller(skips=planted, bad=bad_from(runs, 9))
    # When the bisect runs a real command in each run's venv
    session, outcome = run_bisect(session_of(runs), SessionStore(tmp_path), installer, shell)
    # Then run 1009 is the first bad, 1008 the last good, and each trouble a skip with its reason
    assert (outcome.conclusion, outcome.first_bad, outcome.last_good) == (Conclusion.FOUND, 9, 8)
    skipped = {s.run_id: s.reason for s in session.steps if s.verdict is Verdict.SKIP}
    assert skipped == planted
    assert all(s.verdict is not Verdict.BAD for s in session.steps if s.run_id in planted)


def test_skips_that_hide_the_first_bad_list_every_run_it_could_be(tmp_path: Path) -> None:
    runs = linear_history(8)
    installer = FakeInstaller(
        skips={"1003": SKIP_EXPIRED, "1004": SKIP_MISSING_FILE}, bad=bad_from(runs, 5)
    )
    _, outcome = run_bisect(session_of(runs), SessionStore(tmp_path), installer, shell)
    assert outcome.conclusion is Conclusion.INCONCLUSIVE
    assert [runs[i].run_id for i in outcome.could_be] == ["1003", "1004", "1005"]


def test_a_command_that_exits_125_skips_the_run_saying_so(tmp_path: Path) -> None:
    runs = linear_history(6)
    installer = FakeInstaller(exits={"1002": 125}, bad=bad_from(runs, 3))
    session, outcome = run_bisect(session_of(runs), SessionStore(tmp_path), installer, shell)
    [step] = [s for s in session.steps if s.run_id == "1002"]
    assert (step.verdict, step.reason, step.exit_code) == (Verdict.SKIP, SKIP_BY_COMMAND, 125)
    assert outcome.conclusion is Conclusion.INCONCLUSIVE


def test_a_command_killed_by_a_signal_aborts_keeping_the_steps_before(tmp_path: Path) -> None:
    runs = linear_history(6)
    store = SessionStore(tmp_path)
    installer = FakeInstaller(exits={"1002": -9}, bad=bad_from(runs, 4))

    def command(venv: Path) -> CommandResult:
        if (venv / "exit-code").read_text() == "-9":
            return run_command(["sh", "-c", "kill -9 $$"], venv)
        return shell(venv)

    with pytest.raises(CommandAborted, match="signal 9"):
        run_bisect(session_of(runs), store, installer, command)
    assert [s.run_id for s in store.load().steps] == ["1000", "1005"]


def test_killed_after_a_step_and_resumed_no_step_is_retested_nor_downloaded_twice(
    tmp_path: Path,
) -> None:
    # Given a bisect killed right after its third step was saved
    runs = linear_history(40)
    store = SessionStore(tmp_path)
    installer = FakeInstaller(bad=bad_from(runs, 23), skips={"1019": SKIP_EXPIRED})

    def killed_after_third(step: Step) -> None:
        if step.number == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_bisect(session_of(runs), store, installer, shell, on_step=killed_after_third)
    done = [s.run_id for s in store.load().steps]
    assert len(done) == 3
    # When it is resumed from what was saved
    session, outcome = run_bisect(store.load(), store, installer, shell)
    # Then no run was installed twice, no file downloaded twice, the culprit found
    assert max(installer.installs.values()) == 1
    assert max(installer.downloads.values()) == 1
    assert [s.run_id for s in session.steps][:3] == done
    assert [s.number for s in session.steps] == list(range(1, len(session.steps) + 1))
    assert runs[outcome.first_bad or 0].run_id == "1023"


def test_while_the_command_runs_the_next_two_candidates_are_fetched_and_no_other(
    tmp_path: Path,
) -> None:
    runs = linear_history(10)
    installer = FakeInstaller(bad=bad_from(runs, 6))
    session, _ = run_bisect(session_of(runs), SessionStore(tmp_path), installer, shell)
    tested = {s.run_id for s in session.steps}
    # Every probe after the first found its file cached: fetched while the one before ran
    assert [s.downloaded for s in session.steps][1:] == [0] * (len(session.steps) - 1)
    # And a run fetched but never tested was a possible next probe of a step
    possible, bisection = set(), Bisection(len(runs))
    for step in session.steps:
        possible |= {runs[i].run_id for i in next_possible(bisection, step.candidate)}
        assert len(next_possible(bisection, step.candidate)) <= 2
        bisection = bisection.with_verdict(step.candidate, step.verdict)
    assert set(installer.downloads) - tested
    assert set(installer.downloads) - tested <= possible
    assert max(installer.downloads.values()) == 1


def test_the_session_survives_a_reload_unchanged(tmp_path: Path) -> None:
    runs = linear_history(5)
    store = SessionStore(tmp_path)
    session, _ = run_bisect(session_of(runs), store, FakeInstaller(bad=bad_from(runs, 2)), shell)
    assert store.load() == session
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".session-")] == []
