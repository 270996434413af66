"""Fan-out promotion: a set too large for one invocation, copied by a state machine.

The promoter checks a run exactly as for a small set (acceptance, verification, under the
index-directory leases). When the copies reach a threshold (:meth:`FanoutJobs.wanted`), it
writes a job instead of copying: the verified plan and everything the record needs
(``records/_jobs/<job_id>/plan.json``), one Map item per planned file (``items.json``) and the
items whose staged bytes S3 has no SHA-256 of (``hash_items.json``, maybe empty); hands its
leases over to the job; records the run PENDING, naming the execution; and starts the
execution. The same promoter function then runs the execution's steps (:meth:`FanoutJobs.step`):

- ``hash`` one item: read its staged file once (the version verification pinned) and check its
  SHA-256 against the manifest's (verification planned it on the manifest's provisionally).
  Every ``hash`` step ends before the first ``copy`` starts: the promise "every check before
  the first copy" holds for a fan-out promotion too, and the promoter's own invocation reads no
  file in full.
- ``copy`` one item: copy the file, verify the copy, release its core metadata, sign and write
  its verdict (:mod:`~wheelgate.promotion.verdicts`), and write the item's done marker (its
  page entry). A done item returns at once.
- ``publish``: with every item done, publish the nightly pages, invalidate them, record the run
  PROMOTED (the record a single invocation writes) and give the leases back.
- ``conclude`` a failed execution: a permanent refusal records the run REJECTED; anything else
  records a pending failure and sends the manifest's event back to the queue (a new execution,
  after a new verification), or after ``FANOUT_MAX_EXECUTIONS`` to the dead-letter queue. The
  leases are given back either way.

A step that refuses permanently raises :class:`~wheelgate.core.errors.PromotionRejected` (the
state machine does not retry it) after writing the refusal to the job: a failed Distributed Map
reports its own error name, not its item's, so the concluding step reads the reason there.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from wheelgate.core.errors import PromotionRejected, Reason, TransientError
from wheelgate.core.fanout_steps import FANOUT_STEP_FIELD
from wheelgate.core.layout import STAGING
from wheelgate.core.limits import FANOUT_LEASE_SECONDS, FANOUT_MAX_EXECUTIONS
from wheelgate.core.manifest import ManifestFile
from wheelgate.core.planning import FileStep, Provenance, SetPlan
from wheelgate.core.records import HistoryEntry, PromotionRecord, State
from wheelgate.core.settings import PromoterSettings
from wheelgate.index.pages import IndexEntry, upload_time
from wheelgate.promotion.lease import IndexLeases
from wheelgate.promotion.leftovers import account_for_copies, rejected_outcomes
from wheelgate.promotion.observer import DecisionObserver, decision_stats
from wheelgate.promotion.publish import Publisher
from wheelgate.promotion.recorder import (
    Promotion,
    RecordStore,
    build_record,
    failure_record,
    promoted_record,
    rejected_record,
)
from wheelgate.promotion.release import Releaser
from wheelgate.promotion.verdicts import VerdictWriter
from wheelgate.promotion.verify import SetVerifier, VerifiedSet
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.errors import PreconditionFailed

_JSON = "application/json"
#: Step Functions execution names: at most 80 characters of these.
_EXECUTION_NAME_MAX = 80
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
#: A done marker holds the item's page entry.
_ENTRY = TypeAdapter(IndexEntry)


class Launcher(Protocol):
    """Starts a fan-out execution (:class:`~wheelgate.storage.workflow.StepFunctionsLauncher`)."""

    def start(
        self, *, job_id: str, bucket: str, items_key: str, hash_items_key: str, hash_items: int
    ) -> str:
        """Start the execution named ``job_id`` (starting it again is a no-op) over the items
        at ``items_key`` (copied) and the ``hash_items`` items at ``hash_items_key`` (hashed
        first, skipped when there are none); return its id.
        Raises :class:`~wheelgate.core.errors.TransientError` when it cannot start."""
        ...


class MessageSender(Protocol):
    """Sends a message body to a queue."""

    def send(self, queue_url: str, body: str) -> None: ...


class FanoutIncomplete(TransientError):
    """Publish was asked for while some items have no done marker."""


class StepError(ValueError):
    """A step event that is not one of the contract's (names the wrong field)."""


