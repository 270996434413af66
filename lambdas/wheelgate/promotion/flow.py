"""The promotion flow: a manifest's accepted sets verified, copied, listed and recorded.

Its steps take an order that is the product's promise: every set is verified
(:mod:`~wheelgate.promotion.verification`, including the hash read of each file S3 has no
SHA-256 of) before the first copy; every copy is verified (:mod:`~wheelgate.promotion.release`)
and every released file's signed verdict written (:mod:`~wheelgate.promotion.verdicts`) before
any index page changes (:mod:`~wheelgate.promotion.publish`); the record is written last
(:mod:`~wheelgate.promotion.recorder`). Each step is idempotent (a released file with the same
bytes is skipped, a page that already lists a file is left alone), so a redelivered or retried
message converges on the same final state. Past the fan-out thresholds, the copies are a
fan-out execution's (:mod:`~wheelgate.promotion.fanout`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from wheelgate.core.acceptance import AcceptanceDecision, AcceptancePolicy, decide
from wheelgate.core.errors import PromotionRejected
from wheelgate.core.limits import FANOUT_LEASE_SECONDS
from wheelgate.core.manifest import Manifest
from wheelgate.core.records import (
    Promotion,
    PromotionRecord,
    SetOutcome,
    State,
    recorded_tests,
    staged_files,
)
from wheelgate.core.timestamps import upload_time
from wheelgate.index.store import PageWrites
from wheelgate.promotion.decisions import Decision, Imported, Override, Promote, Tested
from wheelgate.promotion.event import ManifestEvent
from wheelgate.promotion.fanout.jobs import FanoutJobs
from wheelgate.promotion.lease import HeldLeases, IndexLeases
from wheelgate.promotion.leftovers import account_for_copies, rejected_outcomes
from wheelgate.promotion.publish import Publisher
from wheelgate.promotion.recorder import RecordStore, settle_promotion
from wheelgate.promotion.redelivery import Redelivery
from wheelgate.promotion.release import Releaser
from wheelgate.promotion.verdicts import VerdictWriter
from wheelgate.promotion.verification import SetVerifier, VerifiedSet
from wheelgate.storage.bucket import Bucket


class PromotionFlow:
    """Promotes a manifest's accepted sets, and records rejections.

    ``fanout`` (``None``: every run is promoted in one invocation) takes the copies of a
    promotion past the thresholds; ``verdicts`` (``None``: no verdicts) signs each released
    file's verdict.
    """

    def __init__(
        self,
        *,
        policy: AcceptancePolicy,
        staging: Bucket,
        verifier: SetVerifier,
        releaser: Releaser,
        verdicts: VerdictWriter | None,
        publisher: Publisher,
        records: RecordStore,
        leases: IndexLeases,
        fanout: FanoutJobs | None,
        redelivery: Redelivery,
    ) -> None:
        self.policy = policy
        self.staging = staging
        self.verifier = verifier
        self.releaser = releaser
        self.verdicts = verdicts
        self.publisher = publisher
        self.records = records
        self.leases = leases
        self.fanout = fanout
        self.redelivery = redelivery

    def reject(
        self,
        run_id: str,
        rejection: PromotionRejected,
        digest: str,
        actor: str | None,
        existing: PromotionRecord | None,
        sets: Sequence[SetOutcome] = (),
        commit: str | None = None,
        *,
        at: datetime,
    ) -> PromotionRecord:
        """Record the rejection of ``run_id`` (its bytes' SHA-256 ``digest``, by ``actor``,
        decided ``at``; ``commit``: the one its manifest states, ``None`` when unreadable)."""
        return self.records.save(
            PromotionRecord.of(existing, run_id).rejected(
                rejection, at=at, manifest_sha256=digest, actor=actor, commit=commit, sets=sets
            )
        )

    def promote(
        self, decision: Promote, *, actor: str | None, event: ManifestEvent, at: datetime
    ) -> Decision:
        """Promote what ``decision`` names, written by ``actor`` and delivered by ``event``,
        decided ``at``; return the :class:`~.decisions.Decision` on the run: promoted,
        rejected, or pending while a fan-out execution copies, with the manifest and what
        verification read."""
        manifest, digest, existing = decision.manifest, decision.digest, decision.existing
        resumed = self.redelivery.resume(manifest.run_id, digest, existing, at=at)
        if resumed is not None:
            return Decision(resumed, at, manifest=manifest)
        acceptance = self._accept(manifest, decision)
        rejected_sets = [
            SetOutcome(
                index=s.index,
                state=State.REJECTED,
                reason=err.reason.value,
                message=err.message,
                tests=recorded_tests(s.tests),
                staged=staged_files(s.files),
            )
            for s, err in acceptance.rejected
        ]
        if not acceptance.accepted:
            first = acceptance.rejected[0][1]
            rejected = self.reject(
                manifest.run_id,
                first,
                digest,
                actor,
                existing,
                rejected_sets,
                manifest.commit,
                at=at,
            )
            return Decision(rejected, at, manifest=manifest)

        def refused(rejection: PromotionRejected) -> Decision:
            record = self._reject_accepted(
                manifest, rejection, acceptance, rejected_sets, digest, actor, existing, at
            )
            return Decision(record, at, manifest=manifest)

        # One promotion per index directory at a time, from the first check to the last
        # page write (see lease.py); verify every accepted set before copying anything.
        with self.leases.hold(
            [s.index for s in acceptance.accepted], run_id=manifest.run_id
        ) as held:
            try:
                verified, fanout = self._verify(manifest, acceptance, decision)
            except PromotionRejected as rejection:
                return refused(rejection)
            promotion = self._settle(decision, verified, acceptance, rejected_sets, actor)
            held_now = Decision(
                PromotionRecord.of(existing, manifest.run_id),
                at,
                manifest=manifest,
                plans=tuple(v.plan for v in verified),
                pages={
                    (v.plan.index, p): page for v in verified for p, (page, _) in v.pages.items()
                },
            )
            if fanout is not None:
                pending = self._hand_over(fanout, promotion, verified, held, existing, event, at)
                return replace(held_now, record=pending)
            try:
                pages_nightly = self._release(promotion, verified, at)
            except PromotionRejected as rejection:
                return refused(rejection)
        invalidations = self.publisher.invalidate(pages_nightly)
        promoted = PromotionRecord.of(existing, manifest.run_id).promoted(
            promotion, pages_nightly, invalidations, at=at
        )
        return replace(held_now, record=self.records.save(promoted))

    def _settle(
        self,
        decision: Promote,
        verified: Sequence[VerifiedSet],
        acceptance: AcceptanceDecision,
        rejected_sets: Sequence[SetOutcome],
        actor: str | None,
    ) -> Promotion:
        """What the record of the promoted ``verified`` sets will say."""
        manifest, mode = decision.manifest, decision.mode
        return settle_promotion(
            run_id=manifest.run_id,
            commit=manifest.commit,
            plans=[v.plan for v in verified],
            accepted={s.index: s for s in acceptance.accepted},
            rejected_sets=rejected_sets,
            manifest_sha256=decision.digest,
            actor=actor,
            override=mode.as_record() if isinstance(mode, Override) else None,
            imported=mode.gathered.outcome if isinstance(mode, Imported) else None,
            signed=self.verdicts is not None,
        )

    def _accept(self, manifest: Manifest, decision: Promote) -> AcceptanceDecision:
        if isinstance(decision.mode, Tested):
            return decide(manifest, self.policy)
        # Break-glass, or an import (no tests): the tests do not decide; every integrity
        # check still does.
        return AcceptanceDecision(accepted=tuple(manifest.sets), rejected=())

    def _verify(
        self, manifest: Manifest, acceptance: AcceptanceDecision, decision: Promote
    ) -> tuple[list[VerifiedSet], FanoutJobs | None]:
        """Every accepted set verified, and the fan-out its copies go through (``None``: this
        invocation copies them, after hashing the files S3 has no SHA-256 of)."""
        mode = decision.mode
        verified = [
            mode.gathered.verified(self.verifier, manifest, s)
            if isinstance(mode, Imported)
            else self.verifier.verify(manifest, s)
            for s in acceptance.accepted
        ]
        fanout = self.fanout
        if fanout is not None and not fanout.wanted([v.plan for v in verified]):
            fanout = None
        if fanout is None:
            # The files S3 has no SHA-256 of are hashed here, still before the first copy; a
            # fan-out execution hashes them in steps of their own instead, so that this
            # invocation's time does not grow with their bytes.
            self.verifier.check_hashes([s for v in verified for s in v.unhashed])
        return verified, fanout

    def _hand_over(
        self,
        fanout: FanoutJobs,
        promotion: Promotion,
        verified: Sequence[VerifiedSet],
        held: HeldLeases,
        existing: PromotionRecord | None,
        event: ManifestEvent,
        at: datetime,
    ) -> PromotionRecord:
        job = fanout.prepare(promotion, verified, body=event.body, event_time=event.event_time)
        # The job keeps the leases until its publish or conclude step.
        held.hand_over(job.job_id, FANOUT_LEASE_SECONDS)
        return fanout.launch(job, existing, at=at)

    def _release(
        self, promotion: Promotion, verified: Sequence[VerifiedSet], at: datetime
    ) -> PageWrites:
        entries = self.releaser.release(verified, at=at)
        if self.verdicts is not None:
            # Every verdict is written before the first page lists its file.
            steps = [step for v in verified for step in v.plan.steps]
            nightly_keys = {key for v in verified for key in v.nightly_keys}
            entries = self.verdicts.attest_all(
                promotion, steps, entries, at=at, nightly_keys=nightly_keys
            )
        return self.publisher.publish(verified, entries, at=at)

    def _reject_accepted(
        self,
        manifest: Manifest,
        rejection: PromotionRejected,
        acceptance: AcceptanceDecision,
        rejected_sets: list[SetOutcome],
        digest: str,
        actor: str | None,
        existing: PromotionRecord | None,
        at: datetime,
    ) -> PromotionRecord:
        """Record the rejection of accepted sets found under the leases, with the copies
        earlier attempts left in nightly (:mod:`~wheelgate.promotion.leftovers`)."""
        left, rejection = account_for_copies(
            verifier=self.verifier,
            staging=self.staging,
            run_id=manifest.run_id,
            rejection=rejection,
            sets=[(s.index, [f.filename for f in s.files]) for s in acceptance.accepted],
            at=upload_time(at),
        )
        sets = rejected_outcomes([s.index for s in acceptance.accepted], rejection, left)
        staged = {s.index: staged_files(s.files) for s in acceptance.accepted}
        sets = [s.model_copy(update={"staged": staged[s.index]}) for s in sets]
        return self.reject(
            manifest.run_id,
            rejection,
            digest,
            actor,
            existing,
            sets + rejected_sets,
            manifest.commit,
            at=at,
        )
