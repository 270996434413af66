"""Naming a run of an index directory's history (``--good REF``, ``--bad REF``). Pure.

A REF is one of: ``latest`` (the newest run that can be installed: the caller says which runs
cannot, and why); ``promoted`` (the newest promoted run); a run id (``run:ID`` says so when
the id could also be read as a commit prefix); a commit prefix of at least 4 hex digits, any
case (``commit:PREFIX`` says so); a date or date-time in ISO 8601, the last run at or before
it (a date alone is the end of that day, a time without a zone is UTC). A run's moment is its
commit time when the reporter stated it, else when it was staged: a build job's commit time is
its own claim. Versions are never compared: builds of one version differ only by a local
label.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from wheelgate.bisect.commits import by_commit, label, representative
from wheelgate.core.timestamps import parse_upload_time
from wheelgate.history.model import CommitTimeBy, HistoryRun, RunState

#: The shortest commit prefix a REF may be (git's own minimum abbreviation).
MIN_PREFIX = 4
_HEX = re.compile(rf"^[0-9a-fA-F]{{{MIN_PREFIX},40}}$")
_SHORT_HEX = re.compile(rf"^[0-9a-fA-F]{{1,{MIN_PREFIX - 1}}}$")
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_DATE_TIME = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}")

#: Why a run cannot be installed (``None``: it can); :func:`resolve` asks it for ``latest``.
WhyNot = Callable[[HistoryRun], str | None]


class RefError(ValueError):
    """A REF that names no run, or several (``candidates``, newest first)."""

    def __init__(self, ref: str, message: str, candidates: Sequence[HistoryRun] = ()) -> None:
        listed = "".join(f"\n  {label(run)}" for run in candidates)
        super().__init__(f"{ref!r}: {message}{listed}")
        self.ref = ref
        self.candidates = tuple(candidates)


@dataclass(frozen=True)
class Resolved:
    """The run a REF names, and what people should know of how: the runs ``latest`` passed
    over and why, the time a date REF was compared with."""

    run: HistoryRun
    notes: tuple[str, ...] = ()


def resolve_ref(ref: str, runs: Sequence[HistoryRun]) -> HistoryRun:
    """The run ``ref`` names among ``runs`` (a history, newest first); :func:`resolve` with
    every run installable."""
    return resolve(ref, runs).run


def resolve(ref: str, runs: Sequence[HistoryRun], *, why_not: WhyNot | None = None) -> Resolved:
    """The run ``ref`` names among ``runs`` (a history, newest first), with notes.
    ``why_not`` says why a run cannot be installed: ``latest`` passes over such runs.

    Raises :class:`RefError` for a REF that names no run, or that names several (a commit
    prefix of two commits, a run id that is also a commit prefix): the error lists them.
    """
    text = ref.strip()
    if not runs:
        raise RefError(ref, "the history of this index directory holds no run")
    if text == "latest":
        return _latest(ref, runs, why_not)
    if text == "promoted":
        promoted = [r for r in runs if r.state is RunState.PROMOTED]
        if not promoted:
            raise RefError(ref, "no run of this index directory was promoted")
        return Resolved(promoted[0])
    kind, _, rest = text.partition(":")
    if rest and kind == "run":
        return Resolved(_only(ref, _by_run_id(rest, runs), "is not a run id of this history"))
    if rest and kind == "commit":
        _check_prefix(ref, rest)
        return Resolved(_only(ref, _by_commit(rest, runs), "is not a commit of this history"))
    if _DATE.match(text) or _DATE_TIME.match(text):
        return _by_moment(ref, text, runs)
    found = _by_run_id(text, runs) + _by_commit(text, runs)
    if not found:
        _check_prefix(ref, text)
    return Resolved(_only(ref, found, "is neither a run id nor a commit prefix of this history"))


def _latest(ref: str, runs: Sequence[HistoryRun], why_not: WhyNot | None) -> Resolved:
    passed: list[tuple[HistoryRun, str]] = []
    for run in runs:
        reason = None if why_not is None else why_not(run)
        if reason is None:
            notes = tuple(f"latest: passed over {label(r)}: {why}" for r, why in passed)
            return Resolved(run, notes)
        passed.append((run, reason))
    listed = "".join(f"\n  {label(r)}: {why}" for r, why in passed)
    raise RefError(ref, f"no run of this index directory can be installed:{listed}")


def _check_prefix(ref: str, text: str) -> None:
    if _SHORT_HEX.match(text):
        raise RefError(
            ref,
            f"a commit prefix needs at least {MIN_PREFIX} hex digits ({text!r} has {len(text)})",
        )


def _only(ref: str, found: list[HistoryRun], unknown: str) -> HistoryRun:
    distinct = list({(r.run_id, r.attempt): r for r in found}.values())
    if not distinct:
        raise RefError(ref, unknown)
    if len(distinct) > 1:
        raise RefError(ref, f"names {len(distinct)} runs, say which:", distinct)
    return distinct[0]


def _by_run_id(text: str, runs: Sequence[HistoryRun]) -> list[HistoryRun]:
    attempts = [r for r in runs if r.run_id == text]
    return [representative(attempts)] if attempts else []


def _by_commit(text: str, runs: Sequence[HistoryRun]) -> list[HistoryRun]:
    if not _HEX.match(text):
        return []
    prefix = text.lower()
    matching = by_commit(r for r in runs if r.commit.startswith(prefix))
    return [representative(group) for group in matching.values()]


def moment_of(run: HistoryRun) -> tuple[datetime, str]:
    """The time a date REF compares ``run`` by, and what it is: the commit time the reporter
    stated, else when the run was staged."""
    if run.commit_time is not None and run.commit_time_by is CommitTimeBy.REPORTER:
        return _aware(parse_upload_time(run.commit_time)), "commit time"
    return _aware(parse_upload_time(run.staged_at)), "staging time"


def _aware(moment: datetime) -> datetime:
    """A time without a zone, read as UTC (so any two compare)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _by_moment(ref: str, text: str, runs: Sequence[HistoryRun]) -> Resolved:
    try:
        if _DATE.match(text):
            # A date alone means the whole day: its last run.
            day = datetime.fromisoformat(text).date()
            moment = datetime.combine(day, time(), tzinfo=UTC) + timedelta(days=1)
            inclusive = False
        else:
            moment = _aware(parse_upload_time(text))
            inclusive = True
    except ValueError as exc:
        raise RefError(ref, f"is not an ISO 8601 date or date-time ({exc})") from None
    best: tuple[datetime, HistoryRun, str] | None = None
    for run in runs:
        at, by = moment_of(run)
        if (at < moment or (inclusive and at == moment)) and (best is None or at > best[0]):
            best = (at, run, by)
    if best is None:
        raise RefError(ref, "no run was committed or staged at or before it")
    at, run, by = best
    chosen = representative([r for r in runs if r.commit == run.commit and moment_of(r)[0] == at])
    said = (
        "as the reporter stated it" if by == "commit time" else "no reporter stated a commit time"
    )
    note = f"{ref} names {label(chosen)}: by its {by}, {at.isoformat()} ({said})"
    return Resolved(chosen, (note,))