def fanout_job_id(run_id: str, manifest_sha256: str, attempt: int) -> str:
    """The job (and execution name) of ``attempt`` (1, 2, ...) at promoting ``run_id`` from the
    manifest with SHA-256 ``manifest_sha256``: the same every time for the same three, unique
    across them, at most 80 characters of ``[A-Za-z0-9_-]`` (a run id may hold ``.``)."""
    tag = hashlib.sha256(f"{run_id}\n{manifest_sha256}".encode()).hexdigest()[:16]
    suffix = f"-{tag}-{attempt}"
    readable = _UNSAFE.sub("-", run_id)[: _EXECUTION_NAME_MAX - len(suffix)].strip("-_")
    return (readable or "run") + suffix


def fanout_wanted(plans: Sequence[SetPlan], *, min_files: int, min_bytes: int) -> bool:
    """Whether the copies of ``plans`` reach either threshold: ``min_files`` files to copy, or
    ``min_bytes`` bytes. Plans with nothing to copy never need an execution."""
    copies = [step for plan in plans for step in plan.copies]
    if not copies:
        return False
    return len(copies) >= min_files or sum(s.file.size for s in copies) >= min_bytes


class JobItem(BaseModel):
    """One planned file of a job: a Map item."""

    model_config = ConfigDict(frozen=True)

    index: str
    file: ManifestFile
    source_key: str
    source_etag: str
    target_key: str
    copies: bool
    #: Verification found the target key in nightly (checked, never written).
    in_nightly: bool
    #: SHA-256 of the wheel's METADATA that verification read (``None``: an sdist).
    metadata_sha256: str | None = None
    #: S3 has no SHA-256 of the staged bytes: a ``hash`` step reads them before any copy.
    hash_read: bool = False
    #: Where an imported file came from (``None``: a run's staged file).
    provenance: Provenance | None = None
    #: The staged file is gone; its bytes are an earlier attempt's nightly copy (``source_key``).
    from_nightly: bool = False

    def step(self) -> FileStep:
        return FileStep(
            index=self.index,
            file=self.file,
            source_key=self.source_key,
            source_etag=self.source_etag,
            target_key=self.target_key,
            copy=self.copies,
            provenance=self.provenance,
            from_nightly=self.from_nightly,
        )


