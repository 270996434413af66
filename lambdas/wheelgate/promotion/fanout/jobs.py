"""The promoter's side of fan-out: whether a promotion fans out, writing its job, and making
sure the job's leases, its pending entry and its execution are there."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from wheelgate.core.layout import STAGING
from wheelgate.core.limits import FANOUT_LEASE_SECONDS
from wheelgate.core.planning import SetPlan
from wheelgate.core.records import Promotion, PromotionRecord, RecordEntry, State
from wheelgate.core.settings import PromoterSettings
from wheelgate.index.pages import upload_time
from wheelgate.promotion.fanout.job import FanoutJob, JobItem, fanout_job_id, fanout_wanted
from wheelgate.promotion.fanout.ports import Launcher
from wheelgate.promotion.fanout.store import JobStore
from wheelgate.promotion.lease import IndexLeases
from wheelgate.promotion.recorder import RecordStore
from wheelgate.promotion.verification import VerifiedSet


class FanoutJobs:
    """Writes fan-out jobs and starts their executions (through ``launcher``); the
    execution's steps are :class:`~wheelgate.promotion.fanout.steps.FanoutSteps`'."""

    def __init__(
        self,
        *,
        settings: PromoterSettings,
        store: JobStore,
        launcher: Launcher,
        records: RecordStore,
        leases: IndexLeases,
        clock: Callable[[], datetime],
    ) -> None:
        self.settings = settings
        self.store = store
        self.launcher = launcher
        self.records = records
        self.leases = leases
        self.clock = clock

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
        job = self.store.latest(run_id, manifest_sha256)
        if job is None or self.store.ended(job):
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
        latest = self.store.latest(promotion.run_id, promotion.manifest_sha256)
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
        return self.store.write(job)

    def launch(
        self, job: FanoutJob, existing: PromotionRecord | None, *, at: datetime
    ) -> PromotionRecord:
        """Make sure ``job`` holds its leases, its PENDING entry is recorded (``at``, the
        decision's time) and its execution is started (each is a no-op when done already);
        return the run's record.

        The entry is recorded before the start: the execution may end (and record its
        decision) before this returns. Raises :class:`~wheelgate.promotion.lease.LeaseBusy`
        when another promotion took a lease the job lost.
        """
        self.leases.take(job.indexes, holder=job.job_id, run_id=job.run_id, until=job.expires)
        message = job.pending_message()
        record = existing
        if record is None or all(h.message != message for h in record.history):
            entry = RecordEntry(
                at=upload_time(at),
                state=State.PENDING,
                message=message,
                manifest_sha256=job.promotion.manifest_sha256,
                actor=job.promotion.actor,
            )
            record = self.records.save(
                PromotionRecord.of(existing, job.run_id).following(
                    entry, commit=job.promotion.commit
                )
            )
        self.launcher.start(
            job_id=job.job_id,
            bucket=self.store.staging.name,
            items_key=STAGING.job_items(job.job_id),
            hash_items_key=STAGING.job_hash_items(job.job_id),
            hash_items=sum(1 for item in job.items if item.hash_read),
        )
        return record
