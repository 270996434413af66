"""The fan-out execution's steps, each one invocation of the promoter function: ``hash`` and
``copy`` one item, ``publish`` the job, ``conclude`` a failed execution."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.fanout_steps import FANOUT_STEP_FIELD
from wheelgate.core.limits import FANOUT_MAX_EXECUTIONS
from wheelgate.core.records import PromotionRecord, State
from wheelgate.core.settings import PromoterSettings
from wheelgate.index.pages import upload_time
from wheelgate.promotion.fanout.job import FanoutJob, Rejection, StepError
from wheelgate.promotion.fanout.ports import MessageSender
from wheelgate.promotion.fanout.store import JobStore
from wheelgate.promotion.lease import IndexLeases
from wheelgate.promotion.leftovers import account_for_copies, rejected_outcomes
from wheelgate.promotion.observer import DecisionObserver, decision_stats
from wheelgate.promotion.publish import Publisher
from wheelgate.promotion.recorder import (
    RecordStore,
    failure_record,
    promoted_record,
    rejected_record,
    staged_of,
)
from wheelgate.promotion.release import Releaser
from wheelgate.promotion.verdicts import VerdictWriter
from wheelgate.promotion.verification import SetVerifier


class FanoutSteps:
    """Runs an execution's steps with the promoter's own parts (verifier, releaser, publisher,
    records, leases), so both paths share one release of a file, one publication and one
    record builder. ``queue`` sends a failed execution's manifest event back (``None``:
    nothing is re-queued). ``observer`` hears of the decision a publish or conclude step
    records, once, as the promoter's does."""

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
        observer: DecisionObserver,
        clock: Callable[[], datetime],
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
        self.observer = observer
        self.clock = clock

    def step(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """Run the step an execution's event names (``hash``, ``copy``, ``publish`` or
        ``conclude``).

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
            run = self.hash if name == "hash" else self.copy
            return self._refusals_noted(job_id, lambda: run(job_id, item))
        if name == "publish":
            return self._refusals_noted(job_id, lambda: self.publish(job_id))
        if name == "conclude":
            error = event.get("error")
            if not isinstance(error, Mapping):
                raise StepError("fan-out conclude step: error must be an object (Error, Cause)")
            return self.conclude(job_id, error)
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

    def copy(self, job_id: str, item: int) -> dict[str, Any]:
        """Copy item ``item`` of the job, verify it, release its core metadata and write its
        done marker; a done item returns at once. No verdict: the publish step signs the
        promoted set's."""
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
        entry = self.releaser.release_file(step, metadata=metadata, in_nightly=spec.in_nightly)
        self.store.mark_done(job_id, item, entry)
        return {"item": item, "done": "copied" if step.copy else "released"}

    def publish(self, job_id: str) -> dict[str, Any]:
        """Sign the verdicts of the job's files (every copy is done: the set is promoted),
        publish them on the nightly pages, record the run PROMOTED and give the leases back.

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
            return {"run_id": job.run_id, "state": existing.state.value, "already": True}
        entries = self.store.done_entries(job)
        if self.verdicts is not None:
            # Every verdict is written before the first page lists its file.
            entries = self.verdicts.attest_all(
                promotion, [spec.step() for spec in job.items], entries, fanout=True
            )
        writes = self.publisher.publish_entries(
            [
                (spec.index, spec.file.distribution.project, entry)
                for spec, entry in zip(job.items, entries, strict=True)
            ]
        )
        invalidations = self.publisher.invalidate(writes)
        record = self.records.save(
            promoted_record(
                existing,
                promotion,
                at=upload_time(self.clock()),
                writes=writes,
                invalidations=invalidations,
            )
        )
        self.observer.decided(record, decision_stats(record, manifest_written_at=job.event_time))
        self.leases.give_back(job.indexes, holder=job_id)
        return {"run_id": job.run_id, "state": record.state.value, "pages": len(record.pages)}

    def conclude(self, job_id: str, error: Mapping[str, Any]) -> dict[str, Any]:
        """Conclude a failed execution of the job: REJECTED for a step's permanent refusal,
        else a pending failure and the manifest's event sent back (to the dead-letter queue
        after ``FANOUT_MAX_EXECUTIONS`` executions). Gives the leases back."""
        job = self.store.load(job_id)
        existing = self.records.load(job.run_id)
        # A step that raised PromotionRejected noted why; without the note (it could not be
        # written) the failure is treated as transient: the next attempt verifies again.
        rejection = self.store.refusal(job_id)
        if rejection is not None:
            return self._rejected(job, rejection, existing)
        return self._failed(job, error, existing)

    def _rejected(
        self, job: FanoutJob, rejection: Rejection, existing: PromotionRecord | None
    ) -> dict[str, Any]:
        at = upload_time(self.clock())
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
                at=at,
            )
            rejected = self.records.save(
                rejected_record(
                    existing,
                    refusal,
                    run_id=job.run_id,
                    at=at,
                    manifest_sha256=job.promotion.manifest_sha256,
                    actor=job.promotion.actor,
                    commit=job.promotion.commit,
                    sets=[
                        s.model_copy(update={"staged": staged_of(job.promotion, s.index)})
                        for s in rejected_outcomes(job.indexes, refusal, left)
                    ],
                )
            )
            self.observer.decided(
                rejected, decision_stats(rejected, manifest_written_at=job.event_time)
            )
        self.store.mark_concluded(job.job_id)
        self.leases.give_back(job.indexes, holder=job.job_id)
        return {
            "run_id": job.run_id,
            "state": State.REJECTED.value,
            "reason": rejection.reason.value,
        }

    def _failed(
        self, job: FanoutJob, error: Mapping[str, Any], existing: PromotionRecord | None
    ) -> dict[str, Any]:
        at = upload_time(self.clock())
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
        if (existing is None or existing.state is State.PENDING) and not noted:
            self.records.save(
                failure_record(existing, run_id=job.run_id, at=at, failure=failure, then=then)
            )
        # Concluded before the event goes back: its next delivery must start a new attempt.
        self.store.mark_concluded(job.job_id)
        self.leases.give_back(job.indexes, holder=job.job_id)
        if job.message_body is not None and queue_url is not None and self.queue is not None:
            self.queue.send(queue_url, job.message_body)
        return {
            "run_id": job.run_id,
            "state": State.PENDING.value,
            "requeued": not last,
            "queue": queue_url,
        }

    def _refusals_noted(self, job_id: str, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        try:
            return run()
        except PromotionRejected as rejection:
            self.store.note_refusal(job_id, rejection)
            raise
