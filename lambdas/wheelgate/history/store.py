"""The run history's writer: month shards and the head, changed through the one conditional
read-modify-write loop, so concurrent folds and decisions lose nothing.

The promoter alone writes here. A change to a run goes to the shard of the month it was first
staged in (``If-Match`` on the shard's ETag, ``If-None-Match: *`` for a new month); then the
head names that month with the shard's run count (the same loop). The head is brought up to
date even when the shard did not change, so a retry after a crash between the two finishes the
job. After each change the optional ``page_writer`` is handed the newest runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import datetime

from wheelgate.core.layout import STAGING
from wheelgate.core.timestamps import upload_time
from wheelgate.history.install_route import with_install
from wheelgate.history.model import HistoryHead, HistoryRun, HistoryShard, MonthRef, newest_first
from wheelgate.history.reader import BucketHistorySource, read_head, read_month
from wheelgate.index.pages import PAGE_CACHE_CONTROL
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.conditional import Decided, Put, Rendered, read_modify_write

#: Writes an index directory's history page from its newest runs (newest first).
PageWriter = Callable[[str, list[HistoryRun]], None]
#: A change to one run: the run as the shard holds it (``None``: not there) in, the run to
#: keep out.
RunChange = Callable[[HistoryRun | None], HistoryRun]

#: The shards' and head's content type: plain JSON (not an index page's).
HISTORY_CONTENT_TYPE = "application/json"
#: How many of the newest runs the page is handed.
PAGE_RUNS = 200


class HistoryStore:
    """Reads and changes the run history in ``staging``; ``clock`` stamps the head,
    ``page_writer`` (``None``: no page) is called after each change, ``sleep`` is the
    conditional loop's backoff."""

    def __init__(
        self,
        staging: Bucket,
        *,
        clock: Callable[[], datetime],
        page_writer: PageWriter | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.staging = staging
        self.clock = clock
        self.page_writer = page_writer
        self.sleep = sleep

    def change_run(self, index: str, month: str, run_id: str, change: RunChange) -> HistoryRun:
        """Apply ``change`` to run ``run_id`` in ``index``'s shard of ``month`` (creating the
        shard), then name the month in the head and refresh the page. Returns the run kept.
        Raises :class:`~wheelgate.core.errors.TransientError` when the shard or head keeps
        changing, :class:`~wheelgate.history.reader.HistoryFormatError` for a shard or head the
        history did not write."""
        return self.change_runs(index, month, {run_id: change})[run_id]

    def change_runs(
        self, index: str, month: str, changes: Mapping[str, RunChange]
    ) -> dict[str, HistoryRun]:
        """:meth:`change_run` for several runs of one month at once: one conditional write of
        the shard and one of the head, however many runs (a backfill, or a bench writing
        thousands). Returns each run kept by its id; raises as :meth:`change_run` does."""
        key = STAGING.history_month(index, month)

        def read() -> tuple[HistoryShard, str | None]:
            found = self.staging.get(key)
            if found is None:
                return HistoryShard(index=index, month=month), None
            shard = read_month(_Known(found[0]), index, month)
            assert shard is not None
            return shard, found[1]

        def decide(shard: HistoryShard) -> Decided[tuple[dict[str, HistoryRun], int]]:
            runs = {r.run_id: r for r in shard.runs}
            kept = {r: with_install(change(runs.get(r))) for r, change in changes.items()}
            runs.update(kept)
            ordered = tuple(sorted(runs.values(), key=lambda r: (r.staged_at, r.run_id)))
            new = shard.model_copy(update={"runs": ordered})
            return Decided(
                result=(kept, len(ordered)),
                changed=new != shard,
                render=lambda: Rendered(state=_json_put(key, new.to_json())),
            )

        outcome = read_modify_write(self.staging, read, decide, sleep=self.sleep)
        kept, count = outcome.result
        self._name_month(index, month, count)
        if self.page_writer is not None:
            self.page_writer(index, self.newest_runs(index))
        return kept

    def find_month(self, index: str, run_id: str, since: str | None = None) -> str | None:
        """The month whose shard holds run ``run_id`` of ``index``, reading the months from
        ``since`` on (``None``: all), newest first; ``None`` when no shard does."""
        source = BucketHistorySource(self.staging)
        head = read_head(source, index)
        for ref in head.months if head else ():
            if since is not None and ref.month < since:
                break
            shard = read_month(source, index, ref.month)
            if shard is not None and any(r.run_id == run_id for r in shard.runs):
                return ref.month
        return None

    def newest_runs(self, index: str, limit: int = PAGE_RUNS) -> list[HistoryRun]:
        """The newest ``limit`` runs of ``index``, newest first: the newest months are read
        until they hold that many."""
        source = BucketHistorySource(self.staging)
        head = read_head(source, index)
        runs: list[HistoryRun] = []
        for ref in head.months if head else ():
            if len(runs) >= limit:
                break
            shard = read_month(source, index, ref.month)
            runs.extend(shard.runs if shard else ())
        return newest_first(runs)[:limit]

    def _name_month(self, index: str, month: str, count: int) -> None:
        key = STAGING.history_head(index)
        now = upload_time(self.clock())

        def read() -> tuple[HistoryHead | None, str | None]:
            found = self.staging.get(key)
            if found is None:
                return None, None
            return read_head(_Known(found[0]), index), found[1]

        def decide(head: HistoryHead | None) -> Decided[None]:
            months = {m.month: m.runs for m in head.months} if head else {}
            # Runs are never taken out of a shard: a smaller count is a slower writer's.
            months[month] = max(months.get(month, 0), count)
            refs = tuple(MonthRef(month=m, runs=n) for m, n in sorted(months.items(), reverse=True))
            changed = head is None or refs != head.months
            new = HistoryHead(index=index, updated_at=now, months=refs)
            return Decided(
                result=None,
                changed=changed,
                render=lambda: Rendered(state=_json_put(key, new.to_json())),
            )

        read_modify_write(self.staging, read, decide, sleep=self.sleep)


class _Known:
    """A history source of one document already read (so the reader's checks apply)."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.gets = 0

    def get(self, key: str) -> bytes | None:
        return self.body


def _json_put(key: str, body: str) -> Put:
    return Put(
        key=key,
        body=body.encode(),
        content_type=HISTORY_CONTENT_TYPE,
        cache_control=PAGE_CACHE_CONTROL,
    )
