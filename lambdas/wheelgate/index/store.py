"""Incremental, concurrency-safe updates of the index pages in one bucket.

Each project page pair is updated on its own: the JSON page is read (with its ETag), changed by a
pure function, and written back with ``If-Match`` (``If-None-Match: *`` for a new page). Losing
that race means another writer committed first; we re-read and re-apply, so no entry is lost.
The HTML page is written first and the JSON page is the commit point: every committed JSON page
was preceded by an HTML page rendered from the same entries, so a crash at any moment leaves
the pair consistent once the update is retried, and a retry never finds "nothing to do" while
the HTML lags. Three requests per page when nobody else is writing: read, HTML, JSON.

A promotion touches only its own projects' pages, plus the root page when a project is new: its
cost does not depend on how many other files the directory holds.

A directory has two sets of pages: its listing (what ``--index-url <dir>/`` reads, which listing
retention may trim) and its archive (``<dir>/_archive/``, every file ever released). An archive
store (:meth:`IndexStore.archive_view`) reads and writes the archive pages but hands out and
takes entries linked as from the listing's pages, so entries of both compare equal.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from wheelgate.core.errors import TransientError
from wheelgate.core.layout import PAGES, project_dir
from wheelgate.core.settings import PageRetention
from wheelgate.index.pages import (
    HTML_CONTENT_TYPE,
    JSON_CONTENT_TYPE,
    PAGE_CACHE_CONTROL,
    IndexEntry,
    ProjectPage,
    parse_project_json,
    parse_root_json,
    rebase,
    render_project_html,
    render_project_json,
    render_root_html,
    render_root_json,
)
from wheelgate.storage.bucket import Bucket, ObjectLock, retry_delay

EntriesTransform = Callable[[tuple[IndexEntry, ...]], tuple[IndexEntry, ...]]


@dataclass
class PageWrites:
    """Keys of the pages an update changed (for CloudFront invalidation), the page as it
    stands after the update (for callers that need it next), and the files listing retention
    took off the listings, by index directory (for the promotion record)."""

    keys: list[str] = field(default_factory=list)
    page: ProjectPage | None = None
    delisted: dict[str, list[str]] = field(default_factory=dict)

    def extend(self, other: PageWrites) -> None:
        self.keys.extend(k for k in other.keys if k not in self.keys)
        for index, names in other.delisted.items():
            mine = self.delisted.setdefault(index, [])
            mine.extend(n for n in names if n not in mine)


class IndexStore:
    """The simple-repository pages of one bucket, or of one run's index in it (``prefix``
    ``runs/<run_id>/``: the same layout under the run's folder); with ``archive``, the
    directories' archive pages instead of their listings.

    Every page version is written with ``retention`` (nightly: a lock shorter than the files',
    so replaced versions can expire) and ``tags`` (a run's pages: the tag their lifecycle rule
    selects), when given. Only this class writes index pages, so only pages get them.
    """

    def __init__(
        self,
        bucket: Bucket,
        *,
        prefix: str = "",
        retention: PageRetention | None = None,
        tags: Mapping[str, str] | None = None,
        archive: bool = False,
        max_attempts: int = 25,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix
        self.retention = retention
        self.tags = dict(tags or {})
        self.archive = archive
        self._max_attempts = max_attempts
        self._sleep = sleep
        self._clock = clock

    def _lock(self) -> ObjectLock | None:
        # Counted from each write: a version is held `days` from when it was written.
        if self.retention is None:
            return None
        return ObjectLock(self.retention.mode, self.retention.until(self._clock()))

    def archive_view(self) -> IndexStore:
        """The store of the same directories' archive pages."""
        return IndexStore(
            self.bucket,
            prefix=self.prefix,
            retention=self.retention,
            tags=self.tags,
            archive=True,
            max_attempts=self._max_attempts,
            sleep=self._sleep,
            clock=self._clock,
        )

    def _stored(self, index: str, project: str, entries: tuple[IndexEntry, ...]) -> ProjectPage:
        """The page to write: entries linked from this store's page directory."""
        if self.archive:
            entries = rebase(
                entries,
                PAGES.project_dir(index, project),
                PAGES.project_dir(index, project, archive=True),
            )
        return ProjectPage(name=project, entries=entries)

    def _loaded(self, index: str, page: ProjectPage) -> ProjectPage:
        """A read page with entries linked as from the listing's page directory."""
        if not self.archive:
            return page
        entries = rebase(
            page.entries,
            PAGES.project_dir(index, page.name, archive=True),
            PAGES.project_dir(index, page.name),
        )
        return ProjectPage(name=page.name, entries=entries)

    def _commit_pair(
        self,
        html_key: str,
        html: str,
        json_key: str,
        json_text: str,
        etag: str | None,
        attempt: int,
    ) -> bool:
        """Write the HTML page, then the JSON page conditionally on ``etag``; ``False`` (after
        a backoff) when another writer committed first and the caller must re-read."""
        self.bucket.put(
            html_key,
            html.encode(),
            content_type=HTML_CONTENT_TYPE,
            cache_control=PAGE_CACHE_CONTROL,
            lock=self._lock(),
            tags=self.tags,
        )
        if self.bucket.commit(
            json_key,
            json_text.encode(),
            etag=etag,
            content_type=JSON_CONTENT_TYPE,
            cache_control=PAGE_CACHE_CONTROL,
            lock=self._lock(),
            tags=self.tags,
        ):
            return True
        # Our HTML page is rewritten by the retry (or by the writer that won).
        self._sleep(retry_delay(attempt))
        return False

    def read_project(self, index: str, project: str) -> tuple[ProjectPage, str | None]:
        """The current page (empty if none) and the ETag of its JSON form."""
        name = project_dir(project)
        found = self.bucket.get(
            self.prefix + PAGES.project_page(index, name, json=True, archive=self.archive)
        )
        if found is None:
            return ProjectPage(name=name, entries=()), None
        body, etag = found
        return self._loaded(index, parse_project_json(body)), etag

    def read_history(self, index: str, project: str) -> tuple[ProjectPage, str | None]:
        """Every released file of a project: its archive page and that page's ETag (on an
        archive store). Where the archive page does not exist yet (a directory published
        before archives existed), the listing's entries with no ETag, so that the first
        archive write creates the page from them."""
        archive = self if self.archive else self.archive_view()
        page, etag = archive.read_project(index, project)
        if etag is not None:
            return page, etag
        listing = IndexStore(self.bucket, prefix=self.prefix)
        return listing.read_project(index, project)[0], None

    def update_project(
        self,
        index: str,
        project: str,
        transform: EntriesTransform,
        *,
        known: tuple[ProjectPage, str | None] | None = None,
    ) -> PageWrites:
        """Apply ``transform`` to a project's entries and write both page formats.

        ``known`` is the page and ETag the caller read already (saves a request; a stale one
        only costs a lost condition and a re-read). Raises :class:`TransientError` when the
        page keeps changing under us for too long.
        """
        name = project_dir(project)
        json_key = self.prefix + PAGES.project_page(index, name, json=True, archive=self.archive)
        for attempt in range(self._max_attempts):
            page, etag = known if known is not None else self.read_project(index, name)
            known = None
            entries = transform(page.entries)
            if entries == page.entries and etag is not None:
                return PageWrites(page=page)
            new_page = ProjectPage(name=name, entries=entries)
            stored = self._stored(index, name, entries)
            html_key = self.prefix + PAGES.project_page(index, name, archive=self.archive)
            html, json_text = render_project_html(stored), render_project_json(stored)
            if not self._commit_pair(html_key, html, json_key, json_text, etag, attempt):
                continue
            return PageWrites([json_key, html_key], page=new_page)
        raise TransientError(f"{json_key} kept changing; gave up after {self._max_attempts} tries")

    def read_root(self, index: str) -> tuple[tuple[str, ...], str | None]:
        found = self.bucket.get(
            self.prefix + PAGES.root_page(index, json=True, archive=self.archive)
        )
        if found is None:
            return (), None
        body, etag = found
        return parse_root_json(body), etag

    def add_projects(self, index: str, projects: Iterable[str]) -> PageWrites:
        """Make sure the root page lists ``projects``; write only if the set changes."""
        wanted = {project_dir(p) for p in projects}
        json_key = self.prefix + PAGES.root_page(index, json=True, archive=self.archive)
        for attempt in range(self._max_attempts):
            current, etag = self.read_root(index)
            if wanted <= set(current) and etag is not None:
                return PageWrites()
            names = sorted(wanted | set(current))
            html_key = self.prefix + PAGES.root_page(index, archive=self.archive)
            html, json_text = render_root_html(names), render_root_json(names)
            if not self._commit_pair(html_key, html, json_key, json_text, etag, attempt):
                continue
            return PageWrites([json_key, html_key])
        raise TransientError(f"{json_key} kept changing; gave up after {self._max_attempts} tries")
