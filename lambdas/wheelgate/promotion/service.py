"""Promotion of one manifest: the flow from a manifest event to the run's record.

:class:`PromotionService` routes a manifest to its flow: a run's promotion (here), a yank
request (:mod:`~wheelgate.promotion.yanking`), a break-glass override
(:mod:`~wheelgate.promotion.override`, which promotes its target through this flow) or an
import (:mod:`~wheelgate.promotion.importing`, which promotes what it gathered through it). A
promotion takes its steps in an order that is the product's promise: every set is verified
(:mod:`~wheelgate.promotion.verify`, including the hash read of each file S3 has no SHA-256
of) before the first copy; every copy is verified (:mod:`~wheelgate.promotion.release`) and
every released file's signed verdict written (:mod:`~wheelgate.promotion.verdicts`) before any
index page changes (:mod:`~wheelgate.promotion.publish`); the record is written last
(:mod:`~wheelgate.promotion.recorder`). Each step is idempotent (a released file with the same
bytes is skipped, a page that already lists a file is left alone), so a redelivered or retried
message converges on the same final state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from wheelgate.core.acceptance import AcceptanceDecision, AcceptancePolicy, decide
from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.layout import (
    IMPORT_RUN_PREFIX,
    OVERRIDE_RUN_PREFIX,
    STAGING,
    YANK_RUN_PREFIX,
    LayoutError,
)
from wheelgate.core.limits import FANOUT_LEASE_SECONDS
from wheelgate.core.manifest import Manifest, manifest_test_url_problems, parse_manifest
from wheelgate.core.records import (
    HistoryEntry,
    PromotionRecord,
    SetOutcome,
    State,
    recorded_tests,
)
from wheelgate.core.settings import PromoterSettings
from wheelgate.index.pages import upload_time
from wheelgate.index.store import IndexStore
from wheelgate.promotion.event import ManifestEvent, written_by
from wheelgate.promotion.fanout import FanoutJobs, Launcher, MessageSender
from wheelgate.promotion.importing import ImportedSet, ImportRoute
from wheelgate.promotion.lease import IndexLeases
from wheelgate.promotion.leftovers import account_for_copies, rejected_outcomes
from wheelgate.promotion.observer import DecisionObserver, NoObserver, decision_stats
from wheelgate.promotion.override import OverrideRoute
from wheelgate.promotion.publish import Invalidator, Publisher
from wheelgate.promotion.recorder import (
    RecordStore,
    build_record,
    failure_record,
    promoted_record,
    rejected_record,
    settle_promotion,
)
from wheelgate.promotion.release import Releaser
from wheelgate.promotion.verdicts import Signer, VerdictWriter
from wheelgate.promotion.verify import SetVerifier
from wheelgate.promotion.yanking import YankRoute
from wheelgate.storage.bucket import MULTIPART_PART_SIZE, SINGLE_REQUEST_LIMIT, Bucket
from wheelgate.storage.errors import PreconditionFailed


def _now() -> datetime:
    return datetime.now(UTC)


class PromotionService:
    """Promotes manifests from the staging bucket into the nightly bucket.

    ``invalidator`` drops the CDN's copies of changed pages (``None``: no CDN). ``workers``
    bounds the requests a step makes at once. ``single_request_limit`` and ``part_size`` are
    S3's copy limits, lowered only by tests that exercise multipart copies with small files.
    ``observer`` hears of each new promoted or rejected decision once (see
    :class:`~wheelgate.promotion.observer.DecisionObserver`).
    ``launcher`` starts fan-out executions (``None``: every run is promoted in one invocation;
    the thresholds are the settings'); ``queue`` sends a failed execution's manifest event back.
    Yank requests go to ``yanks`` (:class:`~wheelgate.promotion.yanking.YankRoute`), override
    requests to ``overrides`` (:class:`~wheelgate.promotion.override.OverrideRoute`), import
    requests to ``imports`` (:class:`~wheelgate.promotion.importing.ImportRoute`, which also
    sends an unfinished import's event back through ``queue``). ``signer`` signs each released
    file's verdict (:class:`~wheelgate.promotion.verdicts.VerdictWriter`; ``None``: no
    verdicts).
    """

    def __init__(
        self,
        *,
        settings: PromoterSettings,
        staging: Bucket,
        nightly: Bucket,
        invalidator: Invalidator | None = None,
        clock: Callable[[], datetime] = _now,
        workers: int = 16,
        single_request_limit: int = SINGLE_REQUEST_LIMIT,
        part_size: int = MULTIPART_PART_SIZE,
        observer: DecisionObserver | None = None,
        launcher: Launcher | None = None,
        queue: MessageSender | None = None,
        signer: Signer | None = None,
    ) -> None:
        self.settings = settings
        self.observer: DecisionObserver = observer or NoObserver()
        self.staging = staging
        self.clock = clock
        self.policy = AcceptancePolicy(
            required_tests=settings.required_tests,
            allowed_indexes=settings.allowed_indexes,
            block_all_on_failure=settings.block_all_on_failure,
        )
        self.records = RecordStore(staging)
        self.leases = IndexLeases(staging)
        # Pages alone get the short lock; files are copied without lock headers and keep the
        # bucket's default retention.
        nightly_pages = IndexStore(nightly, retention=settings.page_retention)
        self.verifier = SetVerifier(
            staging=staging,
            nightly=nightly,
            nightly_pages=nightly_pages,
            workers=workers,
            allow_build_tag_rereleases=settings.allow_build_tag_rereleases,
            allow_new_local_labels=settings.allow_new_local_labels,
        )
        self.releaser = Releaser(
            staging=staging,
            nightly=nightly,
            clock=clock,
            workers=workers,
            single_request_limit=single_request_limit,
            part_size=part_size,
        )
        self.verdicts = (
            None
            if signer is None
            else VerdictWriter(
                settings=settings, nightly=nightly, signer=signer, clock=clock, workers=workers
            )
        )
        self.publisher = Publisher(
            settings=settings,
            nightly_pages=nightly_pages,
            invalidator=invalidator,
            clock=clock,
        )
        self.fanout = (
            None
            if launcher is None
            else FanoutJobs(
                settings=settings,
                staging=staging,
                launcher=launcher,
                queue=queue,
                verifier=self.verifier,
                releaser=self.releaser,
                verdicts=self.verdicts,
                publisher=self.publisher,
                records=self.records,
                leases=self.leases,
                observer=self.observer,
                clock=clock,
                workers=workers,
            )
        )
        self.yanks = YankRoute(
            publisher=self.publisher, records=self.records, leases=self.leases, clock=clock
        )
        self.overrides = OverrideRoute(
            settings=settings,
            staging=staging,
            records=self.records,
            fanout=self.fanout,
            clock=clock,
            promote=self._promote,
            reject=self._reject,
        )
        self.imports = ImportRoute(
            settings=settings,
            staging=staging,
            nightly=nightly,
            nightly_pages=nightly_pages,
            records=self.records,
            fanout=self.fanout,
            queue=queue,
            clock=clock,
            workers=workers,
            single_request_limit=single_request_limit,
            part_size=part_size,
            promote=self._promote,
        )

    def load_record(self, run_id: str) -> PromotionRecord | None:
        """The record of ``run_id``, or ``None`` when no decision was recorded yet."""
        return self.records.load(run_id)

    def record_failure(self, key: str, error: BaseException) -> None:
        """Note a transient failure on the run's record (the message will be retried)."""
        try:
            run_id = STAGING.run_id_from_manifest_key(key)
        except LayoutError:
            return
        existing = self.load_record(run_id)
        if existing is not None and existing.state is not State.PENDING:
            return
        self.records.save(
            failure_record(
                existing,
                run_id=run_id,
                at=upload_time(self.clock()),
                failure=f"{type(error).__name__}: {error}",
                then="it will be retried",
            )
        )

    def handle(self, event: ManifestEvent) -> PromotionRecord | None:
        """Decide on the manifest at ``event.key`` and act on it.

        Returns the record written (or the existing one when this manifest was already
        decided), ``None`` when the key is not a manifest or the manifest is gone. Permanent
        rejections are recorded and returned, never raised; transient errors raise. Each new
        promoted or rejected decision is told to ``observer`` once; a redelivered manifest and
        an untrusted write (noted as pending) are not.
        """
        try:
            run_id = STAGING.run_id_from_manifest_key(event.key)
        except LayoutError:
            return None
        try:
            found = self.staging.get(event.key, if_match=event.etag)
        except PreconditionFailed:
            # Overwritten since this event: the bytes this writer wrote are gone, and the
            # newer write has an event of its own, judged on its own writer.
            return None
        if found is None:
            return None
        raw, _etag = found
        digest = hashlib.sha256(raw).hexdigest()
        existing = self.load_record(run_id)
        if existing is not None and digest in {
            h.manifest_sha256 for h in existing.history if h.state is not State.PENDING
        }:
            # These exact bytes were decided already (at-least-once delivery): no-op.
            return existing
        actor = event.principal_id
        if run_id.startswith(OVERRIDE_RUN_PREFIX):
            # The override route checks its own writer, the break-glass role.
            override, target = self.overrides.apply(run_id, raw, digest, actor, existing, event)
            return self._decided(event, override, copies_from=target)
        try:
            self._check_writer(actor, run_id)
        except PromotionRejected as untrusted:
            return self._ignore(run_id, untrusted, digest, actor, existing)
        try:
            if run_id.startswith(YANK_RUN_PREFIX):
                return self._decided(event, self.yanks.apply(run_id, raw, digest, actor, existing))
            if run_id.startswith(IMPORT_RUN_PREFIX):
                return self._decided(
                    event, self.imports.apply(run_id, raw, digest, actor, existing, event)
                )
            manifest = parse_manifest(raw, expected_run_id=run_id)
            off_host = manifest_test_url_problems(manifest, self.settings.test_url_hosts)
            if off_host:
                raise PromotionRejected(
                    Reason.INVALID_MANIFEST, f"manifest is invalid: {'; '.join(off_host)}"
                )
            if existing is not None and existing.state is State.PROMOTED:
                raise PromotionRejected(
                    Reason.REPLAY_CONFLICT,
                    f"run {run_id} was already promoted from another manifest "
                    f"(sha256 {existing.manifest_sha256}); a promoted run is never changed",
                )
            return self._decided(
                event, self._promote(manifest, digest, actor, existing, event=event)
            )
        except PromotionRejected as rejection:
            return self._decided(event, self._reject(run_id, rejection, digest, actor, existing))

    def _decided(
        self,
        event: ManifestEvent,
        record: PromotionRecord,
        *,
        copies_from: PromotionRecord | None = None,
    ) -> PromotionRecord:
        """Tell the observer of the new decision ``record`` holds, and return ``record``.

        ``copies_from`` is the record that shows the copies and pages, when another run's
        (an override request's decision is its target run's promotion).
        """
        stats = decision_stats(copies_from or record, manifest_written_at=event.event_time)
        self.observer.decided(record, stats)
        return record

    def _check_writer(self, principal_id: str | None, run_id: str) -> None:
        """The reporter writes run manifests; a dependency-mirror run (``deps-*``), which the
        promoter accepts on its review instead of tests, only from the mirror's own role; an
        import request, which releases files no test installed, the break-glass role alone."""
        if run_id.startswith(IMPORT_RUN_PREFIX):
            return self.imports.check_writer(principal_id)
        mirror = run_id.startswith(self.policy.review_run_prefix)
        trusted = self.settings.trusted_deps_id if mirror else self.settings.trusted_reporter_id
        if trusted is None and mirror and self.settings.trusted_reporter_id is not None:
            raise PromotionRejected(
                Reason.UNTRUSTED_WRITER,
                "dependency-mirror runs are accepted only from the deps role, and none is "
                "configured",
            )
        if trusted is not None and not written_by(principal_id, trusted):
            raise PromotionRejected(
                Reason.UNTRUSTED_WRITER,
                f"manifest was written by {principal_id or 'an unknown principal'}, "
                f"not by the {'deps' if mirror else 'reporter'} role",
            )

    def _ignore(
        self,
        run_id: str,
        untrusted: PromotionRejected,
        digest: str,
        actor: str | None,
        existing: PromotionRecord | None,
    ) -> PromotionRecord:
        """Note a manifest from a writer not trusted for it, without deciding the run.

        An untrusted write must never decide a run: it is recorded as a pending entry, which
        the redelivery check ignores, so the trusted writer's manifest (even with the very
        same bytes) is still decided on its own. A decided run keeps its state.
        """
        if existing is not None and any(
            h.manifest_sha256 == digest and h.actor == actor and h.reason == untrusted.reason
            for h in existing.history
        ):
            return existing  # this very write was noted already (at-least-once delivery)
        note = HistoryEntry(
            at=upload_time(self.clock()),
            state=State.PENDING,
            reason=untrusted.reason.value,
            message=f"ignored: {untrusted.message}",
            manifest_sha256=digest,
            actor=actor,
        )
        if existing is not None and existing.state is not State.PENDING:
            noted = self.records.save(existing.with_entry(note))
        else:
            noted = self.records.save(build_record(existing, note, run_id=run_id))
        self.observer.ignored(noted)
        return noted

    def _reject(
        self,
        run_id: str,
        rejection: PromotionRejected,
        digest: str,
        actor: str | None,
        existing: PromotionRecord | None,
        sets: Sequence[SetOutcome] = (),
    ) -> PromotionRecord:
        return self.records.save(
            rejected_record(
                existing,
                rejection,
                run_id=run_id,
                at=upload_time(self.clock()),
                manifest_sha256=digest,
                actor=actor,
                sets=sets,
            )
        )

    def _reject_accepted(
        self,
        manifest: Manifest,
        rejection: PromotionRejected,
        acceptance: AcceptanceDecision,
        rejected_sets: list[SetOutcome],
        digest: str,
        actor: str | None,
        existing: PromotionRecord | None,
    ) -> PromotionRecord:
        """Record the rejection of accepted sets found under the leases, with the copies
        earlier attempts left in nightly (:mod:`~wheelgate.promotion.leftovers`)."""
        left, rejection = account_for_copies(
            verifier=self.verifier,
            staging=self.staging,
            run_id=manifest.run_id,
            rejection=rejection,
            sets=[(s.index, [f.filename for f in s.files]) for s in acceptance.accepted],
            at=upload_time(self.clock()),
        )
        sets = rejected_outcomes([s.index for s in acceptance.accepted], rejection, left)
        return self._reject(
            manifest.run_id, rejection, digest, actor, existing, sets + rejected_sets
        )

    def _promote(
        self,
        manifest: Manifest,
        digest: str,
        actor: str | None,
        existing: PromotionRecord | None,
        *,
        override: dict[str, str] | None = None,
        imported: ImportedSet | None = None,
        event: ManifestEvent,
    ) -> PromotionRecord:
        if self.fanout is not None:
            running = self.fanout.running(manifest.run_id, digest)
            if running is not None:
                # A redelivery while this manifest's job runs: no second promotion, no new
                # decision (the job's start is made sure of, once more).
                return self.fanout.launch(running, existing)
        acceptance = decide(manifest, self.policy)
        if override is not None or imported is not None:
            # Break-glass, or an import (no tests): the tests do not decide; every integrity
            # check below still does.
            acceptance = AcceptanceDecision(accepted=tuple(manifest.sets), rejected=())
        rejected_sets = [
            SetOutcome(
                index=s.index,
                state=State.REJECTED,
                reason=err.reason.value,
                message=err.message,
                tests=recorded_tests(s.tests),
            )
            for s, err in acceptance.rejected
        ]
        if not acceptance.accepted:
            first = acceptance.rejected[0][1]
            return self._reject(manifest.run_id, first, digest, actor, existing, rejected_sets)
        # One promotion per index directory at a time, from the first check to the last
        # page write (see lease.py); verify every accepted set before copying anything.
        with self.leases.hold(
            [s.index for s in acceptance.accepted], run_id=manifest.run_id
        ) as held:
            try:
                verified = [
                    imported.verified(self.verifier, manifest, s)
                    if imported is not None
                    else self.verifier.verify(manifest, s)
                    for s in acceptance.accepted
                ]
                fanout = self.fanout
                if fanout is not None and not fanout.wanted([v.plan for v in verified]):
                    fanout = None
                if fanout is None:
                    # The files S3 has no SHA-256 of are hashed here, still before the first
                    # copy; a fan-out execution hashes them in steps of their own instead, so
                    # that this invocation's time does not grow with their bytes.
                    self.verifier.check_hashes([s for v in verified for s in v.unhashed])
            except PromotionRejected as rejection:
                return self._reject_accepted(
                    manifest, rejection, acceptance, rejected_sets, digest, actor, existing
                )
            promotion = settle_promotion(
                run_id=manifest.run_id,
                commit=manifest.commit,
                plans=[v.plan for v in verified],
                accepted={s.index: s for s in acceptance.accepted},
                rejected_sets=rejected_sets,
                manifest_sha256=digest,
                actor=actor,
                override=override,
                imported=imported.outcome if imported is not None else None,
                signed=self.verdicts is not None,
            )
            if fanout is not None:
                job = fanout.prepare(
                    promotion, verified, body=event.body, event_time=event.event_time
                )
                # The job keeps the leases until its publish or conclude step.
                held.hand_over(job.job_id, FANOUT_LEASE_SECONDS)
                return fanout.launch(job, existing)
            try:
                entries = self.releaser.release(verified)
                if self.verdicts is not None:
                    # Every verdict is written before the first page lists its file.
                    steps = [step for v in verified for step in v.plan.steps]
                    entries = self.verdicts.attest_all(promotion, steps, entries)
                pages_nightly = self.publisher.publish(verified, entries)
            except PromotionRejected as rejection:
                return self._reject_accepted(
                    manifest, rejection, acceptance, rejected_sets, digest, actor, existing
                )
        invalidations = self.publisher.invalidate(pages_nightly)
        return self.records.save(
            promoted_record(
                existing,
                promotion,
                at=upload_time(self.clock()),
                writes=pages_nightly,
                invalidations=invalidations,
            )
        )
