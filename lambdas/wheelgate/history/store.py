"""The run history's writer: month shards and the head, changed through the one conditional
read-modify-write loop, so concurrent folds and decisions lose nothing.

The promoter alone writes here. A change to a run goes to the shard of the month it was first
staged in (``If-Match`` on the shard's ETag, ``If-None-Match: *`` for a new month); then the
head names that month with the shard's run count (the same loop). The head is brought up to
date even when the shard did not change, so a retry after a crash between the two finishes the
job. After each change the optional ``page_writer`` is handed the runs its page lists
(:func:`~wheelgate.history.page.listed_runs`).

A stage entry is any build job's to write, so a flood of them must not bury the runs that
matter: a run never reported is added by its entry only while its UTC day of staging holds
fewer than :data:`STAGED_RUNS_PER_DAY` such runs (:meth:`HistoryStore.add_staged_run`); the
head names each capped day, its cap and the runs it dropped. A decision always lands.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from wheelgate.core.layout import STAGING
from wheelgate.core.timestamps import upload_time, utc_now
from wheelgate.history.install_route import with_install
from wheelgate.history.model import (
    CappedDay,
    HistoryHead,
    HistoryRun,
    HistoryShard,
    MonthRef,
    RunState,
    staging_order,
)
from wheelgate.history.page import listed_runs
from wheelgate.history.reader import BucketHistorySource, read_head, read_month
from wheelgate.index.pages import PAGE_CACHE_CONTROL
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.conditional import Put, Rendered, StateUpdate, read_modify_write

#: Writes an index directory's history page from its newest runs (newest first).
PageWriter = Callable[[str, list[HistoryRun]], None]
#: A change to one run: the run as the shard holds it (``None``: not there) in, the run to
#: keep out.
RunChange = Callable[[HistoryRun | None], HistoryRun]

#: The shards' and head's content type: plain JSON (not an index page's).
HISTORY_CONTENT_TYPE = "application/json"
#: How many of the newest reported (or decided) runs the page is handed, and at most how many
#: of the newest never-reported runs beside them.
PAGE_RUNS = 200
#: At most this many never-reported runs a directory's history takes per UTC day of their
#: staging: twice a busy day's nightly and pull-request runs of one directory. Beyond it a new
#: run's entry is not folded (the head's ``capped`` says so); reported runs are never capped.
STAGED_RUNS_PER_DAY = 48
#: At most this many dropped run ids a capped day names, and this many capped days (the
#: newest) the head keeps: a flood cannot grow the head without bound either.
MAX_DROPPED_NAMED = 100
MAX_CAPPED_DAYS = 62


class HistoryStore:
    """Reads and changes the run history in ``staging`` (the head stamped with the time it is
    written); ``page_writer`` (``None``: no page) is called after each change, ``sleep`` is the
    conditional loop's backoff."""

    def __init__(
        self,
        staging: Bucket,
        *,
        page_writer: PageWriter | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.staging = staging
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
        return self._change(index, month, changes, cap=None)

    def add_staged_run(
        self,
        index: str,
        month: str,
        run_id: str,
        change: RunChange,
        *,
        cap: int = STAGED_RUNS_PER_DAY,
    ) -> HistoryRun | None:
        """:meth:`change_run` for a stage entry's run, but a run the shard lacks that would be
        added never reported is added only while its UTC day of staging holds fewer than
        ``cap`` never-reported runs. Returns the run kept, ``None`` when it was dropped (the
        head's capped day then names it). Raises as :meth:`change_run` does."""
        return self._change(index, month, {run_id: change}, cap=cap).get(run_id)

    def _change(
        self, index: str, month: str, changes: Mapping[str, RunChange], *, cap: int | None
    ) -> dict[str, HistoryRun]:
        key = STAGING.history_month(index, month)

        def read() -> tuple[HistoryShard, str | None]:
            found = self.staging.get(key)
            if found is None:
                return HistoryShard(index=index, month=month), None
            shard = read_month(_Known(found[0]), index, month)
            assert shard is not None
            return shard, found[1]

        def decide(
            shard: HistoryShard,
        ) -> StateUpdate[tuple[dict[str, HistoryRun], list[HistoryRun], int]]:
            runs = {r.run_id: r for r in shard.runs}
            kept, dropped = {}, []
            for run_id, change in changes.items():
                old = runs.get(run_id)
                new = with_install(change(old))
                if cap is not None and old is None and _over_cap(runs.values(), new, cap):
                    dropped.append(new)
                    continue
                kept[run_id] = runs[run_id] = new
            ordered = tuple(sorted(runs.values(), key=staging_order))
            new_shard = shard.model_copy(update={"runs": ordered})
            return StateUpdate(
                result=(kept, dropped, len(ordered)),
                changed=new_shard != shard,
                render=lambda: Rendered(state=_json_put(key, new_shard.to_json())),
            )

        outcome = read_modify_write(self.staging, read, decide, sleep=self.sleep)
        kept, dropped, count = outcome.result
        self._name_month(index, month, count, dropped=dropped, cap=cap)
        if self.page_writer is not None and kept:
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
        """The runs the page of ``index`` lists (:func:`~wheelgate.history.page.listed_runs`),
        newest first: the newest months are read until they hold ``limit`` reported runs."""
        source = BucketHistorySource(self.staging)
        head = read_head(source, index)
        runs: list[HistoryRun] = []
        for ref in head.months if head else ():
            if sum(r.state is not RunState.STAGED for r in runs) >= limit:
                break
            shard = read_month(source, index, ref.month)
            runs.extend(shard.runs if shard else ())
        return listed_runs(runs, limit)

    def _name_month(
        self,
        index: str,
        month: str,
        count: int,
        *,
        dropped: Sequence[HistoryRun] = (),
        cap: int | None = None,
    ) -> None:
        key = STAGING.history_head(index)
        now = upload_time(utc_now())

        def read() -> tuple[HistoryHead | None, str | None]:
            found = self.staging.get(key)
            if found is None:
                return None, None
            return read_head(_Known(found[0]), index), found[1]

        def decide(head: HistoryHead | None) -> StateUpdate[None]:
            months = {m.month: m.runs for m in head.months} if head else {}
            # Runs are never taken out of a shard: a smaller count is a slower writer's.
            months[month] = max(months.get(month, 0), count)
            refs = tuple(MonthRef(month=m, runs=n) for m, n in sorted(months.items(), reverse=True))
            capped = _capped(head.capped if head else (), dropped, cap or 0)
            changed = head is None or refs != head.months or capped != head.capped
            new = HistoryHead(index=index, updated_at=now, months=refs, capped=capped)
            return StateUpdate(
                result=None,
                changed=changed,
                render=lambda: Rendered(state=_json_put(key, new.to_json())),
            )

        read_modify_write(self.staging, read, decide, sleep=self.sleep)


def _over_cap(runs: Iterable[HistoryRun], new: HistoryRun, cap: int) -> bool:
    """Whether ``new``, never reported, would be one too many of its UTC day's."""
    if new.state is not RunState.STAGED:
        return False
    day = new.staged_at[:10]
    return sum(r.state is RunState.STAGED and r.staged_at[:10] == day for r in runs) >= cap


def _capped(
    known: Sequence[CappedDay], dropped: Sequence[HistoryRun], cap: int
) -> tuple[CappedDay, ...]:
    """The head's capped days, ``dropped`` named on their days (bounded, newest days kept)."""
    days = {c.day: c for c in known}
    for run in dropped:
        day = run.staged_at[:10]
        found = days.get(day) or CappedDay(day=day, cap=cap)
        if run.run_id not in found.dropped and len(found.dropped) < MAX_DROPPED_NAMED:
            found = found.model_copy(update={"dropped": (*found.dropped, run.run_id)})
        days[day] = found
    return tuple(sorted(days.values(), key=lambda c: c.day, reverse=True)[:MAX_CAPPED_DAYS])


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
