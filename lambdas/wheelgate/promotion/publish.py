"""Publishing released files: the nightly index pages that list them, and the CDN.

Nightly's archive pages gain the released files (:func:`add_missing` keeps what a page already
lists, so publishing again changes nothing) and each project page lists what the directory's
listing retention keeps of them (:mod:`wheelgate.index.archive`); a new project joins both root
pages; the touched pages are invalidated on the CDN. A yank changes a file's state through the
same pages.
Runs only once every copy is verified: a page never lists a file that nightly does not hold.

Staging has no shared pages to keep in step: each run's index is written by ``wheelgate
stage`` under the run's own folder, and a later run's index reads nightly as it then stands.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Protocol

from wheelgate.core.manifest import parse_distribution_filename
from wheelgate.core.settings import PromoterSettings
from wheelgate.index.archive import add_projects, page_keys, update_archive
from wheelgate.index.pages import IndexEntry, ProjectPage, merge_entries
from wheelgate.index.store import IndexStore, PageWrites, pages_must_parse
from wheelgate.index.yank import YankRequest, apply_yank
from wheelgate.promotion.verification import VerifiedSet


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
    """Updates nightly's index pages, then invalidates them on the CDN (``invalidator`` is
    ``None`` where there is no CDN). Listing retention counts days from the decision's time,
    which each publication is given."""

    def __init__(
        self,
        *,
        settings: PromoterSettings,
        nightly_pages: IndexStore,
        invalidator: Invalidator | None,
    ) -> None:
        self.settings = settings
        self.nightly_pages = nightly_pages
        self.invalidator = invalidator

    def publish(
        self, sets: Sequence[VerifiedSet], entries: Sequence[IndexEntry], *, at: datetime
    ) -> PageWrites:
        """List released files on the nightly pages of their projects (decided ``at``).

        ``entries`` are the released files' entries in plan order, as
        :meth:`~wheelgate.promotion.release.Releaser.release` returns them. Returns the page
        writes (the pages to invalidate) and the files that left the listings. The archive
        pages read while verifying are reused; the listing page is read again (its entries
        follow from the archive's, only its ETag is needed).
        """
        by_page: dict[tuple[str, str], list[IndexEntry]] = defaultdict(list)
        known: dict[tuple[str, str], tuple[ProjectPage, str | None]] = {}
        jobs = [(s, step) for s in sets for step in s.plan.steps]
        for (verified, step), entry in zip(jobs, entries, strict=True):
            page_key = (step.index, step.file.distribution.project)
            by_page[page_key].append(entry)
            known[page_key] = verified.pages[step.file.distribution.project]
        return self._publish(by_page, known, at)

    def publish_entries(
        self, entries: Sequence[tuple[str, str, IndexEntry]], *, at: datetime
    ) -> PageWrites:
        """List released files, given as ``(index, project, entry)`` in plan order, on their
        nightly pages, reading each page as it stands (a fan-out job publishes long after
        verification read them). Returns the page writes, as :meth:`publish` does."""
        by_page: dict[tuple[str, str], list[IndexEntry]] = defaultdict(list)
        for index, project, entry in entries:
            by_page[(index, project)].append(entry)
        return self._publish(by_page, {}, at)

    def _publish(
        self,
        by_page: Mapping[tuple[str, str], Sequence[IndexEntry]],
        known: Mapping[tuple[str, str], tuple[ProjectPage, str | None]],
        now: datetime,
    ) -> PageWrites:
        writes = PageWrites()
        for (index, project), page_entries in sorted(by_page.items()):
            with pages_must_parse(index):
                written = update_archive(
                    self.nightly_pages,
                    index,
                    project,
                    add_missing(page_entries),
                    rule=self.settings.listing_retention.rule_for(index),
                    now=now,
                    known=known.get((index, project)),
                )
            # Invalidate the project's pages even when this attempt found them written already:
            # an earlier attempt may have failed between writing them and invalidating.
            writes.extend(page_keys(index, project))
            writes.extend(written)
        projects_by_index: dict[str, set[str]] = defaultdict(set)
        for index, project in by_page:
            projects_by_index[index].add(project)
        for index, projects in sorted(projects_by_index.items()):
            with pages_must_parse(index):
                writes.extend(add_projects(self.nightly_pages, index, projects))
        return writes

    def yank(self, request: YankRequest, *, at: datetime) -> PageWrites:
        """Set a released file's yank state (PEP 592) on its archive page, and list what the
        directory's retention keeps (a yank can change which versions count). Raises
        :class:`~wheelgate.core.errors.PromotionRejected` when nightly never released it, or
        its page cannot be read back (``page-unreadable``)."""
        yanked: str | bool = (request.reason or True) if request.yanked else False
        project = parse_distribution_filename(request.filename).project
        with pages_must_parse(request.index):
            return update_archive(
                self.nightly_pages,
                request.index,
                project,
                lambda current: apply_yank(current, request.filename, yanked),
                rule=self.settings.listing_retention.rule_for(request.index),
                now=at,
            )

    def invalidate(self, writes: PageWrites) -> list[str]:
        """Invalidate the written pages on the nightly distribution; return the invalidation
        ids (none without an invalidator or a distribution)."""
        distribution = self.settings.nightly_distribution_id
        if self.invalidator is None or not distribution or not writes.keys:
            return []
        return self.invalidator.invalidate(distribution, writes.keys)
