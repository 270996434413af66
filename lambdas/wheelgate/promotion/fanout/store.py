"""A fan-out job's objects in staging (``records/_jobs/<job_id>/``): its plan and items, the
done marker of each item, the refusal a step noted, and the mark of a concluded execution."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from datetime import datetime

from pydantic import TypeAdapter

from wheelgate.core.errors import PromotionRejected, TransientError
from wheelgate.core.layout import STAGING
from wheelgate.index.pages import IndexEntry, upload_time
from wheelgate.promotion.fanout.job import (
    FanoutIncomplete,
    FanoutJob,
    JobItem,
    Rejection,
    StepError,
    fanout_job_id,
)
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.errors import PreconditionFailed

_JSON = "application/json"
#: A done marker holds the item's page entry.
_ENTRY = TypeAdapter(IndexEntry)


class JobStore:
    """Reads and writes the jobs' objects in ``staging``; ``clock`` stamps the concluded mark."""

    def __init__(self, *, staging: Bucket, clock: Callable[[], datetime]) -> None:
        self.staging = staging
        self.clock = clock
        # Every item of a job reads its plan; a warm container reads it once.
        self._cached: FanoutJob | None = None
        self._lock = threading.Lock()

    def write(self, job: FanoutJob) -> FanoutJob:
        """Write ``job``'s items, then its plan, conditionally, so two writers of one job
        converge on the first (whose job is returned)."""
        self.staging.put(
            STAGING.job_items(job.job_id),
            json.dumps([{"item": n} for n in range(len(job.items))]).encode(),
            content_type=_JSON,
        )
        self.staging.put(
            STAGING.job_hash_items(job.job_id),
            json.dumps([{"item": n} for n, i in enumerate(job.items) if i.hash_read]).encode(),
            content_type=_JSON,
        )
        try:
            self.staging.put(
                STAGING.job_plan(job.job_id),
                job.model_dump_json(by_alias=True).encode(),
                content_type=_JSON,
                if_none_match=True,
            )
        except PreconditionFailed:
            return self.load(job.job_id)
        return job

    def load(self, job_id: str) -> FanoutJob:
        """The job ``job_id``. Raises :class:`TransientError` when it is not written (yet)."""
        with self._lock:
            if self._cached is not None and self._cached.job_id == job_id:
                return self._cached
        found = self.staging.get(STAGING.job_plan(job_id))
        if found is None:
            raise TransientError(f"fan-out job {job_id} has no plan")
        job = FanoutJob.model_validate_json(found[0])
        with self._lock:
            self._cached = job
        return job

    def latest(self, run_id: str, manifest_sha256: str) -> FanoutJob | None:
        """The manifest's job of the highest attempt, if any (plans are large: only that one
        is read)."""
        attempt = 0
        while self.staging.head(
            STAGING.job_plan(fanout_job_id(run_id, manifest_sha256, attempt + 1))
        ):
            attempt += 1
        if attempt == 0:
            return None
        found = self.staging.get(STAGING.job_plan(fanout_job_id(run_id, manifest_sha256, attempt)))
        return None if found is None else FanoutJob.model_validate_json(found[0])

    def item(self, job_id: str, item: int) -> JobItem:
        job = self.load(job_id)
        if item >= len(job.items):
            raise StepError(f"job {job_id} has {len(job.items)} items, not item {item}")
        return job.items[item]

    def ended(self, job: FanoutJob) -> bool:
        """Whether ``job``'s execution has ended: concluded, or outlived its leases and its
        execution's timeout."""
        if job.expires <= self.clock().timestamp():
            return True
        return self.staging.head(STAGING.job_concluded(job.job_id)) is not None

    def mark_concluded(self, job_id: str) -> None:
        self.staging.put(
            STAGING.job_concluded(job_id),
            json.dumps({"at": upload_time(self.clock())}).encode(),
            content_type=_JSON,
        )

    def is_done(self, job_id: str, item: int) -> bool:
        return self.staging.head(STAGING.job_done(job_id, item)) is not None

    def mark_done(self, job_id: str, item: int, entry: IndexEntry) -> None:
        """Write item ``item``'s done marker, holding its page entry."""
        # A twin delivery of this item may have finished first: its entry stands.
        with suppress(PreconditionFailed):
            self.staging.put(
                STAGING.job_done(job_id, item),
                _ENTRY.dump_json(entry),
                content_type=_JSON,
                if_none_match=True,
            )

    def done_entries(self, job: FanoutJob) -> list[IndexEntry]:
        """The page entry of every item, in item order."""
        prefix = STAGING.job_done_prefix(job.job_id)
        keys = {obj.key for obj in self.staging.list(prefix)}
        missing = [n for n in range(len(job.items)) if STAGING.job_done(job.job_id, n) not in keys]
        if missing:
            raise FanoutIncomplete(
                f"job {job.job_id}: {len(missing)} of {len(job.items)} item(s) not copied, "
                f"e.g. item {missing[0]}; nothing is published"
            )

        def read(n: int) -> IndexEntry:
            found = self.staging.get(STAGING.job_done(job.job_id, n))
            if found is None:
                raise FanoutIncomplete(f"job {job.job_id}: item {n}'s done marker vanished")
            return _ENTRY.validate_json(found[0])

        with ThreadPoolExecutor(max_workers=self.staging.limits.workers) as pool:
            return list(pool.map(read, range(len(job.items))))

    def note_refusal(self, job_id: str, rejection: PromotionRejected) -> None:
        """Write a step's permanent refusal for the concluding step to read."""
        note = Rejection(reason=rejection.reason, message=rejection.message, index=rejection.index)
        # Another item's refusal may have been noted first: one reason is enough.
        with suppress(PreconditionFailed):
            self.staging.put(
                STAGING.job_rejection(job_id),
                note.model_dump_json().encode(),
                content_type=_JSON,
                if_none_match=True,
            )

    def refusal(self, job_id: str) -> Rejection | None:
        """The refusal a step noted, if any."""
        found = self.staging.get(STAGING.job_rejection(job_id))
        return None if found is None else Rejection.model_validate_json(found[0])
