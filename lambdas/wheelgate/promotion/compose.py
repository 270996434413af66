"""The composition root of promotion: every part of the service built once, in one place.

The promoter function's handler (:func:`wheelgate.lambda_function.handler.build_promoter`)
calls :func:`build_service` once per container; tests and benchmarks call it with their own
clients, clock, and buckets built with their own limits. The service's projections run in one
order: metrics, then the run history, then the status site.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from wheelgate.core.acceptance import AcceptancePolicy
from wheelgate.core.layout import IMPORT_RUN_PREFIX, YANK_RUN_PREFIX
from wheelgate.core.settings import PromoterSettings
from wheelgate.history.fold import EntryFolder
from wheelgate.history.store import HistoryStore, PageWriter
from wheelgate.index.store import IndexStore
from wheelgate.promotion.decisions import Projection
from wheelgate.promotion.fanout.jobs import FanoutJobs
from wheelgate.promotion.fanout.ports import Launcher, MessageSender
from wheelgate.promotion.fanout.steps import FanoutSteps
from wheelgate.promotion.fanout.store import JobStore
from wheelgate.promotion.flow import PromotionFlow
from wheelgate.promotion.importing.gather import Gatherer
from wheelgate.promotion.importing.progress import ImportProgress
from wheelgate.promotion.importing.screen import Screener
from wheelgate.promotion.lease import IndexLeases
from wheelgate.promotion.publish import Invalidator, Publisher
from wheelgate.promotion.recorder import RecordStore
from wheelgate.promotion.redelivery import Redelivery
from wheelgate.promotion.release import Releaser
from wheelgate.promotion.routes.importing import ImportRoute
from wheelgate.promotion.routes.override import OverrideRoute
from wheelgate.promotion.routes.run import RunRoute
from wheelgate.promotion.routes.yank import YankRoute
from wheelgate.promotion.run_history import RunHistory
from wheelgate.promotion.service import PromotionService
from wheelgate.promotion.verdicts import Signer, VerdictWriter
from wheelgate.promotion.verification import SetVerifier
from wheelgate.storage.bucket import Bucket


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class _Parts:
    """The parts every path of a promotion shares (the flow, the fan-out steps, the routes)."""

    settings: PromoterSettings
    staging: Bucket
    nightly: Bucket
    clock: Callable[[], datetime]
    records: RecordStore
    leases: IndexLeases
    nightly_pages: IndexStore
    verifier: SetVerifier
    releaser: Releaser
    verdicts: VerdictWriter | None
    publisher: Publisher


def build_service(
    *,
    settings: PromoterSettings,
    staging: Bucket,
    nightly: Bucket,
    invalidator: Invalidator | None = None,
    clock: Callable[[], datetime] | None = None,
    metrics: Projection | None = None,
    status_site: Projection | None = None,
    launcher: Launcher | None = None,
    queue: MessageSender | None = None,
    signer: Signer | None = None,
    page_writer: PageWriter | None = None,
) -> PromotionService:
    """The service promoting manifests from ``staging`` into ``nightly``.

    ``invalidator`` drops the CDN's copies of changed pages (``None``: no CDN). ``clock``
    gives the time of each decision, read once by the service and carried to every record and
    page it writes, and the deadlines of leases, jobs and an import's gathering (``None``: the
    time now). The requests a step makes at once and S3's copy limits are the buckets' own
    (:class:`~wheelgate.storage.limits.TransferLimits`, lowered only by tests that exercise
    multipart copies with small files). ``metrics`` and ``status_site`` are the projections
    before and after the run history's (``None``: none). ``launcher`` starts fan-out executions
    (``None``: every run is promoted in one invocation); ``queue`` sends a failed execution's or
    an unfinished import's event back. ``signer`` signs each released file's verdict (``None``:
    no verdicts).
    ``page_writer`` writes a directory's history page after each change to its run history
    (``None``: no page); every decision is recorded in the run history (its projection), and
    stage entries folded.
    """
    now = clock or _now
    records = RecordStore(staging)
    # Pages alone get the short lock; files are copied without lock headers and keep the
    # bucket's default retention.
    nightly_pages = IndexStore(nightly, retention=settings.page_retention)
    history, folder = _history(settings, staging, nightly_pages, page_writer)
    projections = [p for p in (metrics, history, status_site) if p is not None]
    parts = _Parts(
        settings=settings,
        staging=staging,
        nightly=nightly,
        clock=now,
        records=records,
        leases=IndexLeases(staging),
        nightly_pages=nightly_pages,
        verifier=SetVerifier(
            staging=staging,
            nightly=nightly,
            nightly_pages=nightly_pages,
            allow_build_tag_rereleases=settings.allow_build_tag_rereleases,
            allow_new_local_labels=settings.allow_new_local_labels,
        ),
        releaser=Releaser(staging=staging, nightly=nightly),
        verdicts=None
        if signer is None
        else VerdictWriter(settings=settings, nightly=nightly, signer=signer),
        publisher=Publisher(
            settings=settings, nightly_pages=nightly_pages, invalidator=invalidator
        ),
    )
    return _service(parts, launcher, queue, projections, folder)


def _history(
    settings: PromoterSettings,
    staging: Bucket,
    nightly_pages: IndexStore,
    page_writer: PageWriter | None,
) -> tuple[RunHistory, EntryFolder]:
    """The run history's writers: its projection of each decision, and the folder of stage
    entries."""
    history = HistoryStore(staging, page_writer=page_writer)
    recorder = RunHistory(
        store=history,
        staging=staging,
        nightly_pages=nightly_pages,
        run_expiry_days=settings.run_expiry_days,
    )
    folder = EntryFolder(
        staging,
        history,
        run_expiry_days=settings.run_expiry_days,
        allowed_indexes=settings.allowed_indexes,
        nightly_pages=nightly_pages,
    )
    return recorder, folder


def _service(
    parts: _Parts,
    launcher: Launcher | None,
    queue: MessageSender | None,
    projections: list[Projection],
    folder: EntryFolder,
) -> PromotionService:
    fanout, steps = (None, None) if launcher is None else _fanout(parts, launcher, queue)
    redelivery = Redelivery(fanout)
    settings, records, now = parts.settings, parts.records, parts.clock
    flow = PromotionFlow(
        policy=AcceptancePolicy(
            required_tests=settings.required_tests,
            allowed_indexes=settings.allowed_indexes,
            block_all_on_failure=settings.block_all_on_failure,
        ),
        staging=parts.staging,
        verifier=parts.verifier,
        releaser=parts.releaser,
        verdicts=parts.verdicts,
        publisher=parts.publisher,
        records=records,
        leases=parts.leases,
        fanout=fanout,
        redelivery=redelivery,
    )
    yanks = YankRoute(publisher=parts.publisher, records=records, leases=parts.leases)
    return PromotionService(
        settings=settings,
        staging=parts.staging,
        records=records,
        flow=flow,
        runs=RunRoute(settings=settings),
        overrides=OverrideRoute(staging=parts.staging, records=records, redelivery=redelivery),
        routes={
            YANK_RUN_PREFIX: yanks,
            IMPORT_RUN_PREFIX: _import_route(parts, redelivery, queue),
        },
        projections=projections,
        clock=now,
        fanout=fanout,
        steps=steps,
        folder=folder,
    )


def _fanout(
    parts: _Parts, launcher: Launcher, queue: MessageSender | None
) -> tuple[FanoutJobs, FanoutSteps]:
    store = JobStore(staging=parts.staging, clock=parts.clock)
    jobs = FanoutJobs(
        settings=parts.settings,
        store=store,
        launcher=launcher,
        records=parts.records,
        leases=parts.leases,
        clock=parts.clock,
    )
    steps = FanoutSteps(
        settings=parts.settings,
        store=store,
        queue=queue,
        verifier=parts.verifier,
        releaser=parts.releaser,
        verdicts=parts.verdicts,
        publisher=parts.publisher,
        records=parts.records,
        leases=parts.leases,
    )
    return jobs, steps


def _import_route(
    parts: _Parts, redelivery: Redelivery, queue: MessageSender | None
) -> ImportRoute:
    return ImportRoute(
        settings=parts.settings,
        buckets=(parts.staging.name, parts.nightly.name),
        records=parts.records,
        gatherer=Gatherer(
            staging=parts.staging,
            progress=ImportProgress(records=parts.records, clock=parts.clock),
            clock=parts.clock,
        ),
        screener=Screener(
            settings=parts.settings,
            staging=parts.staging,
            nightly_pages=parts.nightly_pages,
            clock=parts.clock,
        ),
        redelivery=redelivery,
        queue=queue,
    )
