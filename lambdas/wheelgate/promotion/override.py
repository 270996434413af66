"""The break-glass route: an override request (``manifests/override-*.json``) applied to the
rejected run it names.

A request is honoured only when S3 says the break-glass role wrote it (checked here, before the
request is parsed), and only for a run that was rejected (or whose fan-out promotion started
by this very request is still running). It skips the tests, and with them the evidence rule,
and nothing else: the target run is promoted by the service's own flow, so every set is still
verified before the first copy, every copy before any page changes, and the target's record is
written last. The request's own record, naming who and why, is written after the target's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.layout import STAGING
from wheelgate.core.manifest import Manifest, parse_manifest
from wheelgate.core.override import parse_override
from wheelgate.core.records import HistoryEntry, PromotionRecord, State
from wheelgate.core.settings import PromoterSettings
from wheelgate.index.pages import upload_time
from wheelgate.promotion.event import ManifestEvent, written_by
from wheelgate.promotion.fanout.jobs import FanoutJobs
from wheelgate.promotion.recorder import RecordStore, build_record
from wheelgate.storage.bucket import Bucket

if TYPE_CHECKING:
    from wheelgate.promotion.importing import ImportedSet


class PromotionFlow(Protocol):
    """The service's promotion of a run: acceptance (skipped under ``override``, and for an
    ``imported`` set), verification, copies, pages and the record, in that order."""

    def __call__(
        self,
        manifest: Manifest,
        digest: str,
        actor: str | None,
        existing: PromotionRecord | None,
        *,
        override: dict[str, str] | None = None,
        imported: ImportedSet | None = None,
        event: ManifestEvent,
    ) -> PromotionRecord: ...


#: The service's recording of a rejection: run id, rejection, manifest SHA-256, actor and the
#: record so far in; the record saved out.
Rejecter = Callable[
    [str, PromotionRejected, str, str | None, PromotionRecord | None], PromotionRecord
]


class OverrideRoute:
    """Applies break-glass override requests through the service's ``promote`` flow and
    records refusals with its ``reject``. ``fanout`` (``None``: no fan-out) tells whether the
    target's fan-out promotion is still running."""

    def __init__(
        self,
        *,
        settings: PromoterSettings,
        staging: Bucket,
        records: RecordStore,
        fanout: FanoutJobs | None,
        clock: Callable[[], datetime],
        promote: PromotionFlow,
        reject: Rejecter,
    ) -> None:
        self.settings = settings
        self.staging = staging
        self.records = records
        self.fanout = fanout
        self.clock = clock
        self.promote = promote
        self.reject = reject

    def apply(
        self,
        run_id: str,
        raw: bytes,
        digest: str,
        actor: str | None,
        existing: PromotionRecord | None,
        event: ManifestEvent,
    ) -> tuple[PromotionRecord, PromotionRecord | None]:
        """Apply a break-glass override request to its target run; record both.

        Returns the request's record and the target run's (``None`` when the request was
        refused before the target was touched)."""
        try:
            trusted = self.settings.break_glass_id
            if trusted is None or not written_by(actor, trusted):
                raise PromotionRejected(
                    Reason.UNTRUSTED_WRITER,
                    f"override requested by {actor or 'an unknown principal'}, which is not the "
                    "break-glass role" + ("" if trusted else " (no break-glass role configured)"),
                )
            request = parse_override(raw, expected_run_id=run_id)
            target = request.target_run_id
            found = self.staging.get(STAGING.manifest(target))
            target_record = self.records.load(target)
            if found is None or target_record is None:
                raise PromotionRejected(
                    Reason.OVERRIDE_NOT_APPLICABLE,
                    f"run {target} has no manifest or no decision yet; nothing to override",
                )
            target_raw = found[0]
            target_digest = hashlib.sha256(target_raw).hexdigest()
            # A redelivered request whose fan-out promotion is still running applies again
            # (it changes nothing): the target is pending only because of that request.
            running = self.fanout is not None and self.fanout.running(target, target_digest)
            if target_record.state is not State.REJECTED and not running:
                raise PromotionRejected(
                    Reason.OVERRIDE_NOT_APPLICABLE,
                    f"run {target} is {target_record.state.value}; only a rejected run can be "
                    "overridden",
                )
            manifest = parse_manifest(target_raw, expected_run_id=target)
        except PromotionRejected as rejection:
            return self.reject(run_id, rejection, digest, actor, existing), None
        override = {"by": actor or "", "reason": request.reason, "request": run_id}
        result = self.promote(
            manifest,
            target_digest,
            actor,
            target_record,
            override=override,
            event=event,
        )
        at = upload_time(self.clock())
        outcome = f"override applied: run {target} {result.state.value}" + (
            f" ({result.reason}: {result.message})" if result.reason else ""
        )
        decision = HistoryEntry(
            at=at,
            state=result.state,
            reason=result.reason,
            message=outcome,
            manifest_sha256=digest,
            actor=actor,
        )
        saved = self.records.save(
            build_record(existing, decision, run_id=run_id, override=override)
        )
        return saved, result