class FanoutJob(BaseModel):
    """``records/_jobs/<job_id>/plan.json``: a verified promotion handed to an execution."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    schema_: Literal["wheelgate/fanout-job/v1"] = Field(
        default="wheelgate/fanout-job/v1", alias="schema"
    )
    job_id: str
    attempt: int
    #: When the job was written (an upload-time string) and the epoch second its leases and
    #: execution cannot outlive.
    created_at: str
    expires: float
    promotion: Promotion
    #: Index directories whose leases the job holds.
    indexes: list[str]
    items: list[JobItem]
    #: The SQS message body that carried the manifest's event, sent back after a failure.
    message_body: str | None = None
    #: When S3 says the manifest was written (the promotion latency metric starts there).
    event_time: datetime | None = None

    @property
    def run_id(self) -> str:
        return self.promotion.run_id

    def pending_message(self) -> str:
        copies = sum(1 for i in self.items if i.copies)
        return (
            f"copying {copies} of {len(self.items)} file(s) through execution {self.job_id} "
            f"(attempt {self.attempt})"
        )


class Rejection(BaseModel):
    """``records/_jobs/<job_id>/rejection.json``: the permanent refusal of a step."""

    reason: Reason
    message: str
    index: str | None = None


class FanoutJobs:
    """Writes fan-out jobs, starts their executions and runs their steps.

    Takes the promoter's own parts (verifier, releaser, publisher, records, leases), so both
    paths share one release of a file, one publication and one record builder. ``queue`` sends
    a failed execution's manifest event back (``None``: nothing is re-queued). ``observer``
    hears of the decision a publish or conclude step records, once, as the promoter's does.
    """

    def __init__(
        self,
        *,
        settings: PromoterSettings,
        staging: Bucket,
        launcher: Launcher,
        queue: MessageSender | None,
        verifier: SetVerifier,
        releaser: Releaser,
        publisher: Publisher,
        verdicts: VerdictWriter | None = None,
        records: RecordStore,
        leases: IndexLeases,
        observer: DecisionObserver,
        clock: Callable[[], datetime],
        workers: int,
    ) -> None:
        self.settings = settings
        self.observer = observer
        self.staging = staging
        self.launcher = launcher
        self.queue = queue
        self.verifier = verifier
        self.releaser = releaser
        self.verdicts = verdicts
        self.publisher = publisher
        self.records = records
        self.leases = leases
        self.clock = clock
        self.workers = workers
        # Every item of a job reads its plan; a warm container reads it once.
        self._cached: FanoutJob | None = None
        self._lock = threading.Lock()

    # --- the promoter's side -------------------------------------------------------------

    def wanted(self, plans: Sequence[SetPlan]) -> bool:
        """Whether ``plans`` go through an execution, by the settings' thresholds."""
        return fanout_wanted(
            plans,
            min_files=self.settings.fanout_min_files,
            min_bytes=self.settings.fanout_min_bytes,
        )

    def running(self, run_id: str, manifest_sha256: str) -> FanoutJob | None:
        """The job of this manifest whose execution has not ended, if any (an ended one was
        concluded, or has outlived its leases and its execution's timeout)."""
        job = self._latest(run_id, manifest_sha256)
        if job is None or self._ended(job):
            return None
        return job

    def prepare(
        self,
        promotion: Promotion,
        verified: Sequence[VerifiedSet],
        *,
        body: str | None,
        event_time: datetime | None,
    ) -> FanoutJob:
        """Write the job of a verified promotion (the next attempt of this manifest): its items,
        then its plan, conditionally, so two writers of one job converge on the first."""
        latest = self._latest(promotion.run_id, promotion.manifest_sha256)
        attempt = 1 if latest is None else latest.attempt + 1
        job_id = fanout_job_id(promotion.run_id, promotion.manifest_sha256, attempt)
        unhashed = {(s.index, s.file.filename) for v in verified for s in v.unhashed}
        items = [
            JobItem(
                index=step.index,
                file=step.file,
                source_key=step.source_key,
                source_etag=step.source_etag,
                target_key=step.target_key,
                copies=step.copy,
                in_nightly=step.target_key in v.nightly_keys,
                metadata_sha256=v.metadata[step.file.filename].sha256 if step.is_wheel else None,
                hash_read=(step.index, step.file.filename) in unhashed,
                provenance=step.provenance,
                from_nightly=step.from_nightly,
            )
            for v in verified
            for step in v.plan.steps
        ]
        now = self.clock()
        job = FanoutJob(
            job_id=job_id,
            attempt=attempt,
            created_at=upload_time(now),
            expires=now.timestamp() + FANOUT_LEASE_SECONDS,
            promotion=promotion,
            indexes=sorted({v.plan.index for v in verified}),
            items=items,
            message_body=body,
            event_time=event_time,
        )
        self.staging.put(
            STAGING.job_items(job_id),
            json.dumps([{"item": n} for n in range(len(items))]).encode(),
            content_type=_JSON,
        )
        self.staging.put(
            STAGING.job_hash_items(job_id),
            json.dumps([{"item": n} for n, i in enumerate(items) if i.hash_read]).encode(),
            content_type=_JSON,
        )
        try:
            self.staging.put(
                STAGING.job_plan(job_id),
                job.model_dump_json(by_alias=True).encode(),
                content_type=_JSON,
                if_none_match=True,
            )
        except PreconditionFailed:
            return self.load(job_id)
        return job

    def launch(self, job: FanoutJob, existing: PromotionRecord | None) -> PromotionRecord:
        """Make sure ``job`` holds its leases, its PENDING entry is recorded and its execution
        is started (each is a no-op when done already); return the run's record.

        The entry is recorded before the start: the execution may end (and record its
        decision) before this returns. Raises :class:`~wheelgate.promotion.lease.LeaseBusy`
        when another promotion took a lease the job lost.
        """
        self.leases.take(job.indexes, holder=job.job_id, run_id=job.run_id, until=job.expires)
        message = job.pending_message()
        record = existing
        if record is None or all(h.message != message for h in record.history):
            entry = HistoryEntry(
                at=upload_time(self.clock()),
                state=State.PENDING,
                message=message,
                manifest_sha256=job.promotion.manifest_sha256,
                actor=job.promotion.actor,
            )
            record = self.records.save(
                build_record(existing, entry, run_id=job.run_id, commit=job.promotion.commit)
            )
        self.launcher.start(
            job_id=job.job_id,
            bucket=self.staging.name,
            items_key=STAGING.job_items(job.job_id),
            hash_items_key=STAGING.job_hash_items(job.job_id),
            hash_items=sum(1 for item in job.items if item.hash_read),
        )
        return record

    # --- the execution's steps -----------------------------------------------------------

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
        (:meth:`~wheelgate.promotion.verify.SetVerifier.check_hash`); an item S3 had a SHA-256
        of needs no read and returns at once.

        Raises :class:`~wheelgate.core.errors.PromotionRejected` (``checksum-mismatch``) when
        the bytes differ, :class:`~wheelgate.core.errors.TransientError` when the staged file
        changed since verification.
        """
        spec = self._item(job_id, item)
        if not spec.hash_read:
            return {"item": item, "hash": "not-needed"}
        self.verifier.check_hash(spec.step())
        return {"item": item, "hash": "checked"}

    def copy(self, job_id: str, item: int) -> dict[str, Any]:
        """Copy item ``item`` of the job, verify it, release its core metadata, write its
        verdict and its done marker; a done item returns at once."""
        done_key = STAGING.job_done(job_id, item)
        if self.staging.head(done_key) is not None:
            return {"item": item, "done": "already"}
        spec = self._item(job_id, item)
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
        if self.verdicts is not None:
            # Before the done marker: publish lists only items whose verdict is written.
            entry = self.verdicts.attest(self.load(job_id).promotion, step, entry)
        # A twin delivery of this item may have finished first: its entry stands.
        with suppress(PreconditionFailed):
            self.staging.put(
                done_key, _ENTRY.dump_json(entry), content_type=_JSON, if_none_match=True
            )
        return {"item": item, "done": "copied" if step.copy else "released"}

    def publish(self, job_id: str) -> dict[str, Any]:
        """Publish the job's files on the nightly pages, record the run PROMOTED and give the
        leases back. Raises :class:`FanoutIncomplete` while an item has no done marker."""
        job = self.load(job_id)
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
        entries = self._done_entries(job)
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
        job = self.load(job_id)
        promotion = job.promotion
        existing = self.records.load(job.run_id)
        at = upload_time(self.clock())
        # A step that raised PromotionRejected noted why; without the note (it could not be
        # written) the failure is treated as transient: the next attempt verifies again.
        found = self.staging.get(STAGING.job_rejection(job_id))
        if found is not None:
            rejection = Rejection.model_validate_json(found[0])
            if existing is None or existing.state is State.PENDING:
                # Copy steps that finished before the refusal left their files in nightly.
                left, refusal = account_for_copies(
                    verifier=self.verifier,
                    staging=self.staging,
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
                        manifest_sha256=promotion.manifest_sha256,
                        actor=promotion.actor,
                        sets=rejected_outcomes(job.indexes, refusal, left),
                    )
                )
                self.observer.decided(
                    rejected, decision_stats(rejected, manifest_written_at=job.event_time)
                )
            self._mark_concluded(job_id)
            self.leases.give_back(job.indexes, holder=job_id)
            return {
                "run_id": job.run_id,
                "state": State.REJECTED.value,
                "reason": rejection.reason.value,
            }
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
        failure = f"execution {job_id} failed: {error.get('Error')}: {error.get('Cause')}"
        noted = existing is not None and any(failure in h.message for h in existing.history)
        if (existing is None or existing.state is State.PENDING) and not noted:
            self.records.save(
                failure_record(existing, run_id=job.run_id, at=at, failure=failure, then=then)
            )
        # Concluded before the event goes back: its next delivery must start a new attempt.
        self._mark_concluded(job_id)
        self.leases.give_back(job.indexes, holder=job_id)
        if job.message_body is not None and queue_url is not None and self.queue is not None:
            self.queue.send(queue_url, job.message_body)
        return {
            "run_id": job.run_id,
            "state": State.PENDING.value,
            "requeued": not last,
            "queue": queue_url,
        }

    # --- the job's objects ---------------------------------------------------------------

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

    def _latest(self, run_id: str, manifest_sha256: str) -> FanoutJob | None:
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

    def _item(self, job_id: str, item: int) -> JobItem:
        job = self.load(job_id)
        if item >= len(job.items):
            raise StepError(f"job {job_id} has {len(job.items)} items, not item {item}")
        return job.items[item]

    def _ended(self, job: FanoutJob) -> bool:
        if job.expires <= self.clock().timestamp():
            return True
        return self.staging.head(STAGING.job_concluded(job.job_id)) is not None

    def _mark_concluded(self, job_id: str) -> None:
        self.staging.put(
            STAGING.job_concluded(job_id),
            json.dumps({"at": upload_time(self.clock())}).encode(),
            content_type=_JSON,
        )

    def _done_entries(self, job: FanoutJob) -> list[IndexEntry]:
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

        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(read, range(len(job.items))))

    def _refusals_noted(self, job_id: str, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        try:
            return run()
        except PromotionRejected as rejection:
            note = Rejection(
                reason=rejection.reason, message=rejection.message, index=rejection.index
            )
            # Another item's refusal may have been noted first: one reason is enough.
            with suppress(PreconditionFailed):
                self.staging.put(
                    STAGING.job_rejection(job_id),
                    note.model_dump_json().encode(),
                    content_type=_JSON,
                    if_none_match=True,
                )
            raise
