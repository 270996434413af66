"""The runs a bisect searches, in commit order. Pure.

Between the good and the bad run, one run per commit (:func:`~wheelgate.bisect.commits.
representative`), ordered by git's first-parent history when it is given, else by commit time
when both ends have one, else by when the runs were staged. Never by version: builds of one
version differ only by a local label holding a hash, which sorts by nothing meaningful.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from wheelgate.bisect.commits import by_commit, label, representative, short
from wheelgate.history.model import HistoryRun


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
    elif good.commit_time is not None and bad.commit_time is not None:
        order, key, inside, notes = _commit_time(others, good, bad)
    else:
        order, key, inside, notes = _staged(others, good, bad)
    middle = sorted(
        (representative(group) for group in by_commit(inside).values()),
        key=key,
    )
    chosen = (good, *middle, bad)
    notes += _several_runs(inside)
    if order is not Order.STAGED:
        notes += _disagreement(chosen)
    return Candidates(runs=chosen, order=order, notes=tuple(notes))


#: The order, its sort key, the runs inside the range, and notes.
_Split = tuple[Order, Callable[[HistoryRun], Any], list[HistoryRun], list[str]]


def _between_staging(runs: Sequence[HistoryRun], good: HistoryRun, bad: HistoryRun) -> list[str]:
    low, high = sorted((good.staged_at, bad.staged_at))
    return [r.run_id for r in runs if low <= r.staged_at <= high]


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
    def key(run: HistoryRun) -> tuple[str, str]:
        return (run.commit_time or "", run.staged_at)

    if key(good) >= key(bad):
        raise OrderError(
            f"the bad run's commit {short(bad.commit)} ({bad.commit_time}) is not younger "
            f"than the good run's {short(good.commit)} ({good.commit_time})"
        )
    timed = [r for r in runs if r.commit_time is not None]
    inside = [r for r in timed if key(good) < key(r) < key(bad)]
    untimed = _between_staging([r for r in runs if r.commit_time is None], good, bad)
    notes = (
        [
            f"{len(untimed)} run(s) staged between the ends have no commit time, dropped: "
            f"{', '.join(untimed)} (give --repo to order them by git)"
        ]
        if untimed
        else []
    )
    return Order.COMMIT_TIME, key, inside, notes


def _staged(runs: Sequence[HistoryRun], good: HistoryRun, bad: HistoryRun) -> _Split:
    if good.staged_at >= bad.staged_at:
        raise OrderError(
            f"the bad run {bad.run_id} was not staged after the good run {good.run_id}, and "
            "without commit times or --repo that is the only order known"
        )
    inside = [r for r in runs if good.staged_at < r.staged_at < bad.staged_at]
    return Order.STAGED, lambda r: r.staged_at, inside, []


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
