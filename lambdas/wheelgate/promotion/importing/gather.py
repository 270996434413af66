"""Gathering: an import's candidates copied server-side into staging, each once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timedelta

from wheelgate.core.errors import Reason, TransientError
from wheelgate.core.import_rules import ImportRequest, SourceFacts, SourceObject, select_files
from wheelgate.core.layout import STAGING
from wheelgate.core.limits import IMPORT_GATHER_SECONDS, IMPORT_PROGRESS_SECONDS
from wheelgate.core.objects import (
    META_IMPORT_SOURCE,
    META_SHA256,
    META_SOURCE_ETAG,
    ListedObject,
)
from wheelgate.core.records import PromotionRecord, RefusedFile
from wheelgate.promotion.importing.progress import ImportProgress
from wheelgate.promotion.importing.sources import source_facts
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.errors import PreconditionFailed


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


class Budget:
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


class Gatherer:
    """Copies an import's candidates into staging (within staging's limits: its ``workers``
    at a time, its copy limits), writing the request's progress."""

    def __init__(
        self,
        *,
        staging: Bucket,
        progress: ImportProgress,
        clock: Callable[[], datetime],
    ) -> None:
        self.staging = staging
        self.progress = progress
        self.clock = clock

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
        budget = Budget(self.clock, self.clock() + timedelta(seconds=IMPORT_GATHER_SECONDS))
        location = request.source_location
        source = self.staging.sibling(location.bucket)
        selection = select_files(source.list(location.prefix, direct=True), location, request.since)
        facts = source_facts(source, location, selection.projects)
        area = STAGING.run_index_prefix(request.run_id, request.index)
        staged = {obj.key: obj for obj in self.staging.list(area, direct=True)}
        total = len(selection.candidates)
        record = self.progress.started(request, digest, actor, existing, total)
        record = self.progress.gathered(record, len(staged), total, [])
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
                record = self.progress.gathered(
                    record, total - remaining, total, [f.read for f in files]
                )
        done = len(files) + len(refused) - len(selection.refused)
        self.progress.gathered(record, done, total, [f.read for f in files])
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
        """``work`` of each candidate, staging's ``limits.workers`` at a time, as each ends."""
        with ThreadPoolExecutor(max_workers=self.staging.limits.workers) as pool:
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
        budget: Budget,
    ) -> GatheredFile | RefusedFile | None:
        """Gather one candidate into ``key``: copy it, or look at the copy an earlier attempt
        made. ``None``: not started, the invocation's gathering time is up."""
        uri = candidate.uri(source.name)
        if staged is None:
            if not budget.allows():
                return None
            sha256 = None
            if candidate.size > self.staging.limits.single_request_limit:
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
