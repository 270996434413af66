"""The fan-out execution's steps, each one invocation of the promoter function: ``hash`` and
``copy`` one item, ``publish`` the job, ``conclude`` a failed execution. A step that records
the run's decision (publish, conclude) returns it as a :class:`~..decisions.Decision`, with
the manifest decided on, for the service's projections."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.fanout_steps import FANOUT_STEP_FIELD
from wheelgate.core.layout import IMPORT_RUN_PREFIX, STAGING
from wheelgate.core.limits import FANOUT_MAX_EXECUTIONS
from wheelgate.core.manifest import Manifest, parse_manifest
from wheelgate.core.records import PromotionRecord, State
from wheelgate.core.settings import PromoterSettings
from wheelgate.core.timestamps import upload_time
from wheelgate.promotion.decisions import Decision
from wheelgate.promotion.fanout.job import FanoutJob, Rejection, StepError
from wheelgate.promotion.fanout.ports import MessageSender
from wheelgate.promotion.fanout.store import JobStore
from wheelgate.promotion.lease import IndexLeases
from wheelgate.promotion.leftovers import account_for_copies, rejected_outcomes
from wheelgate.promotion.publish import Publisher
from wheelgate.promotion.recorder import RecordStore, staged_of
from wheelgate.promotion.release import Releaser
from wheelgate.promotion.verdicts import VerdictWriter
from wheelgate.promotion.verification import SetVerifier

_T = TypeVar("_T")


@dataclass(frozen=True)
class Stepped:
    """What a step came to: its ``output`` (the state machine's) and the ``decision`` it
    recorded on the run (``None``: a hash or copy step)."""

    output: dict[str, Any]
    decision: Decision | None = None


class FanoutSteps:
    """Runs an execution's steps with the promoter's own parts (verifier, releaser, publisher,
    records, leases), so both paths share one release of a file, one publication and one
    record's transitions. ``queue`` sends a failed execution's manifest event back (``None``:
    nothing is re-queued)."""

    def __init__(
        self,
        *,
        settings: PromoterSettings,
        store: JobStore,
        queue: MessageSender | None,
        verifier: SetVerifier,
        releaser: Releaser,
        publisher: Publisher,
        verdicts: VerdictWriter | None,
        records: RecordStore,
        leases: IndexLeases,
    ) -> None:
        self.settings = settings
        self.store = store
        self.queue = queue
        self.verifier = verifier
        self.releaser = releaser
        self.publisher = publisher
        self.verdicts = verdicts
        self.records = records
        self.leases = leases

    def step(self, event: Mapping[str, Any], *, at: datetime) -> Stepped:
        """Run the step an execution's event names (``hash``, ``copy``, ``publish`` or
        ``conclude``); ``at`` is the time of the decision a publish or conclude step records.

        Raises :class:`StepError` for an event that is not a step of the contract,
        :class:`~wheelgate.core.errors.PromotionRejected` for a permanent refusal (written to
        the job first), anything else for a failure worth retrying.
        """
        name = event.get(FANOUT_STEP_FIELD)
        job_id = event.get("job_id")
        if not isinstance(job_id, str) or not job_id:
            raise StepError(f"fan-out step {name!r}: job_id must be a non-empty string")
        if name in ("hash", "copy"):
            item = event.get("item")
            if not isinstance(item, int) or isinstance(item, bool) or item < 0:
                raise StepError(
                    f"fan-out {name} step: item must be a non-negative integer, not {item!r}"
                )
            if name == "hash":
                return Stepped(self._refusals_noted(job_id, lambda: self.hash(job_id, item)))
            return Stepped(self._refusals_noted(job_id, lambda: self.copy(job_id, item, at=at)))
        if name == "publish":
            return self._refusals_noted(job_id, lambda: self.publish(job_id, at=at))
        if name == "conclude":
            error = event.get("error")
            if not isinstance(error, Mapping):
                raise StepError("fan-out conclude step: error must be an object (Error, Cause)")
            return self.conclude(job_id, error, at=at)
        raise StepError(
            f"{FANOUT_STEP_FIELD} must be 'hash', 'copy', 'publish' or 'conclude', not {name!r}"
        )

    def hash(self, job_id: str, item: int) -> dict[str, Any]:
        """Read item ``item``'s staged file once and check its SHA-256 against the manifest's
        (:meth:`~wheelgate.promotion.verification.SetVerifier.check_hash`); an item S3 had a
        SHA-256 of needs no read and returns at once.

        Raises :class:`~wheelgate.core.errors.PromotionRejected` (``checksum-mismatch``) when
        the bytes differ, :class:`~wheelgate.core.errors.TransientError` when the staged file
        changed since verification.
        """
        spec = self.store.item(job_id, item)
        if not spec.hash_read:
            return {"item": item, "hash": "not-needed"}
        self.verifier.check_hash(spec.step())
        return {"item": item, "hash": "checked"}

    def copy(self, job_id: str, item: int, *, at: datetime) -> dict[str, Any]:
        """Copy item ``item`` of the job, verify it, release its core metadata (listed as
        uploaded ``at``) and write its done marker; a done item returns at once. No verdict:
        the publish step signs the promoted set's."""
        if self.store.is_done(job_id, item):
            return {"item": item, "done": "already"}
        spec = self.store.item(job_id, item)
        step = spec.step()
        metadata = None
        if step.is_wheel:
            # Read again from the version verification pinned: the bytes released beside the
            # wheel are its own METADATA, whose hash the plan recorded.
            metadata = self.verifier.wheel_metadata(step)
            if metadata.sha256 != spec.metadata_sha256:
                raise PromotionRejected(
                    Reason.METADATA_MISMATCH,
                    f"{step.file.filename}: METADATA sha256 {metadata.sha256} is not the "
                    f"verified {spec.metadata_sha256}",
                    index=step.index,
                )
        entry = self.releaser.release_file(
            step, metadata=metadata, in_nightly=spec.in_nightly, at=at
        )
        self.store.mark_done(job_id, item, entry)
        return {"item": item, "done": "copied" if step.copy else "released"}

    def publish(self, job_id: str, *, at: datetime) -> Stepped:
        """Sign the verdicts of the job's files (every copy is done: the set is promoted),
        publish them on the nightly pages, record the run PROMOTED (decided ``at``) and give
        the leases back.

        Raises :class:`~wheelgate.promotion.fanout.job.FanoutIncomplete` while an item has no
        done marker, :class:`~wheelgate.core.errors.PromotionRejected` (``nightly-conflict``)
        for a verdict key that holds a verdict about other bytes.
        """
        job = self.store.load(job_id)
        promotion = job.promotion
        existing = self.records.load(job.run_id)
        if (
            existing is not None
            and existing.state is State.PROMOTED
            and any(
                h.state is State.PROMOTED and h.manifest_sha256 == promotion.manifest_sha256
                for h in existing.history
            )
        ):
            self.leases.give_back(job.indexes, holder=job_id)
            output = {"run_id": job.run_id, "state": existing.state.value, "already": True}
            return Stepped(output, Decision(existing, at, new=False))
        entries = self.store.done_entries(job)
        if self.verdicts is not None:
            # Every verdict is written before the first page lists its file.
            entries = self.verdicts.attest_all(
                promotion, [spec.step() for spec in job.items], entries, at=at, fanout=True
            )
        writes = self.publisher.publish_entries(
            [
                (spec.index, spec.file.distribution.project, entry)
                for spec, entry in zip(job.items, entries, strict=True)
            ],
            at=at,
        )
        invalidations = self.publisher.invalidate(writes)
        promoted = PromotionRecord.of(existing, job.run_id).promoted(
            promotion, writes, invalidations, at=at
        )
        record = self.records.save(promoted)
        self.leases.give_back(job.indexes, holder=job_id)
        output = {"run_id": job.run_id, "state": record.state.value, "pages": len(record.pages)}
        return Stepped(output, self._decision(job, record, at))

    def conclude(self, job_id: str, error: Mapping[str, Any], *, at: datetime) -> Stepped:
        """Conclude a failed execution of the job: REJECTED (decided ``at``) for a step's
        permanent refusal, else a pending failure and the manifest's event sent back (to the
        dead-letter queue after ``FANOUT_MAX_EXECUTIONS`` executions). Gives the leases
        back."""
        job = self.store.load(job_id)
        existing = self.records.load(job.run_id)
        # A step that raised PromotionRejected noted why; without the note (it could not be
        # written) the failure is treated as transient: the next attempt verifies again.
        rejection = self.store.refusal(job_id)
        if rejection is not None:
            return self._rejected(job, rejection, existing, at)
        return self._failed(job, error, existing, at)

    def _decision(self, job: FanoutJob, record: PromotionRecord, at: datetime) -> Decision:
        """The decision ``record`` holds, with the manifest decided on (``None`` for an
        import, which states none, or when it is gone or not the bytes the job promotes)."""
        manifest: Manifest | None = None
        found = None
        if not job.run_id.startswith(IMPORT_RUN_PREFIX):
            found = self.store.staging.get(STAGING.manifest(job.run_id))
        if found is not None and (
            hashlib.sha256(found[0]).hexdigest() == job.promotion.manifest_sha256
        ):
            try:
                manifest = parse_manifest(found[0], expected_run_id=job.run_id)
            except PromotionRejected:
                manifest = None
        return Decision(record, at, manifest=manifest, written_at=job.event_time)

    def _rejected(
        self,
        job: FanoutJob,
        rejection: Rejection,
        existing: PromotionRecord | None,
        at: datetime,
    ) -> Stepped:
        decision = None
        if existing is None or existing.state is State.PENDING:
            # Copy steps that finished before the refusal left their files in nightly.
            left, refusal = account_for_copies(
                verifier=self.verifier,
                staging=self.store.staging,
                run_id=job.run_id,
                rejection=PromotionRejected(
                    rejection.reason, rejection.message, index=rejection.index
                ),
                sets=[
                    (index, [i.file.filename for i in job.items if i.index == index])
                    for index in job.indexes
                ],
                at=upload_time(at),
            )
            rejected = PromotionRecord.of(existing, job.run_id).rejected(
                refusal,
                at=at,
                manifest_sha256=job.promotion.manifest_sha256,
                actor=job.promotion.actor,
                commit=job.promotion.commit,
                sets=[
                    s.model_copy(update={"staged": staged_of(job.promotion, s.index)})
                    for s in rejected_outcomes(job.indexes, refusal, left)
                ],
            )
            decision = self._decision(job, self.records.save(rejected), at)
        elif existing is not None:
            decision = Decision(existing, at, new=False)
        self.store.mark_concluded(job.job_id)
        self.leases.give_back(job.indexes, holder=job.job_id)
        output = {
            "run_id": job.run_id,
            "state": State.REJECTED.value,
            "reason": rejection.reason.value,
        }
        return Stepped(output, decision)

    def _failed(
        self,
        job: FanoutJob,
        error: Mapping[str, Any],
        existing: PromotionRecord | None,
        at: datetime,
    ) -> Stepped:
        last = job.attempt >= FANOUT_MAX_EXECUTIONS
        queue_url = (
            self.settings.dead_letter_queue_url if last else self.settings.manifest_queue_url
        )
        if job.message_body is None or queue_url is None or self.queue is None:
            then = "nothing to send the manifest's event back with; write the manifest again"
        elif last:
            then = (
                f"its event went to the dead-letter queue after {job.attempt} failed execution(s)"
            )
        else:
            then = f"its event was sent back to the queue for attempt {job.attempt + 1}"
        failure = f"execution {job.job_id} failed: {error.get('Error')}: {error.get('Cause')}"
        noted = existing is not None and any(failure in h.message for h in existing.history)
        record = existing
        if (existing is None or existing.state is State.PENDING) and not noted:
            failed = PromotionRecord.of(existing, job.run_id).failed(
                at=at, failure=failure, then=then
            )
            record = self.records.save(failed)
        # Concluded before the event goes back: its next delivery must start a new attempt.
        self.store.mark_concluded(job.job_id)
        self.leases.give_back(job.indexes, holder=job.job_id)
        if job.message_body is not None and queue_url is not None and self.queue is not None:
            self.queue.send(queue_url, job.message_body)
        output = {
            "run_id": job.run_id,
            "state": State.PENDING.value,
            "requeued": not last,
            "queue": queue_url,
        }
        return Stepped(output, None if record is None else Decision(record, at, new=False))

    def _refusals_noted(self, job_id: str, run: Callable[[], _T]) -> _T:
        try:
            return run()
        except PromotionRejected as rejection:
            self.store.note_refusal(job_id, rejection)
            raise
