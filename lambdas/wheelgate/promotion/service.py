"""Promotion of one manifest: the service that routes a manifest event and acts on what its
route decides.

:class:`PromotionService` reads the request an event names (:func:`~.event.parse_request`),
skips bytes decided already (:mod:`~.redelivery`), checks the writer (:mod:`~.writers`), and
hands the request to its route: a run's manifest (:mod:`~.run`), a yank request
(:mod:`~.yanking`), a break-glass override request (:mod:`~.override`) or an import request
(:mod:`~.importing`). A route returns a decision (:mod:`~.decisions`): the record it wrote, or
a manifest to promote through the flow (:mod:`~.flow`), tested, overridden or imported; a
refusal is recorded here. The parts are built in one place, :func:`~.compose.build_service`.
An event for a stage entry of the run history (``history/_entries/``) is folded into the
history instead (:mod:`wheelgate.history.fold`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from wheelgate.core.errors import PromotionRejected
from wheelgate.core.layout import (
    HISTORY_ENTRIES_DIR,
    HISTORY_PREFIX,
    IMPORT_RUN_PREFIX,
    OVERRIDE_RUN_PREFIX,
    STAGING,
    YANK_RUN_PREFIX,
    LayoutError,
)
from wheelgate.core.records import PromotionRecord, RecordEntry, State
from wheelgate.core.settings import PromoterSettings
from wheelgate.history.fold import EntryFolder, FoldResult
from wheelgate.index.pages import upload_time
from wheelgate.promotion.decisions import Decided, Override, Promote, Route
from wheelgate.promotion.event import ManifestEvent, Request, parse_request
from wheelgate.promotion.fanout.jobs import FanoutJobs
from wheelgate.promotion.fanout.steps import FanoutSteps
from wheelgate.promotion.flow import PromotionFlow
from wheelgate.promotion.observer import DecisionObserver, decision_stats
from wheelgate.promotion.recorder import (
    RecordStore,
    build_record,
    failure_record,
    stated_commit,
)
from wheelgate.promotion.redelivery import Redelivery
from wheelgate.promotion.routes.override import OverrideRoute
from wheelgate.promotion.writers import check_writer
from wheelgate.storage.bucket import Bucket

logger = logging.getLogger(__name__)

#: Where stage calls write the run history's entries (the stack sends their events too).
HISTORY_ENTRIES_KEY_PREFIX = HISTORY_PREFIX + HISTORY_ENTRIES_DIR


class PromotionService:
    """Routes manifests from the staging bucket and acts on their routes' decisions.

    ``routes`` maps a request's run id prefix (yank, override, import) to its route;
    ``runs`` takes every other manifest. ``observer`` hears of each new promoted or rejected
    decision once (see :class:`~wheelgate.promotion.observer.DecisionObserver`). ``fanout``
    and ``steps`` are the fan-out jobs and the execution's steps (``None``: no fan-out).
    ``folder`` folds the run history's stage entries (``None``: their events are ignored).
    """

    def __init__(
        self,
        *,
        settings: PromoterSettings,
        staging: Bucket,
        records: RecordStore,
        flow: PromotionFlow,
        runs: Route,
        overrides: OverrideRoute,
        routes: dict[str, Route],
        observer: DecisionObserver,
        clock: Callable[[], datetime],
        fanout: FanoutJobs | None = None,
        steps: FanoutSteps | None = None,
        folder: EntryFolder | None = None,
    ) -> None:
        self.settings = settings
        self.staging = staging
        self.records = records
        self.flow = flow
        self.runs = runs
        self.overrides = overrides
        self.routes = {OVERRIDE_RUN_PREFIX: overrides, **routes}
        self.observer = observer
        self.clock = clock
        self.fanout = fanout
        self.steps = steps
        self.folder = folder

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
        decided), ``None`` when the key is not a manifest or the manifest is gone, and for a
        history entry, which is folded (:meth:`fold_entry`). Permanent
        rejections are recorded and returned, never raised; transient errors raise. Each new
        promoted or rejected decision is told to ``observer`` once; a redelivered manifest and
        an untrusted write (noted as pending) are not.
        """
        if event.key.startswith(HISTORY_ENTRIES_KEY_PREFIX):
            self.fold_entry(event.key)
            return None
        request = parse_request(event, self.staging, self.records)
        if request is None:
            return None
        if Redelivery.decided(request.existing, request.digest):
            return request.existing  # these exact bytes were decided already: no-op
        try:
            check_writer(self.settings, request.run_id, request.actor)
        except PromotionRejected as untrusted:
            if not request.run_id.startswith(OVERRIDE_RUN_PREFIX):
                return self._ignore(request, untrusted)
            # An override request from anyone else is refused on its own record.
            return self._observed(request, self._reject(request, untrusted))
        try:
            match self._route(request.run_id).decide(request):
                case Decided(record):
                    return self._observed(request, record)
                case Promote(mode=Override() as override) as decision:
                    target = self.flow.promote(decision, actor=request.actor, event=event)
                    record = self.overrides.settle(request, override, target)
                    return self._observed(request, record, copies_from=target)
                case Promote() as decision:
                    record = self.flow.promote(decision, actor=request.actor, event=event)
                    return self._observed(request, record)
        except PromotionRejected as rejection:
            return self._observed(request, self._reject(request, rejection))

    def fold_entry(self, key: str) -> FoldResult | None:
        """Fold the run history's stage entry at ``key`` (``None``: no folder). A refused
        entry is logged with its reason and dropped: retrying cannot change what it says.
        Raises what storage raises (the event is retried)."""
        if self.folder is None:
            return None
        result = self.folder.fold(key)
        if result.folded:
            logger.info("history entry folded", extra={"entry_key": key})
        else:
            logger.warning(
                "history entry refused",
                extra={"entry_key": key, "reason": result.reason, "why": result.message},
            )
        return result

    def _route(self, run_id: str) -> Route:
        for prefix in (OVERRIDE_RUN_PREFIX, YANK_RUN_PREFIX, IMPORT_RUN_PREFIX):
            if run_id.startswith(prefix) and prefix in self.routes:
                return self.routes[prefix]
        return self.runs

    def _reject(self, request: Request, rejection: PromotionRejected) -> PromotionRecord:
        return self.flow.reject(
            request.run_id,
            rejection,
            request.digest,
            request.actor,
            request.existing,
            commit=stated_commit(request.raw),
        )

    def _observed(
        self,
        request: Request,
        record: PromotionRecord,
        *,
        copies_from: PromotionRecord | None = None,
    ) -> PromotionRecord:
        """Tell the observer of the new decision ``record`` holds, and return ``record``.

        ``copies_from`` is the record that shows the copies and pages, when another run's
        (an override request's decision is its target run's promotion).
        """
        stats = decision_stats(copies_from or record, manifest_written_at=request.event.event_time)
        self.observer.decided(record, stats)
        return record

    def _ignore(self, request: Request, untrusted: PromotionRejected) -> PromotionRecord:
        """Note a manifest from a writer not trusted for it, without deciding the run.

        An untrusted write must never decide a run: it is recorded as a pending entry, which
        the redelivery check ignores, so the trusted writer's manifest (even with the very
        same bytes) is still decided on its own. A decided run keeps its state.
        """
        existing = request.existing
        if Redelivery.noted(existing, request.digest, request.actor, untrusted.reason):
            assert existing is not None
            return existing  # this very write was noted already (at-least-once delivery)
        note = RecordEntry(
            at=upload_time(self.clock()),
            state=State.PENDING,
            reason=untrusted.reason.value,
            message=f"ignored: {untrusted.message}",
            manifest_sha256=request.digest,
            actor=request.actor,
        )
        if existing is not None and existing.state is not State.PENDING:
            noted = self.records.save(existing.with_entry(note))
        else:
            noted = self.records.save(build_record(existing, note, run_id=request.run_id))
        self.observer.ignored(noted)
        return noted
