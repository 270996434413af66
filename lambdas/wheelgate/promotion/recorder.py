"""Recording a decision: the one builder of a run's promotion record, and its storage.

Every decision on a run (promoted, rejected, or pending after a transient error) becomes the
record to save through :func:`build_record`, which counts the attempt and carries the run's
history forward with the decision appended. The record is saved last, after everything it
reports has happened.
"""

from __future__ import annotations

from collections.abc import Sequence

from wheelgate.core.layout import STAGING
from wheelgate.core.records import HistoryEntry, PromotionRecord, SetOutcome
from wheelgate.core.redact import Redactor
from wheelgate.storage.bucket import Bucket


def next_attempt(existing: PromotionRecord | None) -> int:
    """The attempt number of a decision on a run whose record so far is ``existing``."""
    return (existing.attempts if existing else 0) + 1


def build_record(
    existing: PromotionRecord | None,
    decision: HistoryEntry,
    *,
    run_id: str,
    commit: str | None = None,
    sets: Sequence[SetOutcome] = (),
    pages: Sequence[str] = (),
    invalidations: Sequence[str] = (),
    override: dict[str, str] | None = None,
) -> PromotionRecord:
    """The record to save for ``decision`` on ``run_id``.

    It states the decision and what it did (``commit``, ``sets``, ``pages``, ``invalidations``,
    ``override``), counts one attempt more than ``existing`` (``None`` for a run never
    recorded) and keeps its history with this decision appended.
    """
    record = PromotionRecord(
        run_id=run_id,
        state=decision.state,
        reason=decision.reason,
        message=decision.message,
        commit=commit,
        manifest_sha256=decision.manifest_sha256,
        decided_at=decision.at,
        actor=decision.actor,
        attempts=next_attempt(existing),
        sets=list(sets),
        pages=list(pages),
        invalidations=list(invalidations),
        override=override,
        history=existing.history if existing else [],
    )
    return record.with_entry(decision)


class RecordStore:
    """The promotion records in the staging bucket (``records/<run_id>.json``)."""

    def __init__(self, staging: Bucket) -> None:
        self.staging = staging

    def load(self, run_id: str) -> PromotionRecord | None:
        """The record of ``run_id``, or ``None`` when no decision was recorded yet."""
        found = self.staging.get(STAGING.record(run_id))
        if found is None:
            return None
        return PromotionRecord.model_validate_json(found[0])

    def save(self, record: PromotionRecord) -> PromotionRecord:
        """Write ``record`` with secrets redacted; return it as given."""
        # Test URLs come from the manifest and may carry a token: records are read widely.
        self.staging.put(
            STAGING.record(record.run_id),
            Redactor()(record.to_json()).encode(),
            content_type="application/json",
        )
        return record
