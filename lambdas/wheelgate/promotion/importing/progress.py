"""The import request's record while it gathers: its pending entry and its progress."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from wheelgate.core.import_rules import ImportRequest
from wheelgate.core.records import Progress, PromotionRecord, RecordEntry, State
from wheelgate.core.timestamps import upload_time
from wheelgate.promotion.recorder import RecordStore


class ImportProgress:
    """Writes an import's pending entry (once per request) and its gathering progress."""

    def __init__(self, *, records: RecordStore, clock: Callable[[], datetime]) -> None:
        self.records = records
        self.clock = clock

    def started(
        self,
        request: ImportRequest,
        digest: str,
        actor: str | None,
        existing: PromotionRecord | None,
        total: int,
    ) -> PromotionRecord:
        """The request's record while it gathers: a pending entry, once per request."""
        message = f"importing {total} file(s) from {request.source} into {request.index}"
        if existing is not None and any(
            h.manifest_sha256 == digest and h.message == message for h in existing.history
        ):
            return existing
        entry = RecordEntry(
            at=upload_time(self.clock()),
            state=State.PENDING,
            message=message,
            manifest_sha256=digest,
            actor=actor,
        )
        if existing is not None and existing.state is not State.PENDING:
            # An import asked again after a decision: the decision stands until the new one.
            record = existing.with_entry(entry)
        else:
            record = PromotionRecord.of(existing, request.run_id).following(
                entry, imported_from=request.source
            )
        return self.records.save(record)

    def gathered(
        self, record: PromotionRecord, done: int, total: int, read: Sequence[bool]
    ) -> PromotionRecord:
        """``record`` with ``done`` of ``total`` files gathered, ``read`` telling of each
        gathered file whether the promoter read it for its hash."""
        progress = Progress(phase="gathering", done=done, total=total, read=sum(read))
        return self.records.save(record.model_copy(update={"progress": progress}))
