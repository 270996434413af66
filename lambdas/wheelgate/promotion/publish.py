"""Publishing released files: the index pages that list them, in both buckets, and the CDN.

Nightly's project pages gain the released files (:func:`add_missing` keeps what a page already
lists, so publishing again changes nothing); each project's staging page is then re-merged over
its nightly page as it now stands; a new project joins the root pages; the touched pages are
invalidated on the CDN. A yank changes a listed file's state through the same pages. Runs only
once every copy is verified: a page never lists a file that nightly does not hold.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from wheelgate.core.layout import PAGES
from wheelgate.core.manifest import parse_distribution_filename
from wheelgate.core.settings import PromoterSettings
from wheelgate.index.pages import (
    IndexEntry,
    ProjectPage,
    absolute,
    merge_entries,
    staging_view,
)
from wheelgate.index.store import IndexStore, PageWrites
from wheelgate.index.yank import YankRequest, apply_yank
from wheelgate.promotion.verify import ProjectPages, VerifiedSet


class Invalidator(Protocol):
    """A CDN whose cached copies of some paths can be dropped."""

    def invalidate(self, distribution_id: str, keys: Sequence[str]) -> list[str]:
        """Invalidate ``keys`` on distribution ``distribution_id``; return the request ids."""
        ...


def add_missing(
    entries: Iterable[IndexEntry],
) -> Callable[[tuple[IndexEntry, ...]], tuple[IndexEntry, ...]]:
    """Page transform that adds ``entries`` but keeps an entry the page already lists (its
    original upload time stays), so re-publishing a set is a no-op."""
    entries = tuple(entries)

    def transform(current: tuple[IndexEntry, ...]) -> tuple[IndexEntry, ...]:
        present = {e.filename for e in current}
        return merge_entries(current, [e for e in entries if e.filename not in present])

    return transform


class Publisher:
    """Updates the index pages of nightly and staging, then invalidates them on the CDN
    (``invalidator`` is ``None`` where there is no CDN)."""

    def __init__(
        self,
        *,
        settings: PromoterSettings,
        staging_pages: IndexStore,
        nightly_pages: IndexStore,
        invalidator: Invalidator | None,
    ) -> None:
        self.settings = settings
        self.staging_pages = staging_pages
        self.nightly_pages = nightly_pages
        self.invalidator = invalidator

    def publish(
        self, sets: Sequence[VerifiedSet], entries: Sequence[IndexEntry]
    ) -> tuple[PageWrites, PageWrites]:
        """List released files on the nightly pages of their projects, then refresh the
        staging pages over them.

        ``entries`` are the released files' entries in plan order, as
        :meth:`~wheelgate.promotion.release.Releaser.release` returns them. Returns the page
        writes of nightly and of staging, the pages to invalidate. Pages read while verifying
        are reused, so a page costs two writes when nobody else wrote it meanwhile (and a
        re-read when somebody did).
        """
        by_page: dict[tuple[str, str], list[IndexEntry]] = defaultdict(list)
        known: dict[tuple[str, str], ProjectPages] = {}
        jobs = [(s, step) for s in sets for step in s.plan.steps]
        for (verified, step), entry in zip(jobs, entries, strict=True):
            page_key = (step.index, step.file.distribution.project)
            by_page[page_key].append(entry)
            known[page_key] = verified.pages[step.file.distribution.project]
        nightly_writes, staging_writes = PageWrites(), PageWrites()
        for (index, project), page_entries in sorted(by_page.items()):
            pages = known[(index, project)]
            written = self.nightly_pages.update_project(
                index, project, add_missing(page_entries), known=pages.nightly
            )
            # Invalidate the project's pages even when this attempt found them written already:
            # an earlier attempt may have failed between writing them and invalidating.
            touched = [PAGES.project_page(index, project, json=j) for j in (True, False)]
            nightly_writes.extend(PageWrites(touched))
            assert written.page is not None
            self._refresh_staging_page(
                index,
                written.page,
                drop=[e.filename for e in page_entries],
                known=pages.staging,
            )
            staging_writes.extend(PageWrites(touched))
        projects_by_index: dict[str, set[str]] = defaultdict(set)
        for index, project in by_page:
            projects_by_index[index].add(project)
        for index, projects in sorted(projects_by_index.items()):
            nightly_writes.extend(self.nightly_pages.add_projects(index, projects))
            staging_writes.extend(self.staging_pages.add_projects(index, projects))
        return nightly_writes, staging_writes

    def yank(self, request: YankRequest) -> tuple[PageWrites, PageWrites]:
        """Set a released file's yank state (PEP 592) on its nightly page, then refresh its
        staging page over it. Returns the page writes of nightly and of staging."""
        yanked: str | bool = (request.reason or True) if request.yanked else False
        project = parse_distribution_filename(request.filename).project
        nightly = self.nightly_pages.update_project(
            request.index, project, lambda current: apply_yank(current, request.filename, yanked)
        )
        assert nightly.page is not None
        staging = self._refresh_staging_page(request.index, nightly.page, drop=())
        return nightly, staging

    def invalidate(self, nightly: PageWrites, staging: PageWrites) -> list[str]:
        """Invalidate the written pages on the distributions the settings name; return the
        invalidation ids (none without an invalidator)."""
        if self.invalidator is None:
            return []
        ids: list[str] = []
        for distribution, writes in (
            (self.settings.nightly_distribution_id, nightly),
            (self.settings.staging_distribution_id, staging),
        ):
            if distribution and writes.keys:
                ids += self.invalidator.invalidate(distribution, writes.keys)
        return ids

    def _refresh_staging_page(
        self,
        index: str,
        nightly_page: ProjectPage,
        *,
        drop: Iterable[str],
        known: tuple[ProjectPage, str | None] | None = None,
    ) -> PageWrites:
        """Re-merge a project's staging page over its nightly page as it now stands, dropping
        the staged entries in ``drop`` (now released)."""
        borrowed = absolute(
            nightly_page.entries,
            self.settings.nightly_base_url + PAGES.project_dir(index, nightly_page.name),
        )
        return self.staging_pages.update_project(
            index, nightly_page.name, staging_view(borrowed, drop=drop), known=known
        )
