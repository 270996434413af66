"""Naming a run of an index directory's history (``--good REF``, ``--bad REF``). Pure.

A REF is one of: ``latest`` (the newest run); ``promoted`` (the newest promoted run); a run id
(``run:ID`` says so when the id could also be read as a commit prefix); a commit prefix of at
least 4 hex digits, any case (``commit:PREFIX`` says so); a date or date-time in ISO 8601, the
last run staged at or before it (a date alone is the end of that day, a time without a zone
is UTC). Versions are never compared: builds of one version differ only by a local label.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, time, timedelta

from wheelgate.bisect.commits import by_commit, label, representative
from wheelgate.core.timestamps import parse_upload_time
from wheelgate.history.model import HistoryRun, RunState

#: The shortest commit prefix a REF may be (git's own minimum abbreviation).
MIN_PREFIX = 4
_HEX = re.compile(rf"^[0-9a-fA-F]{{{MIN_PREFIX},40}}$")
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_DATE_TIME = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}")


class RefError(ValueError):
    """A REF that names no run, or several (``candidates``, newest first)."""

    def __init__(self, ref: str, message: str, candidates: Sequence[HistoryRun] = ()) -> None:
        listed = "".join(f"\n  {label(run)}" for run in candidates)
        super().__init__(f"{ref!r}: {message}{listed}")
        self.ref = ref
        self.candidates = tuple(candidates)


def resolve_ref(ref: str, runs: Sequence[HistoryRun]) -> HistoryRun:
    """The run ``ref`` names among ``runs`` (a history, newest first).

    Raises :class:`RefError` for a REF that names no run, or that names several (a commit
    prefix of two commits, a run id that is also a commit prefix): the error lists them.
    """
    text = ref.strip()
    if not runs:
        raise RefError(ref, "the history of this index directory holds no run")
    if text == "latest":
        return runs[0]
    if text == "promoted":
        promoted = [r for r in runs if r.state is RunState.PROMOTED]
        if not promoted:
            raise RefError(ref, "no run of this index directory was promoted")
        return promoted[0]
    kind, _, rest = text.partition(":")
    if rest and kind == "run":
        return _only(ref, _by_run_id(rest, runs), "is not a run id of this history")
    if rest and kind == "commit":
        return _only(ref, _by_commit(rest, runs), "is not a commit of this history")
    if _DATE.match(text) or _DATE_TIME.match(text):
        return _by_moment(ref, text, runs)
    found = _by_run_id(text, runs) + _by_commit(text, runs)
    return _only(ref, found, "is neither a run id nor a commit prefix of this history")


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


def _by_moment(ref: str, text: str, runs: Sequence[HistoryRun]) -> HistoryRun:
    try:
        if _DATE.match(text):
            # A date alone means the whole day: its last run.
            day = datetime.fromisoformat(text).date()
            moment = datetime.combine(day, time(), tzinfo=UTC) + timedelta(days=1)
            inclusive = False
        else:
            moment = parse_upload_time(text)
            inclusive = True
    except ValueError as exc:
        raise RefError(ref, f"is not an ISO 8601 date or date-time ({exc})") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    for run in runs:
        staged = parse_upload_time(run.staged_at)
        if staged < moment or (inclusive and staged == moment):
            return run
    raise RefError(ref, "no run was staged at or before it")
