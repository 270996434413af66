"""Naming runs: every REF form resolves to one run, or lists the runs it could mean."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from tests.unit.bisect_world import START, commit_of, history_run, newest_first
from wheelgate.bisect.commits import label
from wheelgate.bisect.refs import RefError, resolve, resolve_ref
from wheelgate.core.timestamps import upload_time
from wheelgate.history.model import CommitTimeBy, HistoryRun, RunState

SHARED = "abcd" + "1" * 36
TWIN = "abcd" + "2" * 36


@pytest.fixture
def history() -> list[HistoryRun]:
    """Five commits; commit 2 built twice (a rejected first attempt, a promoted retry); two
    runs on March 3rd; the newest run never decided; two commits sharing the prefix abcd."""
    return newest_first(
        [
            history_run(0, commit=SHARED),
            history_run(1, commit=TWIN, state=RunState.REJECTED, reasons=("tests-failed",)),
            history_run(2, state=RunState.REJECTED, reasons=("tests-failed",)),
            history_run(3, run_id="1002", commit=commit_of(2), attempt=2),
            history_run(4, staged=START + timedelta(days=2, hours=1)),
            history_run(5, staged=START + timedelta(days=2, hours=9)),
            history_run(6, state=RunState.STAGED, staged=START + timedelta(days=4)),
        ]
    )


def test_latest_is_the_newest_run_and_promoted_the_newest_promoted_one(
    history: list[HistoryRun],
) -> None:
    assert resolve_ref("latest", history).run_id == "1006"
    assert resolve_ref("promoted", history).run_id == "1005"


def test_a_run_id_names_its_promoted_attempt(history: list[HistoryRun]) -> None:
    found = resolve_ref("1002", history)
    assert (found.run_id, found.attempt, found.state) == ("1002", 2, RunState.PROMOTED)


def test_a_commit_prefix_of_any_case_names_the_commits_promoted_run(
    history: list[HistoryRun],
) -> None:
    prefix = commit_of(2)[:6].upper()
    assert resolve_ref(prefix, history).attempt == 2


def test_a_prefix_of_two_commits_lists_both(history: list[HistoryRun]) -> None:
    with pytest.raises(RefError) as raised:
        resolve_ref("abcd", history)
    assert {r.commit for r in raised.value.candidates} == {SHARED, TWIN}
    assert "names 2 runs" in str(raised.value)
    assert "run 1001" in str(raised.value)


def test_a_longer_prefix_or_the_commit_form_settles_it(history: list[HistoryRun]) -> None:
    assert resolve_ref("abcd1", history).commit == SHARED
    assert resolve_ref("commit:abcd2", history).commit == TWIN


def test_a_run_id_that_is_also_a_commit_prefix_lists_both_and_run_form_settles_it() -> None:
    runs = newest_first([history_run(0, run_id="1234"), history_run(1, commit="1234" + "f" * 36)])
    with pytest.raises(RefError) as raised:
        resolve_ref("1234", runs)
    assert len(raised.value.candidates) == 2
    assert resolve_ref("run:1234", runs).commit == commit_of(0)


def test_a_date_names_the_last_run_staged_by_the_end_of_that_day(history: list[HistoryRun]) -> None:
    # Two runs on March 3rd (03:00 and 11:00 UTC): the later one.
    assert resolve_ref("2026-03-03", history).run_id == "1005"


def test_a_date_time_names_the_last_run_committed_at_or_before_it(
    history: list[HistoryRun],
) -> None:
    # Each run's reporter stated a commit time half an hour before it was staged
    assert resolve_ref("2026-03-03T05:00:00Z", history).run_id == "1004"
    assert resolve_ref("2026-03-03T02:30", history).run_id == "1004"
    assert resolve_ref("2026-03-03T02:29:59+00:00", history).run_id == "1002"


@pytest.mark.parametrize(
    ("ref", "said"),
    [
        ("2026-02-01", "no run was committed or staged"),
        ("2026-13-45", "not an ISO 8601 date"),
        ("zzzz", "neither a run id nor a commit prefix"),
        ("abc", "a commit prefix needs at least 4 hex digits"),
        ("commit:ab", "a commit prefix needs at least 4 hex digits"),
        ("run:999", "not a run id"),
    ],
)
def test_an_unknown_ref_says_what_is_wrong(history: list[HistoryRun], ref: str, said: str) -> None:
    with pytest.raises(RefError, match=said):
        resolve_ref(ref, history)


def test_an_empty_history_names_no_run() -> None:
    with pytest.raises(RefError, match="holds no run"):
        resolve_ref("latest", [])


def test_latest_passes_over_runs_that_cannot_be_installed_naming_each_and_why(
    history: list[HistoryRun],
) -> None:
    # Given the newest run cannot be installed (never reported, its offer unchecked)
    def why_not(run: HistoryRun) -> str | None:
        return "no-offer: its offer cannot be checked" if run.run_id == "1006" else None

    # When latest is resolved
    resolved = resolve("latest", history, why_not=why_not)
    # Then it is the newest run that installs, and the note names the one passed over
    assert resolved.run.run_id == "1005"
    assert resolved.notes == (
        f"latest: passed over {label(history[0])}: no-offer: its offer cannot be checked",
    )


def test_latest_with_no_installable_run_lists_every_run_and_why(history: list[HistoryRun]) -> None:
    with pytest.raises(RefError, match="no run of this index directory can be installed"):
        resolve("latest", history, why_not=lambda run: "expired")


def reporter_dated(run: HistoryRun, committed: datetime, by: CommitTimeBy) -> HistoryRun:
    return run.model_copy(update={"commit_time": upload_time(committed), "commit_time_by": by})


def test_a_date_finds_a_run_staged_days_later_by_the_commit_time_the_reporter_stated() -> None:
    # Given a commit of March 1st staged (and reported) on March 5th, after a run of March 2nd
    late = reporter_dated(
        history_run(0, staged=START + timedelta(days=4)), START, CommitTimeBy.REPORTER
    )
    runs = newest_first([late, history_run(1, staged=START + timedelta(days=1))])
    assert late.staged_at.startswith("2026-03-05")
    # When the REF is March 1st: it names that commit's run, saying it used the commit time
    resolved = resolve("2026-03-01", runs)
    assert resolved.run.run_id == "1000"
    assert "by its commit time" in resolved.notes[0]
    assert "as the reporter stated it" in resolved.notes[0]


def test_a_commit_time_only_a_build_job_stated_is_never_used() -> None:
    # Given a run whose build job claims a commit time of March 1st, staged March 5th
    claimed = reporter_dated(
        history_run(0, staged=START + timedelta(days=4)), START, CommitTimeBy.BUILD
    )
    untimed = history_run(1, staged=START + timedelta(days=1)).model_copy(
        update={"commit_time": None, "commit_time_by": None}
    )
    runs = newest_first([claimed, untimed])
    assert claimed.commit_time is not None
    assert claimed.commit_time.startswith("2026-03-01")
    # When the REF is March 2nd: it goes by staging time, so the claim moves nothing
    resolved = resolve("2026-03-02", runs)
    assert resolved.run.run_id == "1001"
    assert "by its staging time" in resolved.notes[0]
    with pytest.raises(RefError):
        resolve("2026-03-01", runs)


def test_a_date_time_without_a_zone_is_utc_and_never_crashes(history: list[HistoryRun]) -> None:
    assert resolve("2026-03-03 03:00:00", history).run.run_id == "1004"
