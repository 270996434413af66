"""A run's own index: its staged files over nightly's files of their dependency closure, one
page per project and the root page naming them (:func:`publish_run_index`), and the nightly
files it offers beside the run's own (:func:`offered_files`), which the run's history entry
records."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from wheelgate.core.layout import (
    PAGES,
    RUN_PAGE_TAG_KEY,
    RUN_PAGE_TAG_VALUE,
    STAGING,
    key_url,
    project_dir,
)
from wheelgate.history.model import MAX_OFFER_FILES, OfferFile
from wheelgate.index.pages import (
    IndexEntry,
    PageFormatError,
    ProjectPage,
    absolute,
    staging_view,
)
from wheelgate.index.store import IndexStore, PageWrites
from wheelgate.staging.closure import nightly_closure
from wheelgate.staging.errors import StageError
from wheelgate.staging.local_artifacts import LocalArtifact
from wheelgate.storage.bucket import Bucket


def nightly_root(nightly: Bucket, index: str) -> tuple[str, ...]:
    """The projects nightly's root page of ``index`` lists. Raises :class:`StageError` when the
    page is not a root page: ``index`` is inside another directory."""
    try:
        return IndexStore(nightly).read_root(index)[0]
    except PageFormatError as exc:
        raise unreadable_nightly(index, exc, "nothing was staged") from exc


def unreadable_nightly(index: str, exc: PageFormatError, then: str) -> StageError:
    """The error for nightly's pages of ``index`` that cannot be read (``exc``), saying what
    was done (``then``)."""
    return StageError(
        f"nightly's pages of {index!r} cannot be read ({exc}): is {index!r} inside another "
        f"index directory, or another inside it? Their pages would overwrite each other's; "
        f"stage into a directory of WHEELGATE_ALLOWED_INDEXES ({then})"
    )


def run_closure(
    nightly: Bucket, index: str, artifacts: Sequence[LocalArtifact]
) -> dict[str, ProjectPage]:
    """Nightly's page of every project of ``artifacts`` and of their dependency closure
    (:mod:`wheelgate.staging.closure`), by project. Raises
    :class:`~wheelgate.index.pages.PageFormatError` for a page that is not a project page."""
    roots: dict[str, list[bytes]] = defaultdict(list)
    for artifact in artifacts:
        own = roots[project_dir(artifact.project)]
        if artifact.metadata is not None:
            own.append(artifact.metadata.content)
    return nightly_closure(nightly, index, roots)


def _run_pages(staging: Bucket, run_id: str) -> IndexStore:
    """The store of the run's own index pages."""
    # The tag selects the lifecycle rule that expires the pages before the files they list.
    return IndexStore(
        staging,
        prefix=STAGING.run_pages_prefix(run_id),
        tags={RUN_PAGE_TAG_KEY: RUN_PAGE_TAG_VALUE},
    )


def run_index_projects(staging: Bucket, run_id: str, index: str) -> frozenset[str]:
    """The projects the run's index of ``index`` names already (its root page, one read):
    those an earlier call of the run staged, and the closure's that nightly held then. A page
    that is not a root page names none."""
    try:
        projects = _run_pages(staging, run_id).read_root(index)[0]
    except PageFormatError:
        return frozenset()
    return frozenset(project_dir(p) for p in projects)


def offered_files(closure: Mapping[str, ProjectPage]) -> tuple[OfferFile, ...]:
    """The nightly files the run's index offers beside the run's own: every file the pages of
    its ``closure`` list (a yanked one aside, which a resolver does not pick), by name and
    SHA-256 as nightly's pages give them. None past
    :data:`~wheelgate.history.model.MAX_OFFER_FILES`: a part of an offer would let a resolver
    pick what the run's index would not have."""
    files = {
        e.filename: OfferFile(filename=e.filename, sha256=e.sha256)
        for page in closure.values()
        for e in page.entries
        if e.yanked is False
    }
    if len(files) > MAX_OFFER_FILES:
        return ()
    return tuple(files[name] for name in sorted(files))


def publish_run_index(
    *,
    staging: Bucket,
    nightly: Bucket,
    nightly_base_url: str,
    run_id: str,
    index: str,
    artifacts: Sequence[LocalArtifact],
    now: str,
    closure: Mapping[str, ProjectPage] | None = None,
) -> PageWrites:
    """Write the run's index for ``index``: a page for every project of ``artifacts`` and of
    their dependency closure in nightly (:mod:`wheelgate.staging.closure`: what their
    ``Requires-Dist``, and that of nightly's files of those projects, name, for any marker or
    extra), each listing the run's own staged files (relative links) over nightly's files as
    they stand now (absolute links), and the root page naming them.

    So the run's tests resolve dependencies that live only in nightly, and install no other
    run's bytes; the cost follows the run and its closure, not the nightly directory. Pages
    are updated with conditional writes and keep the run's files of earlier calls, and the
    root page only gains names, so several build jobs staging into one run's directory, at
    once or one after another, extend its index and lose no entry.
    """
    by_project: dict[str, list[LocalArtifact]] = defaultdict(list)
    for artifact in artifacts:
        by_project[project_dir(artifact.project)].append(artifact)
    run_pages = _run_pages(staging, run_id)
    if closure is None:
        closure = run_closure(nightly, index, artifacts)
    projects = sorted(p for p, page in closure.items() if page.entries or p in by_project)

    def publish(project: str) -> PageWrites:
        page_dir = PAGES.project_dir(index, project)
        run_page_dir = run_pages.prefix + page_dir
        entries = [
            IndexEntry.for_file(
                a.filename,
                key=STAGING.artifact(run_id, index, a.filename),
                page_dir=run_page_dir,
                sha256=a.digest,
                size=a.size,
                uploaded=now,
                metadata=a.metadata,
            )
            for a in by_project.get(project, ())
        ]
        borrowed = absolute(closure[project].entries, key_url(nightly_base_url, page_dir))
        return run_pages.update_project(index, project, staging_view(borrowed, add=entries))

    writes = PageWrites()
    with ThreadPoolExecutor(max_workers=staging.limits.workers) as pool:
        for written in pool.map(publish, projects):
            writes.extend(written)
    writes.extend(run_pages.add_projects(index, projects))
    return writes
