"""What the import route and a dry run (:mod:`.preview`) read alike: the source's own index
pages, nightly's released files, and each wheel's identity read with ranged reads."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

from wheelgate.core.errors import PromotionRejected
from wheelgate.core.import_rules import SourceFacts, source_page_keys
from wheelgate.core.import_sources import ImportSource
from wheelgate.core.manifest import parse_distribution_filename
from wheelgate.core.records import RefusedFile
from wheelgate.core.timestamps import normalized_upload_time
from wheelgate.core.wheelmeta import CoreMetadata
from wheelgate.index.simple_api import PageFormatError, read_project_page
from wheelgate.index.store import IndexStore
from wheelgate.promotion.verification import wheel_identity
from wheelgate.storage.bucket import Bucket


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
                return read_source_page(found[0], html=not json_page)
        return {}

    facts: dict[str, SourceFacts] = {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for page in pool.map(read, pages):
            facts.update(page)
    return facts


def read_source_page(raw: bytes, *, html: bool) -> dict[str, SourceFacts]:
    """The facts a project page of the source index (PEP 691 JSON, or with ``html`` PEP 503)
    gives, by file name. A page that cannot be read gives none (the import then keeps the
    objects' own dates): it was written by another tool, and nothing released depends on it but
    what it says of yank state and upload time."""
    try:
        page = read_project_page(raw, html=html)
    except PageFormatError:
        return {}
    return {
        f.filename: SourceFacts(
            sha256=f.sha256, yanked=f.yanked, upload_time=normalized_upload_time(f.upload_time)
        )
        for f in page.files
    }


def released_files(
    nightly_pages: IndexStore, index: str, filenames: Iterable[str], *, workers: int
) -> dict[str, tuple[str, int]]:
    """Nightly's released files of the projects of ``filenames`` in ``index``: file name ->
    SHA-256, size, from the archive pages (every file ever released)."""
    projects = sorted({parse_distribution_filename(name).project for name in filenames})
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pages = list(pool.map(lambda p: nightly_pages.read_archive(index, p), projects))
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
    (:func:`~wheelgate.promotion.verification.wheel_identity`), and the wheels refused because they
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
