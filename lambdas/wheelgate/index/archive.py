"""A project's archive and its listing: the archive page is written first, the listing follows.

The archive page (``<index>/_archive/<project>/``) lists every file ever released and is the
state every change starts from; the listing page (``<index>/<project>/``) is derived from it by
the directory's :class:`~wheelgate.core.settings.RetentionRule`. Promotion, yank and rebuild all
change a project through :func:`update_archive`, so the two pages never disagree for long: a
crash between them leaves the listing one change behind, and the retry (whose archive update
finds nothing to do) writes it.

The listing is never written from an archive read before the listing itself: each attempt of
the listing's conditional write reads the listing (its ETag), then the archive as it stands,
and lists what the rule keeps of that. Of two writers changing one project at once, the one
whose listing write comes last read the archive after the other's archive write, so the
listing ends with both changes (a yank racing a promotion keeps the promotion's file listed).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from wheelgate.core.layout import PAGES
from wheelgate.core.setting_values import RetentionRule
from wheelgate.index.pages import IndexEntry, ProjectPage
from wheelgate.index.retention import retain
from wheelgate.index.store import EntriesTransform, IndexStore, PageWrites


def update_archive(
    pages: IndexStore,
    index: str,
    project: str,
    transform: EntriesTransform,
    *,
    rule: RetentionRule,
    now: datetime,
    known: tuple[ProjectPage, str | None] | None = None,
) -> PageWrites:
    """Apply ``transform`` to a project's archive, then list what ``rule`` keeps of it.

    ``pages`` is the listing store; ``known`` the archive (page and ETag) the caller
    read already with :meth:`~wheelgate.index.store.IndexStore.read_archive`. Returns the
    writes of both pages, with ``page`` the listing as written and ``delisted`` the files the
    listing had before and no longer has. Raises what
    :meth:`~wheelgate.index.store.IndexStore.update_project` raises, and whatever
    ``transform`` raises.
    """
    archive = pages.archive_view()
    if known is None:
        known = archive.read_archive(index, project)
    archived = archive.update_project(index, project, transform, known=known)
    left: list[str] = []

    def relist(current: tuple[IndexEntry, ...]) -> tuple[IndexEntry, ...]:
        # Read here, after the listing this attempt changes: see the module's docstring.
        entries = archive.read_archive(index, project)[0].entries
        listed = retain(entries, rule, now=now).listed
        kept = {e.filename for e in listed}
        left[:] = [e.filename for e in current if e.filename not in kept]
        return listed

    listing = pages.update_project(index, project, relist)
    writes = PageWrites()
    writes.extend(archived)
    writes.extend(listing)
    writes.page = listing.page
    if left:
        writes.delisted[index] = sorted(left)
    return writes


def add_projects(pages: IndexStore, index: str, projects: Iterable[str]) -> PageWrites:
    """Make sure the root pages of both the listing and the archive list ``projects``."""
    projects = tuple(projects)
    writes = pages.add_projects(index, projects)
    writes.extend(pages.archive_view().add_projects(index, projects))
    return writes


def page_keys(index: str, project: str) -> PageWrites:
    """Keys of all four pages of a project (listing and archive, HTML and JSON), to invalidate
    even when this attempt found them written already."""
    return PageWrites(
        [
            PAGES.project_page(index, project, json=j, archive=a)
            for a in (False, True)
            for j in (True, False)
        ]
    )
