"""The runs a bisect searches, in commit order. Pure.

Between the good and the bad run, one run per commit (:func:`~wheelgate.bisect.commits.
representative`), ordered by what no build job writes alone: git's first-parent history when
it is given, else the commit time the reporter's manifest stated when both ends have one, else
when the promoter saw the runs staged. A commit time only a build job's stage entry stated is
shown, never used to order: such a run counts as one without a commit time. Never by version:
builds of one version differ only by a local label holding a hash, which sorts by nothing
meaningful.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from wheelgate.bisect.commits import by_commit, label, representative, short
from wheelgate.history.model import CommitTimeBy, HistoryRun, staging_order


class Order(StrEnum):
    """What put the candidates in order."""

    FIRST_PARENT = "first-parent"
    COMMIT_TIME = "commit-time"
    STAGED = "staged"


class OrderError(ValueError):
    """Ends that do not bound a range: the bad run's commit does not come after the good's."""


@dataclass(frozen=True)
class Candidates:
    """The runs to search, oldest commit first: the good end first, the bad end last; the
    order used, and notes on what was dropped or disagrees."""

    runs: tuple[HistoryRun, ...]
    order: Order
    notes: tuple[str, ...] = ()


def candidates(
    runs: Sequence[HistoryRun],
    good: HistoryRun,
    bad: HistoryRun,
    *,
    first_parent: Sequence[str] | None = None,
) -> Candidates:
    """The candidates between ``good`` and ``bad`` among ``runs`` (a history).

    ``first_parent``: the commits of ``git rev-list --first-parent GOOD..BAD`` as git prints
    them (newest first); runs of other commits are dropped with a note. Raises
    :class:`OrderError` when ``bad`` does not come after ``good`` in the order used.
    """
    if good.commit == bad.commit:
        raise OrderError(f"the good and the bad run are of one commit ({short(good.commit)})")
    ends = {good.commit, bad.commit}
    others = [r for r in runs if r.commit not in ends]
    if first_parent is not None:
        order, key, inside, notes = _first_parent(others, good, bad, first_parent)
    elif stated_commit_time(good) is not None and stated_commit_time(bad) is not None:
        order, key, inside, notes = _commit_time(others, good, bad)
    else:
        order, key, inside, notes = _staged(others, good, bad)
        notes += _build_times_unused(good, bad)
    middle = sorted(
        (representative(group) for group in by_commit(inside).values()),
        key=key,
    )
    chosen = (good, *middle, bad)
    notes += _several_runs(inside)
    if order is not Order.STAGED:
        notes += _disagreement(chosen)
    return Candidates(runs=chosen, order=order, notes=tuple(notes))


def stated_commit_time(run: HistoryRun) -> str | None:
    """``run``'s commit time where the reporter stated it; ``None`` otherwise (a time only a
    build job stated is any build job's to write, so it orders nothing)."""
    return run.commit_time if run.commit_time_by is CommitTimeBy.REPORTER else None


#: The order, its sort key, the runs inside the range, and notes.
_Split = tuple[Order, Callable[[HistoryRun], Any], list[HistoryRun], list[str]]


def _between_staging(runs: Sequence[HistoryRun], good: HistoryRun, bad: HistoryRun) -> list[str]:
    low, high = sorted((staging_order(good), staging_order(bad)))
    return [r.run_id for r in runs if low <= staging_order(r) <= high]


def _first_parent(
    runs: Sequence[HistoryRun], good: HistoryRun, bad: HistoryRun, listed: Sequence[str]
) -> _Split:
    position = {commit: i for i, commit in enumerate(reversed(listed), start=1)}
    if position.get(bad.commit) != len(listed):
        raise OrderError(
            f"the bad run's commit {short(bad.commit)} is not a first-parent descendant of the "
            f"good run's {short(good.commit)}"
        )
    inside = [r for r in runs if r.commit in position]
    dropped = _between_staging([r for r in runs if r.commit not in position], good, bad)
    notes = (
        [
            f"{len(dropped)} run(s) staged between the ends are of commits off the first-parent "
            f"line {short(good.commit)}..{short(bad.commit)}, dropped: {', '.join(dropped)}"
        ]
        if dropped
        else []
    )
    return Order.FIRST_PARENT, lambda r: position[r.commit], inside, notes


