"""Incremental, concurrency-safe updates of the index pages in one bucket.

Each project page pair is updated on its own through
:func:`~wheelgate.storage.conditional.read_modify_write`: the JSON page (the state) is read
with its ETag, changed by a pure transform of the entries it holds, and written back with
``If-Match`` (``If-None-Match: *`` for a new page) after the HTML page rendered from the same
entries. Losing that race means another writer committed first; the transform is applied again
to the page as it then stands, so no entry is lost, and the HTML page is written again. A crash
between the two writes leaves the JSON page without the change, so the retry writes both.
Three requests per page when nobody else is writing: read, HTML, JSON.

A promotion touches only its own projects' pages, plus the root page when a project is new: its
cost does not depend on how many other files the directory holds.

A directory has two sets of pages: its listing (what ``--index-url <dir>/`` reads, which listing
retention may trim) and its archive (``<dir>/_archive/``, every file ever released). An archive
store (:meth:`IndexStore.archive_view`) reads and writes the archive pages but hands out and
takes entries linked as from the listing's pages, so entries of both compare equal.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.layout import PAGES, project_dir
from wheelgate.core.setting_values import PageRetention
from wheelgate.index.pages import (
    HTML_CONTENT_TYPE,
    JSON_CONTENT_TYPE,
    PAGE_CACHE_CONTROL,
    IndexEntry,
    PageFormatError,
    ProjectPage,
    parse_project_json,
    rebase,
    render_project_html,
    render_project_json,
    render_root_html,
    render_root_json,
)
from wheelgate.index.simple_api import read_root_page
from wheelgate.storage.bucket import Bucket, ObjectLock
from wheelgate.storage.conditional import (
    MAX_ATTEMPTS,
    Put,
    Rendered,
    StateUpdate,
    read_modify_write,
)

P = TypeVar("P")
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
        max_attempts: int = MAX_ATTEMPTS,
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

    def _page(self, key: str, text: str, content_type: str) -> Put:
        """One page version to write, with this store's lock and tags."""
        return Put(
            key,
            text.encode(),
            content_type=content_type,
            cache_control=PAGE_CACHE_CONTROL,
            lock=self._lock(),
            tags=self.tags,
        )

    def _pair(self, html_key: str, html: str, json_key: str, json_text: str) -> Rendered:
        """A page pair as written: the HTML page first, the JSON page (the state) last."""
        return Rendered(
            state=self._page(json_key, json_text, JSON_CONTENT_TYPE),
            derived=(self._page(html_key, html, HTML_CONTENT_TYPE),),
        )

    def read_project(self, index: str, project: str) -> tuple[ProjectPage, str | None]:
        """The current page (empty if none) and the ETag of its JSON form. Raises
        :class:`~wheelgate.index.pages.PageFormatError` naming the key of a page that is not a
        project page."""
        name = project_dir(project)
        key = self.prefix + PAGES.project_page(index, name, json=True, archive=self.archive)
        found = self.bucket.get(key)
        if found is None:
            return ProjectPage(name=name, entries=()), None
        body, etag = found
        return self._loaded(index, _parsed(key, body, parse_project_json)), etag

    def read_archive(self, index: str, project: str) -> tuple[ProjectPage, str | None]:
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
        only costs a lost condition and a re-read). Returns the keys written (none when the
        page already held the change) and the page as it stands after the update. Raises
        :class:`~wheelgate.core.errors.TransientError` when the page keeps changing under us
        for too long, and what ``transform`` raises.
        """
        name = project_dir(project)
        json_key = self.prefix + PAGES.project_page(index, name, json=True, archive=self.archive)
        html_key = self.prefix + PAGES.project_page(index, name, archive=self.archive)

        def decide(page: ProjectPage) -> StateUpdate[ProjectPage]:
            entries = transform(page.entries)
            new_page = ProjectPage(name=name, entries=entries)
            return StateUpdate(new_page, entries != page.entries, lambda: render(new_page))

        def render(page: ProjectPage) -> Rendered:
            stored = self._stored(index, name, page.entries)
            return self._pair(
                html_key, render_project_html(stored), json_key, render_project_json(stored)
            )

        outcome = read_modify_write(
            self.bucket,
            lambda: self.read_project(index, name),
            decide,
            known=known,
            max_attempts=self._max_attempts,
            sleep=self._sleep,
        )
        return PageWrites([json_key, html_key] if outcome.written else [], page=outcome.result)

    def read_root(self, index: str) -> tuple[tuple[str, ...], str | None]:
        """The projects the root page lists (none if there is no page) and its ETag. Raises
        :class:`~wheelgate.index.pages.PageFormatError` naming the key of a page that is not a
        root page."""
        key = self.prefix + PAGES.root_page(index, json=True, archive=self.archive)
        found = self.bucket.get(key)
        if found is None:
            return (), None
        body, etag = found
        return _parsed(key, body, read_root_page), etag

    def add_projects(self, index: str, projects: Iterable[str]) -> PageWrites:
        """Make sure the root page lists ``projects``; write only if the set changes."""
        wanted = {project_dir(p) for p in projects}
        json_key = self.prefix + PAGES.root_page(index, json=True, archive=self.archive)
        html_key = self.prefix + PAGES.root_page(index, archive=self.archive)

        def decide(current: tuple[str, ...]) -> StateUpdate[None]:
            names = sorted(wanted | set(current))
            return StateUpdate(
                None,
                not wanted <= set(current),
                lambda: self._pair(
                    html_key, render_root_html(names), json_key, render_root_json(names)
                ),
            )

        outcome = read_modify_write(
            self.bucket,
            lambda: self.read_root(index),
            decide,
            max_attempts=self._max_attempts,
            sleep=self._sleep,
        )
        return PageWrites([json_key, html_key] if outcome.written else [])


def _parsed(key: str, body: bytes, parse: Callable[[bytes], P]) -> P:
    """``parse(body)``, with the page's key in the :class:`PageFormatError` it may raise."""
    try:
        return parse(body)
    except PageFormatError as exc:
        raise PageFormatError(f"{key}: {exc}") from exc


@contextmanager
def pages_must_parse(index: str) -> Iterator[None]:
    """Refuse a change to ``index`` whose pages cannot be read back (``page-unreadable``): a
    page that is not the page its key says (one index directory inside another, whose pages
    would overwrite each other's) never becomes better on a retry, so it is a decision, not
    a transient error. Raises :class:`~wheelgate.core.errors.PromotionRejected`."""
    try:
        yield
    except PageFormatError as exc:
        raise PromotionRejected(
            Reason.PAGE_UNREADABLE,
            f"nightly's pages of {index!r} cannot be read as index pages ({exc}): is one index "
            "directory inside another? Its pages would overwrite the other's; list the "
            "directories in WHEELGATE_ALLOWED_INDEXES (index_dirs), which refuses nesting",
            index=index,
        ) from exc
