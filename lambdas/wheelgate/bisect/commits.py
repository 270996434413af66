"""One run per commit: which of a commit's runs stands for it in a bisect. Pure.

A commit can have several runs (a re-run, a second attempt, a rebuild): the search tests one.
The promoted run is the one users installed; else the newest attempt the reporter or the
promoter looked at (a decision or a report), since a run never reported may be half-staged;
else the newest run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from wheelgate.history.model import HistoryRun, RunState


def short(commit: str) -> str:
    """A commit as people read it: its first 7 hex digits."""
    return commit[:7]


def newest(runs: Iterable[HistoryRun]) -> HistoryRun:
    """The newest of ``runs`` by when it was staged, then its attempt, then its run id."""
    return max(runs, key=lambda r: (r.staged_at, r.attempt, r.run_id))


def representative(runs: Sequence[HistoryRun]) -> HistoryRun:
    """The run that stands for a commit among its ``runs`` (not empty): the newest promoted
    one, else the newest with a decision or a report, else the newest."""
    promoted = [r for r in runs if r.state is RunState.PROMOTED]
    if promoted:
        return newest(promoted)
    looked_at = [r for r in runs if r.decided_at is not None or r.reported_at is not None]
    return newest(looked_at or runs)


def by_commit(runs: Iterable[HistoryRun]) -> dict[str, list[HistoryRun]]:
    """``runs`` grouped by commit, in the order each commit first appears."""
    grouped: dict[str, list[HistoryRun]] = {}
    for run in runs:
        grouped.setdefault(run.commit, []).append(run)
    return grouped


def state_text(run: HistoryRun) -> str:
    """A run's state with its reasons: ``rejected(tests-failed)``, ``promoted``."""
    return f"{run.state.value}({','.join(run.reasons)})" if run.reasons else run.state.value


def label(run: HistoryRun) -> str:
    """A run as one line names it: ``run 1234 · 515115e · 2026-03-02 · promoted`` (with its
    attempt when it is not the first)."""
    attempt = f" attempt {run.attempt}" if run.attempt > 1 else ""
    return (
        f"run {run.run_id}{attempt} · {short(run.commit)} · {run.staged_at[:10]} · "
        f"{state_text(run)}"
    )
