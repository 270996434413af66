"""Who hears of a decision: the :class:`DecisionObserver` interface and what it is told.

The promoter tells its observer of every new promoted or rejected decision exactly once, at
the point the decision is recorded: a run promoted or rejected, a yank applied, an override
request decided; and, apart (``ignored``), of each new untrusted write noted as pending, which
decides nothing. It tells nothing of a redelivered manifest whose decision (or note) is already
recorded, or of a transient failure (the message is retried and decided later). Metrics hang
off this interface (``wheelgate.lambda_function.telemetry``), so every flow that decides a run,
the fan-out state machine's steps included, counts the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from wheelgate.core.records import PromotionRecord, RecordEntry, State
from wheelgate.index.pages import parse_upload_time


@dataclass(frozen=True)
class DecisionStats:
    """What a decision did, beside its record.

    ``files_copied`` and ``bytes_copied`` count the files this decision copied into nightly
    (files nightly already held are not counted). ``manifest_written_at`` is when the manifest
    was written (its S3 event time; ``None`` when unknown), ``published_at`` when the decision's
    index pages were published, by the promoter's clock (``None`` when it published none).
    """

    files_copied: int = 0
    bytes_copied: int = 0
    manifest_written_at: datetime | None = None
    published_at: datetime | None = None

    def __post_init__(self) -> None:
        if self.files_copied < 0 or self.bytes_copied < 0:
            raise ValueError(
                f"copies cannot be negative: {self.files_copied} file(s), "
                f"{self.bytes_copied} byte(s)"
            )
        for name in ("manifest_written_at", "published_at"):
            moment = getattr(self, name)
            if moment is not None and moment.tzinfo is None:
                raise ValueError(f"{name} must be timezone-aware, not {moment!r}")

    @property
    def latency_seconds(self) -> float | None:
        """Seconds from the manifest's write to its pages being published, when both are
        known (never negative: clocks of S3 and the promoter can disagree a little)."""
        if self.manifest_written_at is None or self.published_at is None:
            return None
        return max(0.0, (self.published_at - self.manifest_written_at).total_seconds())


class DecisionObserver(Protocol):
    """Hears of each new promoted or rejected decision, once.

    ``decided(record, stats)`` is called after ``record`` (whose last log entry is the new
    decision) was saved. It must not raise: the decision is made and recorded, and a failing
    observer must not turn it into a retry. A flow that records a decision outside
    :class:`~wheelgate.promotion.service.PromotionService`'s one-invocation path (for instance a
    step of a fan-out promotion that publishes a run's pages and records it) calls the
    service's ``observer`` the same way, exactly once per decision, with the stats it knows.
    """

    def decided(self, record: PromotionRecord, stats: DecisionStats) -> None: ...

    def ignored(self, record: PromotionRecord) -> None:
        """Called once per new untrusted write, after ``record`` (whose last log entry is
        its pending ``untrusted-writer`` note) was saved. Must not raise either."""


class NoObserver:
    """An observer that ignores every decision (the default: tests, the CLI)."""

    def decided(self, record: PromotionRecord, stats: DecisionStats) -> None:
        return None

    def ignored(self, record: PromotionRecord) -> None:
        return None


def latest_decision(record: PromotionRecord) -> RecordEntry:
    """The decision an observer is told of: the record's last log entry.

    Raises ``ValueError`` for a record with an empty log (no decision to tell of).
    """
    if not record.history:
        raise ValueError(f"record of run {record.run_id} has no decision in its history")
    return record.history[-1]


def decision_stats(
    record: PromotionRecord, *, manifest_written_at: datetime | None
) -> DecisionStats:
    """The stats of ``record``'s latest decision, read from the record the decision wrote.

    Copies are the files its sets show as ``copied`` or ``imported``, counted only for a
    promotion (a
    rejection copies nothing it keeps: a replay refused on a promoted run keeps that run's
    earlier sets). The publish time is the decision's own time, which the promoter takes
    after its pages were published, and only for a promotion that published pages.
    """
    decision = latest_decision(record)
    if decision.state is not State.PROMOTED:
        return DecisionStats(manifest_written_at=manifest_written_at)
    copied = [
        f
        for s in record.sets
        if s.state is State.PROMOTED
        for f in s.files
        if f.action in ("copied", "imported")
    ]
    return DecisionStats(
        files_copied=len(copied),
        bytes_copied=sum(f.size for f in copied),
        manifest_written_at=manifest_written_at,
        published_at=parse_upload_time(decision.at) if record.pages else None,
    )
