"""The one store of promotion records, and what a promoted run's record will say.

A record's transitions (promoted, rejected, failed, noted, overridden) are methods of
:class:`~wheelgate.core.records.PromotionRecord`; :class:`RecordStore` saves what they return,
last, after everything the record reports has happened. :func:`settle_promotion` settles the
:class:`~wheelgate.core.records.Promotion` of verified plans.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from wheelgate.core.evidence import evidence_by_file
from wheelgate.core.layout import NIGHTLY, STAGING
from wheelgate.core.manifest import ArtifactSet, is_commit
from wheelgate.core.manifest_limits import MAX_MANIFEST_BYTES
from wheelgate.core.planning import SetPlan
from wheelgate.core.records import (
    FileOutcome,
    Promotion,
    PromotionRecord,
    RefusedFile,
    SetOutcome,
    StagedFile,
    State,
    recorded_tests,
)
from wheelgate.core.redact import Redactor
from wheelgate.storage.bucket import Bucket


@dataclass(frozen=True)
class ImportOutcome:
    """What an import's record says beside its files: its source and what it refused."""

    source: str
    refused: tuple[RefusedFile, ...] = ()


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