def _commit_time(runs: Sequence[HistoryRun], good: HistoryRun, bad: HistoryRun) -> _Split:
    """The reporter-timed runs between the ends by commit time; each run without a time the
    reporter stated (never reported, or timed by a build job alone) after the last timed run
    staged before it, by the promoter's staging time; those staged outside the ends dropped."""

    def timed_key(run: HistoryRun) -> tuple[str, tuple[str, str]]:
        return (stated_commit_time(run) or "", staging_order(run))

    if timed_key(good) >= timed_key(bad):
        raise OrderError(
            f"the bad run's commit {short(bad.commit)} ({bad.commit_time}) is not younger "
            f"than the good run's {short(good.commit)} ({good.commit_time})"
        )
    timed = sorted(
        (
            r
            for r in runs
            if stated_commit_time(r) is not None and timed_key(good) < timed_key(r) < timed_key(bad)
        ),
        key=timed_key,
    )
    line = [good, *timed]
    untimed = [r for r in runs if stated_commit_time(r) is None]
    placed = [r for r in untimed if staging_order(good) < staging_order(r) < staging_order(bad)]
    position: dict[str, tuple[int, int, tuple[str, str]]] = {
        r.run_id: (i, 0, ("", "")) for i, r in enumerate(line)
    }
    for run in placed:
        after = max(i for i, r in enumerate(line) if staging_order(r) <= staging_order(run))
        position[run.run_id] = (after, 1, staging_order(run))
    notes = []
    if placed:
        notes.append(
            f"{len(placed)} run(s) have no commit time their reporter stated, placed by when "
            f"they were staged: {', '.join(r.run_id for r in placed)} (give --repo to order "
            "them by git)"
        )
    placed_ids = {r.run_id for r in placed}
    dropped = _between_staging([r for r in untimed if r.run_id not in placed_ids], good, bad)
    if dropped:
        notes.append(
            f"{len(dropped)} run(s) have no commit time their reporter stated and were staged "
            f"outside the ends, dropped: {', '.join(dropped)} (give --repo to order them by git)"
        )
    return Order.COMMIT_TIME, lambda r: position[r.run_id], [*timed, *placed], notes


def _build_times_unused(good: HistoryRun, bad: HistoryRun) -> list[str]:
    """A note when an end's commit time is a build job's word alone, so it did not order."""
    told = [r.run_id for r in (good, bad) if r.commit_time and stated_commit_time(r) is None]
    if not told:
        return []
    return [
        f"the commit time of run(s) {', '.join(told)} was stated by a build job alone, not by "
        "the reporter: ordered by when the runs were staged (give --repo to order them by git)"
    ]


def _staged(runs: Sequence[HistoryRun], good: HistoryRun, bad: HistoryRun) -> _Split:
    if staging_order(good) >= staging_order(bad):
        raise OrderError(
            f"the bad run {bad.run_id} was not staged after the good run {good.run_id}, and "
            "without commit times the reporter stated, or --repo, that is the only order known"
        )
    inside = [r for r in runs if staging_order(good) < staging_order(r) < staging_order(bad)]
    return Order.STAGED, staging_order, inside, []


def _several_runs(runs: Sequence[HistoryRun]) -> list[str]:
    shared = [group for group in by_commit(runs).values() if len(group) > 1]
    return [
        f"commit {short(group[0].commit)} has {len(group)} runs: testing "
        f"{label(representative(group))}"
        for group in shared
    ]


def _disagreement(chosen: Sequence[HistoryRun]) -> list[str]:
    """A warning when the commit order is not the order the runs were staged in."""
    inverted = [
        (earlier, later)
        for earlier, later in itertools.pairwise(chosen)
        if earlier.staged_at > later.staged_at
    ]
    if not inverted:
        return []
    earlier, later = inverted[0]
    return [
        f"warning: commit order and staging order disagree at {len(inverted)} place(s), e.g. "
        f"run {earlier.run_id} ({short(earlier.commit)}) comes first by commit but was staged "
        f"after run {later.run_id} ({short(later.commit)})"
    ]
