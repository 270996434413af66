"""Recording a decision: the one builder of a run's promotion record, and its storage.

Every decision on a run (promoted, rejected, or pending after a transient error) becomes the
record to save through :func:`build_record`, which counts the attempt and carries the run's
history forward with the decision appended. The record is saved last, after everything it
reports has happened.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from wheelgate.core.errors import PromotionRejected
from wheelgate.core.evidence import evidence_by_file
from wheelgate.core.layout import NIGHTLY, STAGING
from wheelgate.core.manifest import ArtifactSet, is_commit
from wheelgate.core.manifest_limits import MAX_MANIFEST_BYTES
from wheelgate.core.planning import SetPlan
from wheelgate.core.records import (
    FileOutcome,
    PromotionRecord,
    RecordEntry,
    RefusedFile,
    SetOutcome,
    StagedFile,
    State,
    recorded_tests,
)
from wheelgate.core.redact import Redactor
from wheelgate.index.store import PageWrites
from wheelgate.storage.bucket import Bucket


def next_attempt(existing: PromotionRecord | None) -> int:
    """The attempt number of a decision on a run whose record so far is ``existing``."""
    return (existing.attempts if existing else 0) + 1


def build_record(
    existing: PromotionRecord | None,
    decision: RecordEntry,
    *,
    run_id: str,
    commit: str | None = None,
    sets: Sequence[SetOutcome] = (),
    pages: Sequence[str] = (),
    invalidations: Sequence[str] = (),
    override: dict[str, str] | None = None,
    imported_from: str | None = None,
) -> PromotionRecord:
    """The record to save for ``decision`` on ``run_id``.

    It states the decision and what it did (``commit``, ``sets``, ``pages``, ``invalidations``,
    ``override``, ``imported_from``: an import's keeps its source), counts one attempt more
    than ``existing`` (``None`` for a run never recorded) and keeps its log with this
    decision appended. A pending decision keeps the progress ``existing`` showed.
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
        imported_from=imported_from or (existing.imported_from if existing else None),
        progress=(existing.progress if existing and decision.state is State.PENDING else None),
        history=existing.history if existing else [],
    )
    return record.with_entry(decision)


@dataclass(frozen=True)
class ImportOutcome:
    """What an import's record says beside its files: its source and what it refused."""

    source: str
    refused: tuple[RefusedFile, ...] = ()


