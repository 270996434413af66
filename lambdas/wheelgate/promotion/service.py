"""Promotion of one manifest: the service that routes a manifest event, comes to one
:class:`~.decisions.Decision`, and hands it to its projections.

An event's path: :meth:`PromotionService.handle` takes the time of the decision once, reads the
request the event names (:func:`~.event.parse_request`), skips bytes decided already
(:mod:`~.redelivery`), checks the writer (:mod:`~.writers`) and hands the request to its route:
a run's manifest (:mod:`~.routes.run`), a yank request (:mod:`~.routes.yank`), a break-glass
override request (:mod:`~.routes.override`) or an import request
(:mod:`~.routes.importing`). A route returns what it
decided (:mod:`~.decisions`): the record it wrote, or a manifest to promote through the flow
(:mod:`~.flow`), tested, overridden or imported; a refusal is recorded here. Every record is a
transition of :class:`~wheelgate.core.records.PromotionRecord`, saved by the one
:class:`~.recorder.RecordStore`. The :class:`~.decisions.Decision` then goes to each projection
in order (metrics, run history, status site), which reads nothing back. A fan-out execution's
steps come through :meth:`PromotionService.step`, to the same projections. The parts are built
in one place, :func:`~.compose.build_service`. An event for a stage entry of the run history
(``history/_entries/``) is folded into the history instead
(:mod:`wheelgate.history.fold`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

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
from wheelgate.core.records import PromotionRecord, State
from wheelgate.core.settings import PromoterSettings
from wheelgate.history.fold import EntryFolder, FoldResult
from wheelgate.promotion.decisions import (
    Decided,
    Decision,
    Override,
    Projection,
    Promote,
    Route,
)
from wheelgate.promotion.event import ManifestEvent, Request, parse_request
from wheelgate.promotion.fanout.jobs import FanoutJobs
from wheelgate.promotion.fanout.steps import FanoutSteps
from wheelgate.promotion.flow import PromotionFlow
from wheelgate.promotion.recorder import RecordStore, stated_commit
from wheelgate.promotion.redelivery import Redelivery
from wheelgate.promotion.routes.override import OverrideRoute
from wheelgate.promotion.writers import check_writer
from wheelgate.storage.bucket import Bucket

logger = logging.getLogger(__name__)

#: Where stage calls write the run history's entries (the stack sends their events too).
HISTORY_ENTRIES_KEY_PREFIX = HISTORY_PREFIX + HISTORY_ENTRIES_DIR


class PromotionService:
    """Routes manifests from the staging bucket, decides, and projects each decision.

    ``routes`` maps a request's run id prefix (yank, override, import) to its route;
    ``runs`` takes every other manifest. ``projections`` are run in order on each
    :class:`~.decisions.Decision` (see :meth:`handle`). ``clock`` gives the time of each
    decision, taken once. ``fanout`` and ``steps`` are the fan-out jobs and the execution's
    steps (``None``: no fan-out). ``folder`` folds the run history's stage entries (``None``:
    their events are ignored).
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
        projections: Sequence[Projection],
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
        self.projections = tuple(projections)
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
        failed = PromotionRecord.of(existing, run_id).failed(
            at=self.clock(),
            failure=f"{type(error).__name__}: {error}",
            then="it will be retried",
        )
        self.records.save(failed)

    def handle(self, event: ManifestEvent) -> Decision | None:
        """Decide on the manifest at ``event.key``, then project the decision.

        Returns the :class:`~.decisions.Decision` (not ``new`` when this manifest was decided
        already), ``None`` when the key is not a manifest or the manifest is gone, and for a
        history entry, which is folded (:meth:`fold_entry`). Permanent rejections are recorded
        and returned, never raised; transient errors raise, before any projection. Each
        projection sees every decision, in order, after its record was stored.
        """
        if event.key.startswith(HISTORY_ENTRIES_KEY_PREFIX):
            self.fold_entry(event.key)
            return None
        at = self.clock()
        request = parse_request(event, self.staging, self.records, at=at)
        if request is None:
            return None
        decision = replace(self._decide(request), written_at=event.event_time)
        self.project(decision)
        return decision

    def step(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """Run the fan-out step ``event`` names and project the decision it records (a publish
        or conclude step's); return the step's output. Raises ``ValueError`` without fan-out,
        and what the step raises (see :meth:`~.fanout.steps.FanoutSteps.step`)."""
        if self.steps is None:
            raise ValueError(
                "fan-out step received, but no fan-out state machine is configured "
                "(WHEELGATE_FANOUT_STATE_MACHINE_ARN)"
            )
        stepped = self.steps.step(event, at=self.clock())
        if stepped.decision is not None:
            self.project(stepped.decision)
        return stepped.output

    def project(self, decision: Decision) -> None:
        """Run each projection on ``decision`` in order. One that raises is logged and the
        next still runs: the decision is made and recorded, and must not become a retry."""
        for projection in self.projections:
            try:
                projection.project(decision)
            except Exception:
                logger.exception(
                    "projection of a decision failed",
                    extra={
                        "projection": type(projection).__name__,
                        "run_id": decision.record.run_id,
                    },
                )

    def _decide(self, request: Request) -> Decision:
        at = request.at
        if request.existing is not None and Redelivery.decided(request.existing, request.digest):
            return Decision(request.existing, at, new=False)  # these bytes were decided already
        try:
            check_writer(self.settings, request.run_id, request.actor)
        except PromotionRejected as untrusted:
            if not request.run_id.startswith(OVERRIDE_RUN_PREFIX):
                return self._ignore(request, untrusted, at)
            # An override request from anyone else is refused on its own record.
            return self._reject(request, untrusted, at)
        try:
            match self._route(request.run_id).decide(request):
                case Decided(record):
                    return Decision(record, at)
                case Promote(mode=Override() as override) as promote:
                    target = self.flow.promote(
                        promote, actor=request.actor, event=request.event, at=at
                    )
                    record = self.overrides.settle(request, override, target.record, at=at)
                    return replace(target, record=record, run=target.record)
                case Promote() as promote:
                    return self.flow.promote(
                        promote, actor=request.actor, event=request.event, at=at
                    )
        except PromotionRejected as rejection:
            return self._reject(request, rejection, at)

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

    def _reject(self, request: Request, rejection: PromotionRejected, at: datetime) -> Decision:
        record = self.flow.reject(
            request.run_id,
            rejection,
            request.digest,
            request.actor,
            request.existing,
            at=at,
            commit=stated_commit(request.raw),
        )
        return Decision(record, at)

    def _ignore(self, request: Request, untrusted: PromotionRejected, at: datetime) -> Decision:
        """Note a manifest from a writer not trusted for it, without deciding the run.

        An untrusted write must never decide a run: it is recorded as a pending entry, which
        the redelivery check ignores, so the trusted writer's manifest (even with the very
        same bytes) is still decided on its own. A decided run keeps its state.
        """
        existing = request.existing
        if existing is not None and Redelivery.noted(
            existing, request.digest, request.actor, untrusted.reason
        ):
            return Decision(existing, at, new=False)  # noted already (at-least-once delivery)
        noted = PromotionRecord.of(existing, request.run_id).noted(
            untrusted, at=at, manifest_sha256=request.digest, actor=request.actor
        )
        return Decision(self.records.save(noted), at, noted=True)
