"""The import route: an import request (``manifests/import-*.json``) carried out.

The service routes a request here after its writer check (the break-glass role only). In
order, every step before the first copy to nightly:

1. **Request.** Its directory must be configured and its source under an ``import_sources``
   entry (never a WheelGate bucket), before anything is read from the source.
2. **Gather.** One listing of the source prefix (:func:`~wheelgate.core.importing.select_files`)
   and one or two reads per project of the source's own index pages, if any
   (:func:`~wheelgate.core.importing.read_source_page`: yank state, upload times, hashes). Each
   candidate is copied server-side into staging, ``runs/<import id>/<index>/<file>`` (where
   only the promoter writes), by a CopyObject that asks S3 for a SHA-256: S3 computes the
   file's hash, and no wheel byte passes through the promoter. A file over 5 GiB (a multipart
   copy, of which S3 keeps only a composite checksum) is read once from the source, the
   version the copy is then pinned to, and its hash kept in the copy's metadata (only the
   promoter writes ``runs/import-*``), so no later step reads it again. A file gathered before
   is never copied again; one whose source changed since is refused (``source-changed``). An
   invocation starts copies for ``IMPORT_GATHER_SECONDS``, writes its progress to the record
   and sends the request's event back to the queue: the next one goes on where it stopped.
3. **Screen**, file by file (a bad file is refused, the rest still imported): each wheel's
   METADATA and WHEEL, read with ranged reads of its staged copy (the wheel is what its name
   says, its METADATA readable); then :func:`~wheelgate.core.importing.screen` against
   nightly's archive pages and the files kept before it.
4. **Promote** the kept files as a run without tests: the service's flow verifies them under
   the directory's lease (every check of a run's set but the tests and the commit), copies
   them to nightly (through a fan-out execution past the thresholds, as any run), lists them
   with their source's upload times and yank states, and records each file ``imported`` from
   its source URI, with no evidence, beside the files refused and why.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from wheelgate.core.errors import PromotionRejected, Reason, TransientError
from wheelgate.core.import_sources import ImportSource
from wheelgate.core.importing import (
    SCHEMA_IMPORT_V1,
    Candidate,
    ImportRequest,
    SourceFacts,
    SourceObject,
    parse_import,
    read_source_page,
    screen,
    select_files,
    source_allowed,
    source_page_keys,
)
from wheelgate.core.layout import STAGING
from wheelgate.core.limits import IMPORT_GATHER_SECONDS, IMPORT_PROGRESS_SECONDS
from wheelgate.core.manifest import (
    ArtifactSet,
    Manifest,
    ManifestFile,
    parse_distribution_filename,
)
from wheelgate.core.objects import (
    META_IMPORT_SOURCE,
    META_SHA256,
    META_SOURCE_ETAG,
    ListedObject,
)
from wheelgate.core.planning import NO_COMMIT, FileStep, Provenance
from wheelgate.core.records import (
    HistoryEntry,
    Progress,
    PromotionRecord,
    RefusedFile,
    SetOutcome,
    State,
)
from wheelgate.core.settings import PromoterSettings
from wheelgate.core.timestamps import upload_time
from wheelgate.core.wheelmeta import CoreMetadata
from wheelgate.index.store import IndexStore
from wheelgate.promotion.event import ManifestEvent, written_by
from wheelgate.promotion.fanout import FanoutJobs, MessageSender
from wheelgate.promotion.override import PromotionFlow
from wheelgate.promotion.recorder import ImportOutcome, RecordStore, build_record, rejected_record
from wheelgate.promotion.verify import SetVerifier, VerifiedSet, wheel_identity
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.errors import PreconditionFailed


@dataclass(frozen=True)
class ImportedSet:
    """What the service's flow needs of an import beyond its set: each file's provenance, the
    METADATA screening read (by staged key and ETag: not read again), the staged copies whose
    SHA-256 the import computed by reading them (not read again either), and what it refused."""

    source: str
    provenance: Mapping[str, Provenance]
    metadata: Mapping[tuple[str, str], CoreMetadata]
    hashed: frozenset[tuple[str, str]]
    refused: tuple[RefusedFile, ...]

    def verified(
        self, verifier: SetVerifier, manifest: Manifest, artifact_set: ArtifactSet
    ) -> VerifiedSet:
        """The import's set verified as a run's (every check but the tests and the commit;
        the files it refused are staged but not part of it), each step with its provenance."""
        return self.annotate(
            verifier.verify(manifest, artifact_set, whole_run=False, known_metadata=self.metadata)
        )

    def annotate(self, verified: VerifiedSet) -> VerifiedSet:
        """``verified`` with each step's provenance, and without the hash reads the import
        already made."""

        def traced(step: FileStep) -> FileStep:
            return replace(step, provenance=self.provenance[step.file.filename])

        return replace(
            verified,
            plan=replace(verified.plan, steps=tuple(traced(s) for s in verified.plan.steps)),
            unhashed=tuple(
                traced(s)
                for s in verified.unhashed
                if (s.source_key, s.source_etag) not in self.hashed
            ),
        )

    @property
    def outcome(self) -> ImportOutcome:
        return ImportOutcome(source=self.source, refused=self.refused)


@dataclass(frozen=True)
class GatheredFile:
    """A source file copied into staging: its staged copy (key, ETag) and its SHA-256, and
    whether the promoter read the file to compute it."""

    source: SourceObject
    uri: str
    key: str
    etag: str
    sha256: str
    read: bool = False


@dataclass(frozen=True)
class Gathered:
    """The outcome of gathering: files in staging, files refused, and the count of
    candidates not gathered yet (the invocation's time ran out)."""

    files: tuple[GatheredFile, ...]
    refused: tuple[RefusedFile, ...]
    facts: Mapping[str, SourceFacts]
    remaining: int
    total: int


class _Budget:
    """The copies one invocation may start: any until ``deadline``, and always one (so that
    every invocation gets further than the last)."""

    def __init__(self, clock: Callable[[], datetime], deadline: datetime) -> None:
        self.clock = clock
        self.deadline = deadline
        self.started = 0
        self._lock = threading.Lock()

    def allows(self) -> bool:
        with self._lock:
            if self.started and self.clock() >= self.deadline:
                return False
            self.started += 1
            return True


class ImportRoute:
    """Carries out import requests: gathers the source into staging, screens each file, and
    promotes the kept ones through the service's ``promote`` flow.

    ``queue`` sends the request's event back when an invocation's gathering time is up
    (``None``: the message is left to be retried instead). ``fanout`` (``None``: no fan-out)
    tells whether the import's fan-out promotion is still running.
    """

    def __init__(
        self,
        *,
        settings: PromoterSettings,
        staging: Bucket,
        nightly: Bucket,
        nightly_pages: IndexStore,
        records: RecordStore,
        fanout: FanoutJobs | None,
        queue: MessageSender | None,
        clock: Callable[[], datetime],
        workers: int,
        single_request_limit: int,
        part_size: int,
        promote: PromotionFlow,
    ) -> None:
        self.settings = settings
        self.staging = staging
        self.nightly = nightly
        self.nightly_pages = nightly_pages
        self.records = records
        self.fanout = fanout
        self.queue = queue
        self.clock = clock
        self.workers = workers
        self.single_request_limit = single_request_limit
        self.part_size = part_size
        self.promote = promote

    def check_writer(self, principal_id: str | None) -> None:
        """An import releases files no test installed: only the break-glass role may ask for
        one. Raises :class:`~wheelgate.core.errors.PromotionRejected` (``untrusted-writer``)
        for anyone else (the service notes it without deciding the request)."""
        role = self.settings.break_glass_id
        if role is None or not written_by(principal_id, role):
            raise PromotionRejected(
                Reason.UNTRUSTED_WRITER,
                f"import requested by {principal_id or 'an unknown principal'}, not by the "
                "break-glass role" + ("" if role else " (none is configured)"),
            )

    def apply(
        self,
        run_id: str,
        raw: bytes,
        digest: str,
        actor: str | None,
        existing: PromotionRecord | None,
        event: ManifestEvent,
    ) -> PromotionRecord:
        """Carry out the import request ``raw`` (``run_id``, SHA-256 ``digest``, written by
        ``actor``, whose writer the service checked); ``existing`` is its record so far.

        Returns the record saved: pending while the source is gathered or a fan-out execution
        copies, else promoted (the kept files imported) or rejected (nothing to import).
        Raises :class:`~wheelgate.core.errors.PromotionRejected` for a request that is invalid,
        names a directory that is not configured or a source that is not allowed (the service
        records it), and :class:`~wheelgate.core.errors.TransientError` to be retried.
        """
        request = parse_import(raw, expected_run_id=run_id)
        allowed = self.settings.allowed_indexes
        if allowed and request.index not in allowed:
            raise PromotionRejected(
                Reason.INDEX_NOT_ALLOWED,
                f"index directory {request.index!r} is not configured for promotion",
                index=request.index,
            )
        refusal = source_allowed(
            request.source_location,
            self.settings.import_sources,
            (self.staging.name, self.nightly.name),
        )
        if refusal is not None:
            raise refusal
        if self.fanout is not None:
            running = self.fanout.running(run_id, digest)
            if running is not None:
                return self.fanout.launch(running, existing)
        gathered = self.gather(request, digest, actor, existing)
        if gathered.remaining:
            return self._continue(request, gathered, digest, actor, event)
        record = self.records.load(run_id)
        kept, imported = self._screen(request, gathered)
        if not kept:
            rejection = PromotionRejected(
                Reason.IMPORT_EMPTY,
                f"nothing to import from {request.source}: {len(imported.refused)} file(s) "
                f"refused, {gathered.total} candidate(s)",
                index=request.index,
            )
            outcome = SetOutcome(
                index=request.index,
                state=State.REJECTED,
                reason=rejection.reason.value,
                message=rejection.message,
                refused=list(imported.refused),
            )
            decision = rejected_record(
                record,
                rejection,
                run_id=run_id,
                at=upload_time(self.clock()),
                manifest_sha256=digest,
                actor=actor,
                sets=[outcome],
            )
            return self.records.save(
                decision.model_copy(update={"imported_from": request.source, "progress": None})
            )
        manifest = Manifest.model_construct(
            schema_=SCHEMA_IMPORT_V1,
            run_id=run_id,
            commit=NO_COMMIT,
            # An import's set is built from checked parts (each file a ManifestFile): a set of
            # a manifest is capped at 5,000 files, an import is not.
            sets=(ArtifactSet.model_construct(index=request.index, files=kept, tests=()),),
        )
        return self.promote(manifest, digest, actor, record, imported=imported, event=event)

    # --- gathering -----------------------------------------------------------------------

    def gather(
        self,
        request: ImportRequest,
        digest: str,
        actor: str | None,
        existing: PromotionRecord | None,
    ) -> Gathered:
        """Copy the request's candidates into staging (each once: a file gathered before is
        looked up, never copied again) until ``IMPORT_GATHER_SECONDS`` have passed, writing the
        record's progress as it goes."""
        budget = _Budget(self.clock, self.clock() + timedelta(seconds=IMPORT_GATHER_SECONDS))
        location = request.source_location
        source = Bucket(self.staging.client, location.bucket)
        selection = select_files(source.list(location.prefix, direct=True), location, request.since)
        facts = source_facts(source, location, selection.projects, workers=self.workers)
        area = STAGING.run_index_prefix(request.run_id, request.index)
        staged = {obj.key: obj for obj in self.staging.list(area, direct=True)}
        total = len(selection.candidates)
        record = self._started(request, digest, actor, existing, total)
        record = self._progress(record, len(staged), total, [])
        files: list[GatheredFile] = []
        refused = list(selection.refused)
        remaining = 0
        last_note = self.clock()

        def one(candidate: SourceObject) -> GatheredFile | RefusedFile | None:
            key = STAGING.artifact(request.run_id, request.index, candidate.filename)
            return self._gather_one(source, candidate, key, staged.get(key), budget)

        for outcome in self._each(one, selection.candidates):
            if outcome is None:
                remaining += 1
            elif isinstance(outcome, RefusedFile):
                refused.append(outcome)
            else:
                files.append(outcome)
            if self.clock() - last_note >= timedelta(seconds=IMPORT_PROGRESS_SECONDS):
                last_note = self.clock()
                record = self._progress(record, total - remaining, total, files)
        self._progress(record, len(files) + len(refused) - len(selection.refused), total, files)
        order = {c.key: n for n, c in enumerate(selection.candidates)}
        return Gathered(
            files=tuple(sorted(files, key=lambda f: order[f.source.key])),
            refused=tuple(refused),
            facts=facts,
            remaining=remaining,
            total=total,
        )

    def _each(
        self,
        work: Callable[[SourceObject], GatheredFile | RefusedFile | None],
        candidates: Sequence[SourceObject],
    ) -> Iterator[GatheredFile | RefusedFile | None]:
        """``work`` of each candidate, ``workers`` at a time, as each ends."""
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            pending: set[Future[GatheredFile | RefusedFile | None]] = {
                pool.submit(work, c) for c in candidates
            }
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()

    def _gather_one(
        self,
        source: Bucket,
        candidate: SourceObject,
        key: str,
        staged: ListedObject | None,
        budget: _Budget,
    ) -> GatheredFile | RefusedFile | None:
        """Gather one candidate into ``key``: copy it, or look at the copy an earlier attempt
        made. ``None``: not started, the invocation's gathering time is up."""
        uri = candidate.uri(source.name)
        if staged is None:
            if not budget.allows():
                return None
            sha256 = None
            if candidate.size > self.single_request_limit:
                # A multipart copy gets no full-object SHA-256 from S3: read the source once,
                # the version the copy is pinned to, and keep the hash on the copy (only the
                # promoter writes runs/import-*).
                try:
                    sha256 = source.sha256_of(candidate.key, candidate.etag)
                except PreconditionFailed:
                    raise TransientError(f"{uri} changed while it was being hashed") from None
            metadata = {META_IMPORT_SOURCE: uri, META_SOURCE_ETAG: candidate.etag}
            if sha256 is not None:
                metadata[META_SHA256] = sha256
            try:
                copied = self.staging.copy_in(
                    source,
                    candidate.key,
                    candidate.etag,
                    candidate.size,
                    key,
                    part_size=self.part_size,
                    single_request_limit=self.single_request_limit,
                    metadata=metadata,
                )
            except PreconditionFailed:
                # Gathered meanwhile by a twin delivery, or the source changed since the
                # listing: the copy in staging (if any) says which.
                pass
            else:
                found = copied.sha256 or sha256
                if found is not None:
                    return GatheredFile(candidate, uri, key, copied.etag, found, sha256 is not None)
        head = self.staging.head(key)
        if head is None:
            raise TransientError(f"{uri} changed while it was being gathered; gather it again")
        if head.metadata.get(META_SOURCE_ETAG) != candidate.etag:
            return RefusedFile(
                filename=candidate.filename,
                reason=Reason.SOURCE_CHANGED.value,
                message=(
                    f"{uri} changed since the import gathered it (ETag "
                    f"{head.metadata.get(META_SOURCE_ETAG)}, now {candidate.etag}); a file "
                    "gathered once is never replaced: import it under a new request (--since)"
                ),
                source=uri,
            )
        if head.s3_sha256 is not None:
            return GatheredFile(candidate, uri, key, head.etag, head.s3_sha256)
        if head.meta_sha256 is not None:
            return GatheredFile(candidate, uri, key, head.etag, head.meta_sha256, read=True)
        try:
            sha256 = self.staging.sha256_of(key, head.etag)
        except PreconditionFailed:
            raise TransientError(f"{key} changed while it was being hashed") from None
        return GatheredFile(candidate, uri, key, head.etag, sha256, read=True)

    # --- records -------------------------------------------------------------------------

    def _started(
        self,
        request: ImportRequest,
        digest: str,
        actor: str | None,
        existing: PromotionRecord | None,
        total: int,
    ) -> PromotionRecord:
        """The request's record while it gathers: a pending entry, once per request."""
        message = f"importing {total} file(s) from {request.source} into {request.index}"
        if existing is not None and any(
            h.manifest_sha256 == digest and h.message == message for h in existing.history
        ):
            return existing
        entry = HistoryEntry(
            at=upload_time(self.clock()),
            state=State.PENDING,
            message=message,
            manifest_sha256=digest,
            actor=actor,
        )
        record = build_record(existing, entry, run_id=request.run_id, imported_from=request.source)
        if existing is not None and existing.state is not State.PENDING:
            # An import asked again after a decision: the decision stands until the new one.
            record = existing.with_entry(entry)
        return self.records.save(record)

    def _progress(
        self, record: PromotionRecord, done: int, total: int, files: Sequence[GatheredFile]
    ) -> PromotionRecord:
        progress = Progress(
            phase="gathering", done=done, total=total, read=sum(1 for f in files if f.read)
        )
        return self.records.save(record.model_copy(update={"progress": progress}))

    def _continue(
        self,
        request: ImportRequest,
        gathered: Gathered,
        digest: str,
        actor: str | None,
        event: ManifestEvent,
    ) -> PromotionRecord:
        """The gathering time is up: send the request's event back to the queue, so a new
        invocation goes on (or, without a queue, fail the message so that it is retried)."""
        done = gathered.total - gathered.remaining
        what = f"import of {request.source}: {done} of {gathered.total} file(s) gathered"
        url = self.settings.manifest_queue_url
        if self.queue is None or url is None or event.body is None:
            raise TransientError(f"{what}; the rest is gathered when the message is retried")
        self.queue.send(url, event.body)
        record = self.records.load(request.run_id)
        assert record is not None  # written when the gathering started
        return record

    # --- screening -----------------------------------------------------------------------

    def _screen(
        self, request: ImportRequest, gathered: Gathered
    ) -> tuple[list[ManifestFile], ImportedSet]:
        """Decide each gathered file: its wheel identity (ranged reads of the staged copy),
        then :func:`~wheelgate.core.importing.screen` against nightly's archive pages."""
        files = {f.source.filename: f for f in gathered.files}
        metadata, refused = identities(
            self.staging,
            [(f.source.filename, f.key, f.etag, f.source.size, f.uri) for f in gathered.files],
            index=request.index,
            workers=self.workers,
        )
        for refusal in refused:
            del files[refusal.filename]
        screened = screen(
            [
                Candidate(
                    filename=name,
                    size=f.source.size,
                    sha256=f.sha256,
                    source=f.uri,
                    facts=gathered.facts.get(name, SourceFacts()),
                )
                for name, f in files.items()
            ],
            released_files(self.nightly_pages, request.index, files, workers=self.workers),
            index=request.index,
            allow_build_tag_rereleases=self.settings.allow_build_tag_rereleases,
            allow_new_local_labels=self.settings.allow_new_local_labels.allowed_in(request.index),
        )
        kept = [files[c.filename] for c in screened.accepted]
        provenance = {
            f.source.filename: Provenance(
                source=f.uri,
                upload_time=self._listed_time(gathered.facts.get(f.source.filename), f.source),
                yanked=gathered.facts.get(f.source.filename, SourceFacts()).yanked,
            )
            for f in kept
        }
        imported = ImportedSet(
            source=request.source,
            provenance=provenance,
            metadata={
                (f.key, f.etag): metadata[f.source.filename]
                for f in kept
                if f.source.filename in metadata
            },
            hashed=frozenset((f.key, f.etag) for f in kept if f.read),
            refused=tuple(
                sorted([*gathered.refused, *refused, *screened.refused], key=lambda r: r.filename)
            ),
        )
        manifest_files = [
            ManifestFile(filename=f.source.filename, sha256=f.sha256, size=f.source.size)
            for f in kept
        ]
        return manifest_files, imported

    def _listed_time(self, facts: SourceFacts | None, source: SourceObject) -> str:
        """When an imported file is listed as uploaded: its source page's upload time, else its
        source object's date (else now: a listing without dates)."""
        if facts is not None and facts.upload_time is not None:
            return facts.upload_time
        return upload_time(source.last_modified or self.clock())


# --- what the promoter and a dry run share ---------------------------------------------------


def source_facts(
    source: Bucket, location: ImportSource, projects: Iterable[str], *, workers: int
) -> dict[str, SourceFacts]:
    """What the source's own index pages say of its files, by file name: per project its JSON
    page, else its HTML page (a project with neither says nothing)."""
    pages = [source_page_keys(location, p) for p in sorted(projects)]

    def read(keys: tuple[str, str]) -> dict[str, SourceFacts]:
        for key, json_page in zip(keys, (True, False), strict=True):
            found = source.get(key)
            if found is not None:
                return read_source_page(found[0], json_page=json_page)
        return {}

    facts: dict[str, SourceFacts] = {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for page in pool.map(read, pages):
            facts.update(page)
    return facts


def released_files(
    nightly_pages: IndexStore, index: str, filenames: Iterable[str], *, workers: int
) -> dict[str, tuple[str, int]]:
    """Nightly's released files of the projects of ``filenames`` in ``index``: file name ->
    SHA-256, size, from the archive pages (every file ever released)."""
    projects = sorted({parse_distribution_filename(name).project for name in filenames})
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pages = list(pool.map(lambda p: nightly_pages.read_history(index, p), projects))
    return {e.filename: (e.sha256, e.size) for page, _ in pages for e in page.entries}


#: A stored file to check: its name, key, ETag (the version read), size and ``s3://`` URI.
StoredFile = tuple[str, str, str, int, str]


def identities(
    bucket: Bucket,
    files: Sequence[StoredFile],
    *,
    index: str,
    workers: int,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, CoreMetadata], list[RefusedFile]]:
    """Each wheel's METADATA, by file name, read with ranged reads where ``bucket`` holds it
    (:func:`~wheelgate.promotion.verify.wheel_identity`), and the wheels refused because they
    are not what their names say or cannot be read. ``progress(done, total)`` hears of each."""

    def one(found: StoredFile) -> CoreMetadata | RefusedFile | None:
        filename, key, etag, size, uri = found
        if not filename.endswith(".whl"):
            return None
        try:
            return wheel_identity(bucket, key, etag, size, filename, index=index)
        except PromotionRejected as rejection:
            return RefusedFile(
                filename=filename,
                reason=rejection.reason.value,
                message=rejection.message,
                source=uri,
            )

    metadata: dict[str, CoreMetadata] = {}
    refused: list[RefusedFile] = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for done, (found, outcome) in enumerate(zip(files, pool.map(one, files), strict=True), 1):
            if isinstance(outcome, RefusedFile):
                refused.append(outcome)
            elif outcome is not None:
                metadata[found[0]] = outcome
            if progress is not None:
                progress(done, len(files))
    return metadata, refused


@dataclass(frozen=True)
class Preview:
    """What an import would do now (``wheelgate import --dry-run``): of ``candidates`` source
    files (``skipped`` more written before ``since``), the ones it would import (``already``:
    nightly holds them with the same bytes) and the ones it would refuse, with why. The
    SHA-256 of a file is known only from the source index, if it gives one: the import has S3
    compute it, so a verdict that needs it says so."""

    candidates: int
    skipped: int
    accepted: tuple[Candidate, ...]
    already: frozenset[str]
    refused: tuple[RefusedFile, ...]


def preview(
    request: ImportRequest,
    *,
    source: Bucket,
    nightly_pages: IndexStore,
    allow_build_tag_rereleases: bool,
    workers: int,
    progress: Callable[[int, int], None] | None = None,
    allow_new_local_labels: bool = False,
) -> Preview:
    """What importing ``request`` would do, read without writing anything: the source listing
    and index pages, each wheel's METADATA and WHEEL (ranged reads of the source objects),
    nightly's archive pages. ``progress(done, total)`` hears of each wheel read."""
    location = request.source_location
    selection = select_files(source.list(location.prefix, direct=True), location, request.since)
    facts = source_facts(source, location, selection.projects, workers=workers)
    _, refused = identities(
        source,
        [(c.filename, c.key, c.etag, c.size, c.uri(source.name)) for c in selection.candidates],
        index=request.index,
        workers=workers,
        progress=progress,
    )
    gone = {r.filename for r in refused}
    kept = [c for c in selection.candidates if c.filename not in gone]
    screened = screen(
        [
            Candidate(
                filename=c.filename,
                size=c.size,
                # Only the source index can say, before S3 computes it during the import.
                sha256=facts.get(c.filename, SourceFacts()).sha256,
                source=c.uri(source.name),
                facts=facts.get(c.filename, SourceFacts()),
            )
            for c in kept
        ],
        released_files(nightly_pages, request.index, [c.filename for c in kept], workers=workers),
        index=request.index,
        allow_build_tag_rereleases=allow_build_tag_rereleases,
        allow_new_local_labels=allow_new_local_labels,
    )
    return Preview(
        candidates=len(selection.candidates),
        skipped=selection.skipped,
        accepted=screened.accepted,
        already=screened.already,
        refused=tuple(
            sorted([*selection.refused, *refused, *screened.refused], key=lambda r: r.filename)
        ),
    )
