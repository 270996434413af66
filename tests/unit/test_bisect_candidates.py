"""Candidates in commit order: git first-parent, else the commit time the reporter stated, else
per commit; never version order."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.unit.bisect_world import START, commit_of, history_run, linear_history, newest_first
from wheelgate.bisect.candidates import Order, OrderError, candidates
from wheelgate.core.timestamps import upload_time
from wheelgate.history import model
from wheelgate.history.model import CommitTimeBy, HistoryRun, RunState


def ids(runs: tuple[HistoryRun, ...]) -> list[str]:
    return [r.run_id for r in runs]


def test_candidates_follow_commit_time_not_version_order() -> None:
    # Given local labels holding hashes, whose version order is not the commits' order
    runs = linear_history(6)
    assert [r.files[0].version for r in runs] != sorted(r.files[0].version for r in runs)
    # When the candidates are chosen between the first and the last
    found = candidates(newest_first(runs), runs[0], runs[-1])
    # Then they are in commit order
    assert (found.order, ids(found.runs)) == (Order.COMMIT_TIME, [r.run_id for r in runs])


def test_one_candidate_per_commit_the_promoted_attempt_first() -> None:
    runs = linear_history(4)
    retry = history_run(
        9, run_id="1002", attempt=2, commit=commit_of(2), commit_time=START + timedelta(hours=2)
    )
    rejected = runs[2].model_copy(update={"state": RunState.REJECTED})
    history = newest_first([runs[0], runs[1], rejected, retry, runs[3]])
    found = candidates(history, runs[0], runs[3])
    assert [(r.run_id, r.attempt) for r in found.runs] == [
        ("1000", 1),
        ("1001", 1),
        ("1002", 2),
        ("1003", 1),
    ]
    assert any("has 2 runs" in note for note in found.notes)


def test_without_a_decision_the_newest_reported_attempt_stands_for_the_commit() -> None:
    runs = linear_history(3)
    first = runs[1].model_copy(update={"state": RunState.REJECTED})
    never_reported = history_run(
        5, run_id="2001", commit=commit_of(1), state=RunState.STAGED, commit_time=START
    ).model_copy(update={"reported_at": None})
    found = candidates(newest_first([runs[0], first, never_reported, runs[2]]), runs[0], runs[2])
    assert ids(found.runs) == ["1000", "1001", "1002"]


def test_git_first_parent_order_wins_and_drops_other_commits_with_a_note() -> None:
    runs = linear_history(5)
    # git's order: 3 before 1 (a late merge), and commit 2 is on a side branch
    listed = [commit_of(4), commit_of(1), commit_of(3)]
    found = candidates(newest_first(runs), runs[0], runs[4], first_parent=listed)
    assert (found.order, ids(found.runs)) == (Order.FIRST_PARENT, ["1000", "1003", "1001", "1004"])
    assert any("off the first-parent line" in n and "1002" in n for n in found.notes)
    assert any(
        n.startswith("warning: commit order and staging order disagree") for n in found.notes
    )


def test_the_bad_end_off_the_first_parent_line_is_refused() -> None:
    runs = linear_history(3)
    with pytest.raises(OrderError, match="not a first-parent descendant"):
        candidates(runs, runs[0], runs[2], first_parent=[commit_of(1)])


def test_commit_time_and_staging_order_disagreeing_is_warned() -> None:
    runs = linear_history(4)
    # Given commit 1 staged after commit 2 (its build was retried late)
    late = runs[1].model_copy(update={"staged_at": upload_time(START + timedelta(hours=4.5))})
    found = candidates(newest_first([runs[0], late, runs[2], runs[3]]), runs[0], runs[3])
    assert ids(found.runs) == ["1000", "1001", "1002", "1003"]
    assert any("disagree" in n for n in found.notes)


def test_without_commit_times_staging_order_is_used() -> None:
    runs = [r.model_copy(update={"commit_time": None}) for r in linear_history(4)]
    found = candidates(newest_first(runs), runs[0], runs[3])
    assert (found.order, ids(found.runs)) == (Order.STAGED, ["1000", "1001", "1002", "1003"])
    assert found.notes == ()


def test_a_run_without_commit_time_between_timed_ends_is_placed_by_its_staging_with_a_note() -> (
    None
):
    # Given a run never reported (no commit time), staged after run 1001 and before 1003
    runs = linear_history(4)
    untimed = runs[2].model_copy(update={"commit_time": None, "commit_time_by": None})
    # When the candidates are chosen by commit time, Then it is placed by its staging time
    found = candidates(newest_first([runs[0], runs[1], untimed, runs[3]]), runs[0], runs[3])
    assert (found.order, ids(found.runs)) == (Order.COMMIT_TIME, ["1000", "1001", "1002", "1003"])
    assert any("placed by when they were staged" in n and "1002" in n for n in found.notes)


def test_an_untimed_run_staged_where_the_ends_staging_disagrees_is_dropped_with_a_note() -> None:
    # Given a good end staged after the bad end (a late retry), and an untimed run between
    runs = linear_history(4)
    good = runs[0].model_copy(update={"staged_at": upload_time(START + timedelta(hours=5))})
    untimed = runs[2].model_copy(
        update={
            "commit_time": None,
            "commit_time_by": None,
            "staged_at": upload_time(START + timedelta(hours=4)),
        }
    )
    found = candidates(newest_first([good, runs[1], untimed, runs[3]]), good, runs[3])
    assert ids(found.runs) == ["1000", "1001", "1003"]
    assert any("staged outside the ends, dropped: 1002" in n for n in found.notes)


@pytest.mark.parametrize("swap", [True, False])
def test_ends_in_the_wrong_order_or_of_one_commit_are_refused(swap: bool) -> None:
    runs = linear_history(3)
    good, bad = (runs[2], runs[0]) if swap else (runs[1], runs[1])
    with pytest.raises(OrderError):
        candidates(runs, good, bad)


def test_two_runs_of_one_day_are_two_candidates() -> None:
    runs = [history_run(n, staged=START + timedelta(minutes=10 * n)) for n in range(3)]
    assert len(candidates(newest_first(runs), runs[0], runs[2]).runs) == 3


def build_stated(run: HistoryRun, hours: float) -> HistoryRun:
    """``run`` with a commit time a build job alone stated, ``hours`` after :data:`START`."""
    return run.model_copy(
        update={
            "commit_time": upload_time(START + timedelta(hours=hours)),
            "commit_time_by": CommitTimeBy.BUILD,
        }
    )


def test_a_commit_time_only_a_build_job_stated_never_orders_the_ends() -> None:
    # Given ends whose commit times a build job alone stated, the bad end's before the good's
    runs = linear_history(3)
    good, bad = build_stated(runs[0], 5), build_stated(runs[2], -5)
    # When the candidates are chosen, Then the promoter's staging order is used, and said
    found = candidates(newest_first([good, runs[1], bad]), good, bad)
    assert (found.order, ids(found.runs)) == (Order.STAGED, ["1000", "1001", "1002"])
    assert any("stated by a build job alone" in n and "1000, 1002" in n for n in found.notes)


def test_a_run_whose_commit_time_only_a_build_job_stated_counts_as_untimed() -> None:
    # Given reporter-timed ends and a run between them whose build job dated it before both
    runs = linear_history(4)
    forged = build_stated(runs[1], -100)
    # When the candidates are chosen, Then it is placed by when it was staged, not its claim
    found = candidates(newest_first([runs[0], forged, runs[2], runs[3]]), runs[0], runs[3])
    assert (found.order, ids(found.runs)) == (Order.COMMIT_TIME, ["1000", "1001", "1002", "1003"])
    assert any("no commit time their reporter stated" in n and "1001" in n for n in found.notes)


@pytest.mark.parametrize("timed_good", [True, False], ids=["reporter-timed-good", "untimed"])
def test_runs_staged_in_the_same_second_as_the_bad_end_stay_candidates(timed_good: bool) -> None:
    # Given S3's LastModified, which keeps whole seconds: a never-reported run and the newest,
    # never-reported bad end staged in one second, after the good end
    runs = linear_history(2)
    second = START + timedelta(hours=5)
    middle, bad = (
        history_run(n, run_id=run_id, staged=second, state=RunState.STAGED).model_copy(
            update={"commit_time": None, "commit_time_by": None}
        )
        for n, run_id in ((2, "1002"), (3, "1003"))
    )
    good = runs[1] if timed_good else runs[1].model_copy(update={"commit_time_by": None})
    # When the candidates are chosen between the good end and the newest run
    history = model.newest_first([runs[0], good, middle, bad])
    assert history[0] is bad
    found = candidates(history, good, bad)
    # Then the run staged in the bad end's second is between them, as the history orders it
    assert ids(found.runs) == ["1001", "1002", "1003"]
