"""What an import would do now, read without writing anything (``wheelgate import --dry-run``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from wheelgate.core.import_rules import Candidate, ImportRequest, SourceFacts, screen, select_files
from wheelgate.core.records import RefusedFile
from wheelgate.index.store import IndexStore
from wheelgate.promotion.importing.sources import identities, released_files, source_facts
from wheelgate.storage.bucket import Bucket


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
    progress: Callable[[int, int], None] | None = None,
    allow_new_local_labels: bool = False,
) -> Preview:
    """What importing ``request`` would do, read without writing anything: the source listing
    and index pages, each wheel's METADATA and WHEEL (ranged reads of the source objects),
    nightly's archive pages, ``source.limits.workers`` requests at a time.
    ``progress(done, total)`` hears of each wheel read."""
    location = request.source_location
    selection = select_files(source.list(location.prefix, direct=True), location, request.since)
    facts = source_facts(source, location, selection.projects)
    _, refused = identities(
        source,
        [(c.filename, c.key, c.etag, c.size, c.uri(source.name)) for c in selection.candidates],
        index=request.index,
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
        released_files(nightly_pages, request.index, [c.filename for c in kept]),
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
