"""Incremental, concurrency-safe updates of the index pages in one bucket.

Each project page pair is updated on its own: the JSON page is read (with its ETag), changed by a
pure function, and written back with ``If-Match`` (``If-None-Match: *`` for a new page). Losing
that race means another writer committed first; we re-read and re-apply, so no entry is lost.
The JSON page is the commit point; the HTML page is rendered from it and re-checked until it was
rendered from the newest JSON, so both formats converge even when writers interleave.

A promotion touches only its own projects' pages, plus the root page when a project is new: its
cost does not depend on how many other files the directory holds.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from wheelgate.errors import TransientError
from wheelgate.index_pages import (
    HTML_CONTENT_TYPE,
    JSON_CONTENT_TYPE,
    PAGE_CACHE_CONTROL,
    IndexEntry,
    ProjectPage,
    parse_project_json,
    parse_root_json,
    render_project_html,
    render_project_json,
    render_root_html,
    render_root_json,
)
from wheelgate.layout import PAGES, project_dir
from wheelgate.storage import Bucket, PreconditionFailed

EntriesTransform = Callable[[tuple[IndexEntry, ...]], tuple[IndexEntry, ...]]


@dataclass
class PageWrites:
    """Keys of the pages an update changed (for CloudFront invalidation)."""

    keys: list[str] = field(default_factory=list)

    def extend(self, other: PageWrites) -> None:
        self.keys.extend(k for k in other.keys if k not in self.keys)


class IndexStore:
    """The simple-repository pages of one bucket."""

    def __init__(
        self,
        bucket: Bucket,
        *,
        max_attempts: int = 25,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.bucket = bucket
        self._max_attempts = max_attempts
        self._sleep = sleep

    def _backoff(self, attempt: int) -> None:
        self._sleep(min(2.0, 0.02 * 2**attempt) * random.uniform(0.5, 1.0))  # noqa: S311

    def read_project(self, index: str, project: str) -> tuple[ProjectPage, str | None]:
        """The current page (empty if none) and the ETag of its JSON form."""
        name = project_dir(project)
        found = self.bucket.get(PAGES.project_page(index, name, json=True))
        if found is None:
            return ProjectPage(name=name, entries=()), None
        body, etag = found
        return parse_project_json(body), etag

    def update_project(self, index: str, project: str, transform: EntriesTransform) -> PageWrites:
        """Apply ``transform`` to a project's entries and write both page formats.

        Raises :class:`TransientError` when the page keeps changing under us for too long.
        """
        name = project_dir(project)
        json_key = PAGES.project_page(index, name, json=True)
        for attempt in range(self._max_attempts):
            page, etag = self.read_project(index, name)
            entries = transform(page.entries)
            if entries == page.entries and etag is not None:
                return PageWrites()
            new_page = ProjectPage(name=name, entries=entries)
            try:
                written = self.bucket.put(
                    json_key,
                    render_project_json(new_page).encode(),
                    content_type=JSON_CONTENT_TYPE,
                    cache_control=PAGE_CACHE_CONTROL,
                    if_match=etag,
                    if_none_match=etag is None,
                )
            except PreconditionFailed:
                self._backoff(attempt)
                continue
            self._write_html_from(index, name, new_page, written)
            return PageWrites([json_key, PAGES.project_page(index, name)])
        raise TransientError(f"{json_key} kept changing; gave up after {self._max_attempts} tries")

    def _write_html_from(self, index: str, name: str, page: ProjectPage, etag: str) -> None:
        html_key = PAGES.project_page(index, name)
        for _ in range(self._max_attempts):
            self.bucket.put(
                html_key,
                render_project_html(page).encode(),
                content_type=HTML_CONTENT_TYPE,
                cache_control=PAGE_CACHE_CONTROL,
            )
            latest, latest_etag = self.read_project(index, name)
            if latest_etag == etag:
                return
            # Another writer committed a newer JSON page; render HTML from that one.
            page, etag = latest, latest_etag or ""
        raise TransientError(f"{html_key} could not catch up with its JSON page")

    def repair_html(self, index: str, project: str) -> None:
        """Re-render the HTML page from the JSON page (after an interrupted update)."""
        page, etag = self.read_project(index, project)
        if etag is not None:
            self._write_html_from(index, page.name, page, etag)

    def read_root(self, index: str) -> tuple[tuple[str, ...], str | None]:
        found = self.bucket.get(PAGES.root_page(index, json=True))
        if found is None:
            return (), None
        body, etag = found
        return parse_root_json(body), etag

    def add_projects(self, index: str, projects: Iterable[str]) -> PageWrites:
        """Make sure the root page lists ``projects``; write only if the set changes."""
        wanted = {project_dir(p) for p in projects}
        json_key = PAGES.root_page(index, json=True)
        for attempt in range(self._max_attempts):
            current, etag = self.read_root(index)
            if wanted <= set(current) and etag is not None:
                return PageWrites()
            names = sorted(wanted | set(current))
            try:
                written = self.bucket.put(
                    json_key,
                    render_root_json(names).encode(),
                    content_type=JSON_CONTENT_TYPE,
                    cache_control=PAGE_CACHE_CONTROL,
                    if_match=etag,
                    if_none_match=etag is None,
                )
            except PreconditionFailed:
                self._backoff(attempt)
                continue
            self._write_root_html(index, names, written)
            return PageWrites([json_key, PAGES.root_page(index)])
        raise TransientError(f"{json_key} kept changing; gave up after {self._max_attempts} tries")

    def _write_root_html(self, index: str, names: list[str], etag: str) -> None:
        for _ in range(self._max_attempts):
            self.bucket.put(
                PAGES.root_page(index),
                render_root_html(names).encode(),
                content_type=HTML_CONTENT_TYPE,
                cache_control=PAGE_CACHE_CONTROL,
            )
            latest, latest_etag = self.read_root(index)
            if latest_etag == etag:
                return
            names, etag = list(latest), latest_etag or ""
        raise TransientError(f"root page of {index} could not catch up with its JSON page")
