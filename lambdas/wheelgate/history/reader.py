"""Reading an index directory's run history: the head, then each month it names.

One GET for the head and one per month: the cost grows with the months of history, never with
the runs' file counts, and nothing is listed. :class:`HistorySource` is where the documents
come from: the staging bucket (:class:`BucketHistorySource`, for the promoter and operators) or
the staging distribution over HTTP (:class:`HttpHistorySource`, for anyone). Both count their
GETs, which the bench prints.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from pydantic import ValidationError

from wheelgate.core.layout import STAGING, key_url
from wheelgate.history.model import HistoryHead, HistoryRun, HistoryShard, newest_first
from wheelgate.storage.bucket import Bucket


class HistoryFormatError(ValueError):
    """A history document that is not what the history writes (named by its key)."""


class HistorySource(Protocol):
    """Where history documents are read from. ``get(key)`` returns the body, or ``None`` when
    there is no such object; ``gets`` counts the requests made."""

    @property
    def gets(self) -> int: ...

    def get(self, key: str) -> bytes | None: ...


class BucketHistorySource:
    """History documents read from the staging bucket."""

    def __init__(self, bucket: Bucket) -> None:
        self.bucket = bucket
        self.gets = 0

    def get(self, key: str) -> bytes | None:
        self.gets += 1
        found = self.bucket.get(key)
        return None if found is None else found[0]


class HttpHistorySource:
    """History documents read over HTTP from the staging distribution at ``base_url``;
    ``fetch(url)`` returns the body, or ``None`` for a 403 or 404
    (:func:`wheelgate.storage.http.fetch`)."""

    def __init__(self, base_url: str, fetch: Callable[[str], bytes | None]) -> None:
        self.base_url = base_url
        self._fetch = fetch
        self.gets = 0

    def get(self, key: str) -> bytes | None:
        self.gets += 1
        return self._fetch(key_url(self.base_url, key))


def read_head(source: HistorySource, index: str) -> HistoryHead | None:
    """The head of ``index``'s history, ``None`` when it has none yet."""
    key = STAGING.history_head(index)
    body = source.get(key)
    if body is None:
        return None
    try:
        return HistoryHead.model_validate_json(body)
    except ValidationError as exc:
        raise HistoryFormatError(f"{key} is not a run history head: {exc}") from None


def read_month(source: HistorySource, index: str, month: str) -> HistoryShard | None:
    """One month's runs of ``index``, ``None`` when there is no such shard."""
    key = STAGING.history_month(index, month)
    body = source.get(key)
    if body is None:
        return None
    try:
        return HistoryShard.model_validate_json(body)
    except ValidationError as exc:
        raise HistoryFormatError(f"{key} is not a month of run history: {exc}") from None


def read_history(source: HistorySource, index: str) -> list[HistoryRun]:
    """Every run of ``index``'s history, newest first: 1 + (months) GETs, no LIST. Raises
    :class:`HistoryFormatError` for a document the history did not write."""
    head = read_head(source, index)
    if head is None:
        return []
    runs: list[HistoryRun] = []
    for ref in head.months:
        shard = read_month(source, index, ref.month)
        if shard is not None:
            runs.extend(shard.runs)
    return newest_first(runs)