class Promotion(BaseModel):
    """What a promoted run's record will say, settled once every check passed: the sets with
    each file's outcome, and the message. One invocation records it right after publishing; a
    fan-out job keeps it in its plan until its publish step records it."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    commit: str | None
    manifest_sha256: str
    actor: str | None = None
    override: dict[str, str] | None = None
    #: An import's source (``s3://bucket/prefix/``).
    imported_from: str | None = None
    sets: list[SetOutcome]
    message: str


def settle_promotion(
    *,
    run_id: str,
    commit: str | None,
    plans: Sequence[SetPlan],
    accepted: Mapping[str, ArtifactSet],
    rejected_sets: Sequence[SetOutcome],
    manifest_sha256: str,
    actor: str | None,
    override: dict[str, str] | None,
    imported: ImportOutcome | None = None,
    signed: bool = False,
) -> Promotion:
    """The promotion of ``plans`` (the verified plans of the ``accepted`` sets, by index),
    beside the ``rejected_sets`` of the same manifest. ``imported`` is an import's source and
    the files it refused (its files come with their provenance in the plans); ``signed``: each
    file gets a verdict, whose key its outcome names."""
    sets = []
    for plan in plans:
        evidence = evidence_by_file(accepted[plan.index])
        files = [
            FileOutcome(
                filename=step.file.filename,
                sha256=step.file.sha256,
                size=step.file.size,
                action=(
                    "already-released"
                    if not step.copy
                    else "imported"
                    if step.provenance is not None
                    else "copied"
                ),
                evidence=list(evidence[step.file.filename]),
                source=step.provenance.source if step.provenance is not None else None,
                verdict=NIGHTLY.verdict(plan.index, step.file.filename) if signed else None,
            )
            for step in plan.steps
        ]
        sets.append(
            SetOutcome(
                index=plan.index,
                state=State.PROMOTED,
                files=files,
                tests=recorded_tests(accepted[plan.index].tests),
                refused=list(imported.refused) if imported is not None else [],
            )
        )
    copied = sum(len(p.copies) for p in plans)
    total = sum(len(p.steps) for p in plans)
    if imported is not None:
        message = (
            f"imported {copied} file(s) from {imported.source} ({total - copied} already "
            f"released, {len(imported.refused)} refused); no test vouches for them"
        )
    else:
        message = f"promoted {total} file(s) in {len(plans)} set(s) ({copied} copied)"
    if override is not None:
        message += f"; tests overridden by {override['by']}: {override['reason']}"
    if rejected_sets:
        message += f"; {len(rejected_sets)} set(s) rejected"
    return Promotion(
        run_id=run_id,
        commit=commit or None,
        manifest_sha256=manifest_sha256,
        actor=actor,
        override=override,
        imported_from=imported.source if imported is not None else None,
        sets=[*sets, *rejected_sets],
        message=message,
    )


def staged_of(promotion: Promotion, index: str) -> list[StagedFile]:
    """The files ``promotion`` was to release into ``index``, as its set lists them once
    rejected."""
    return [
        StagedFile(filename=f.filename, sha256=f.sha256, size=f.size)
        for s in promotion.sets
        if s.index == index
        for f in s.files
    ]


def promoted_record(
    existing: PromotionRecord | None,
    promotion: Promotion,
    *,
    at: str,
    writes: PageWrites,
    invalidations: Sequence[str],
) -> PromotionRecord:
    """The record of ``promotion`` once its pages are published: ``writes``, the pages
    (invalidated by ``invalidations``) and, per index directory, the files the publication took
    off the listing (listing retention), which each promoted set shows."""
    sets = [
        s.model_copy(update={"delisted": list(writes.delisted.get(s.index, ()))})
        if s.state is State.PROMOTED
        else s
        for s in promotion.sets
    ]
    decision = RecordEntry(
        at=at,
        state=State.PROMOTED,
        message=promotion.message,
        manifest_sha256=promotion.manifest_sha256,
        actor=promotion.actor,
    )
    return build_record(
        existing,
        decision,
        run_id=promotion.run_id,
        commit=promotion.commit,
        sets=sets,
        pages=writes.keys,
        invalidations=invalidations,
        override=promotion.override,
        imported_from=promotion.imported_from,
    )


def rejected_record(
    existing: PromotionRecord | None,
    rejection: PromotionRejected,
    *,
    run_id: str,
    at: str,
    manifest_sha256: str,
    actor: str | None,
    commit: str | None = None,
    sets: Sequence[SetOutcome] = (),
) -> PromotionRecord:
    """The record of a permanent rejection (of a manifest stating ``commit``, ``None`` when it
    could not be read); a promoted run stays promoted, with the refused replay in its
    history."""
    decision = RecordEntry.rejected(rejection, at=at, manifest_sha256=manifest_sha256, actor=actor)
    if existing is not None and existing.state is State.PROMOTED:
        return existing.with_entry(decision)
    return build_record(existing, decision, run_id=run_id, commit=commit or None, sets=sets)


def stated_commit(raw: bytes) -> str | None:
    """The commit a manifest's bytes state, read even from a manifest rejected as invalid:
    ``None`` when they are no JSON object, state no full commit SHA, or are a manifest too
    large or too deeply nested to read (a hostile one must not fail the rejection itself)."""
    if len(raw) > MAX_MANIFEST_BYTES:
        return None
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    commit = body.get("commit") if isinstance(body, dict) else None
    return commit if isinstance(commit, str) and is_commit(commit) else None


def failure_record(
    existing: PromotionRecord | None, *, run_id: str, at: str, failure: str, then: str
) -> PromotionRecord:
    """The record of a transient failure of an undecided run (``failure``: what failed;
    ``then``: what happens next): the run stays pending."""
    message = f"attempt {next_attempt(existing)} failed: {failure}; {then}"
    decision = RecordEntry(at=at, state=State.PENDING, reason="transient-error", message=message)
    return build_record(existing, decision, run_id=run_id)


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
