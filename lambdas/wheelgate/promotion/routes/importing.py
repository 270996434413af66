"""The import route: an import request checked, gathered, screened, and handed back to the
service as what to promote (see the package's docstring for the steps)."""

from __future__ import annotations

from wheelgate.core.errors import PromotionRejected, Reason, TransientError
from wheelgate.core.import_rules import (
    SCHEMA_IMPORT_V1,
    ImportRequest,
    parse_import,
    source_allowed,
)
from wheelgate.core.manifest import ArtifactSet, Manifest
from wheelgate.core.planning import NO_COMMIT
from wheelgate.core.records import PromotionRecord, RefusedFile, SetOutcome, State
from wheelgate.core.settings import PromoterSettings
from wheelgate.promotion.decisions import Decided, Imported, Promote, Routed
from wheelgate.promotion.event import Request
from wheelgate.promotion.fanout.ports import MessageSender
from wheelgate.promotion.importing.gather import Gathered, Gatherer
from wheelgate.promotion.importing.screen import Screener
from wheelgate.promotion.recorder import RecordStore
from wheelgate.promotion.redelivery import Redelivery


class ImportRoute:
    """Decides import requests: gathers the source into staging, screens each file, and
    returns the kept ones to promote.

    ``queue`` sends the request's event back when an invocation's gathering time is up
    (``None``: the message is left to be retried instead). ``redelivery`` finds the import's
    fan-out promotion while it still runs. ``buckets`` are the names no source may be in
    (staging's and nightly's).
    """

    def __init__(
        self,
        *,
        settings: PromoterSettings,
        buckets: tuple[str, str],
        records: RecordStore,
        gatherer: Gatherer,
        screener: Screener,
        redelivery: Redelivery,
        queue: MessageSender | None,
    ) -> None:
        self.settings = settings
        self.buckets = buckets
        self.records = records
        self.gatherer = gatherer
        self.screener = screener
        self.redelivery = redelivery
        self.queue = queue

    def decide(self, request: Request) -> Routed:
        """Carry out the import request of ``request`` (whose writer the service checked).

        Returns the record saved while the source is gathered, a fan-out execution copies or
        nothing is left to import (rejected), else the kept files to promote. Raises
        :class:`~wheelgate.core.errors.PromotionRejected` for a request that is invalid, names
        a directory that is not configured or a source that is not allowed (the service records
        it), and :class:`~wheelgate.core.errors.TransientError` to be retried.
        """
        run_id, digest, actor = request.run_id, request.digest, request.actor
        wanted = parse_import(request.raw, expected_run_id=run_id)
        allowed = self.settings.allowed_indexes
        if allowed and wanted.index not in allowed:
            raise PromotionRejected(
                Reason.INDEX_NOT_ALLOWED,
                f"index directory {wanted.index!r} is not configured for promotion",
                index=wanted.index,
            )
        refusal = source_allowed(wanted.source_location, self.settings.import_sources, self.buckets)
        if refusal is not None:
            raise refusal
        resumed = self.redelivery.resume(run_id, digest, request.existing, at=request.at)
        if resumed is not None:
            return Decided(resumed)
        gathered = self.gatherer.gather(wanted, digest, actor, request.existing)
        if gathered.remaining:
            return Decided(self._go_on(wanted, gathered, request))
        record = self.records.load(run_id)
        kept, imported = self.screener.screen(wanted, gathered)
        if not kept:
            return Decided(self._nothing_kept(wanted, gathered, imported.refused, request, record))
        manifest = Manifest.model_construct(
            schema_=SCHEMA_IMPORT_V1,
            run_id=run_id,
            commit=NO_COMMIT,
            # An import's set is built from checked parts (each file a ManifestFile): a set of
            # a manifest is capped at 5,000 files, an import is not.
            sets=(ArtifactSet.model_construct(index=wanted.index, files=kept, tests=()),),
        )
        return Promote(manifest, digest, record, Imported(imported))

    def _nothing_kept(
        self,
        wanted: ImportRequest,
        gathered: Gathered,
        refused: tuple[RefusedFile, ...],
        request: Request,
        record: PromotionRecord | None,
    ) -> PromotionRecord:
        rejection = PromotionRejected(
            Reason.IMPORT_EMPTY,
            f"nothing to import from {wanted.source}: {len(refused)} file(s) "
            f"refused, {gathered.total} candidate(s)",
            index=wanted.index,
        )
        outcome = SetOutcome(
            index=wanted.index,
            state=State.REJECTED,
            reason=rejection.reason.value,
            message=rejection.message,
            refused=list(refused),
        )
        decision = PromotionRecord.of(record, request.run_id).rejected(
            rejection,
            at=request.at,
            manifest_sha256=request.digest,
            actor=request.actor,
            sets=[outcome],
        )
        return self.records.save(
            decision.model_copy(update={"imported_from": wanted.source, "progress": None})
        )

    def _go_on(
        self, wanted: ImportRequest, gathered: Gathered, request: Request
    ) -> PromotionRecord:
        """The gathering time is up: send the request's event back to the queue, so a new
        invocation goes on (or, without a queue, fail the message so that it is retried)."""
        done = gathered.total - gathered.remaining
        what = f"import of {wanted.source}: {done} of {gathered.total} file(s) gathered"
        url = self.settings.manifest_queue_url
        body = request.event.body
        if self.queue is None or url is None or body is None:
            raise TransientError(f"{what}; the rest is gathered when the message is retried")
        self.queue.send(url, body)
        record = self.records.load(wanted.run_id)
        assert record is not None  # written when the gathering started
        return record
