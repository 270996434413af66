"""WheelGate's simple-repository pages: their entries, and both forms rendered from one PEP 691
document (PEP 503 HTML and PEP 691 JSON).

Pure functions. The JSON project page carries every field WheelGate knows about a file, so it
doubles as the state a later update starts from (:func:`parse_project_json`, through the one
reader of index pages, :mod:`wheelgate.index.simple_api`); there is no separate database to
drift from what clients see.

Fields written: PEP 503 ``#sha256=`` and ``data-requires-python``; PEP 629
``pypi:repository-version``; PEP 658/714 ``data-core-metadata`` and ``data-dist-info-metadata``;
PEP 592 ``data-yanked``; PEP 691 JSON with PEP 700 ``versions``, ``size`` and ``upload-time``
(also ``data-upload-time`` in HTML); a released file's signed verdict as ``_wheelgate_verdict``
(JSON: PEP 691 leaves keys starting with ``_`` to the index server) and
``data-wheelgate-verdict`` (HTML), a link relative to the page like the file's own
(docs/verdicts.md).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from html import escape
from typing import TypedDict
from urllib.parse import unquote, urljoin

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from wheelgate.core.layout import VERDICT_SUFFIX, href
from wheelgate.core.manifest import parse_distribution_filename
from wheelgate.core.timestamps import parse_upload_time, upload_time
from wheelgate.core.verdicts import JSON_FIELD
from wheelgate.core.wheelmeta import CoreMetadata
from wheelgate.index.simple_api import (
    ANCHOR_ATTRIBUTES,
    API_VERSION,
    ListedFile,
    PageFormatError,
    anchor_attribute,
    read_project_page,
)

# Defined in core and in simple_api, used from here too.
__all__ = ["API_VERSION", "PageFormatError", "parse_upload_time", "upload_time"]

HTML_CONTENT_TYPE = "text/html; charset=utf-8"
JSON_CONTENT_TYPE = "application/vnd.pypi.simple.v1+json"
#: PEP 658 core metadata (``<file>.metadata``), as staged and as released.
METADATA_CONTENT_TYPE = "text/plain; charset=utf-8"
#: Index pages change on every promotion; clients and the CDN revalidate them quickly.
PAGE_CACHE_CONTROL = "public, max-age=60, must-revalidate"
#: Released files never change (Object Lock), so they may be cached for a year.
FILE_CACHE_CONTROL = "public, max-age=31536000, immutable"


@dataclass(frozen=True)
class IndexEntry:
    """One file as an index page lists it.

    ``url`` is relative to the project page (or absolute, for files of another index) and has
    no fragment. ``yanked`` is ``False`` or the reason (possibly empty) it was yanked.
    ``verdict`` says a signed verdict sits beside the file (at :attr:`verdict_url`).
    """

    filename: str
    url: str
    sha256: str
    size: int
    upload_time: str
    requires_python: str | None = None
    metadata_sha256: str | None = None
    yanked: str | bool = False
    verdict: bool = False

    @property
    def verdict_url(self) -> str | None:
        """The link to the file's verdict (relative like :attr:`url`), if it has one."""
        return self.url + VERDICT_SUFFIX if self.verdict else None

    @property
    def project(self) -> str:
        return parse_distribution_filename(self.filename).project

    @property
    def version(self) -> Version:
        return parse_distribution_filename(self.filename).version

    @property
    def is_absolute(self) -> bool:
        return "://" in self.url

    def with_url(self, url: str) -> IndexEntry:
        return replace(self, url=url)

    @classmethod
    def for_file(
        cls,
        filename: str,
        *,
        key: str,
        page_dir: str,
        sha256: str,
        size: int,
        uploaded: str,
        metadata: CoreMetadata | None,
        yanked: str | bool = False,
    ) -> IndexEntry:
        """The entry of a file stored at ``key`` (a released file, a staged one, or one found
        by a rebuild), listed on a page served from ``page_dir`` with a relative link, uploaded
        at ``uploaded`` (an :func:`upload_time` string). ``metadata`` is a wheel's core
        metadata (PEP 658 hash and ``Requires-Python``); ``None`` for an sdist or a wheel
        whose metadata is not known. ``yanked`` as :attr:`yanked` (an imported file keeps its
        source index's yank state)."""
        return cls(
            filename=filename,
            url=href(page_dir, key),
            sha256=sha256,
            size=size,
            upload_time=uploaded,
            requires_python=metadata.requires_python if metadata else None,
            metadata_sha256=metadata.sha256 if metadata else None,
            yanked=yanked,
        )


@dataclass(frozen=True)
class ProjectPage:
    """A project's entries; ``name`` is the PEP 503 normalized name."""

    name: str
    entries: tuple[IndexEntry, ...]


def _sort_key(entry: IndexEntry) -> tuple[Version, str]:
    try:
        return (entry.version, entry.filename)
    except (ValueError, InvalidVersion):
        return (Version("0"), entry.filename)


def merge_entries(
    base: Iterable[IndexEntry], updates: Iterable[IndexEntry]
) -> tuple[IndexEntry, ...]:
    """Entries of ``base`` with ``updates`` added; an update wins over a base entry of the
    same file name. Sorted by version, then file name."""
    by_name = {e.filename: e for e in base}
    for entry in updates:
        by_name[entry.filename] = entry
    return tuple(sorted(by_name.values(), key=_sort_key))


def absolute(entries: Iterable[IndexEntry], page_url: str) -> tuple[IndexEntry, ...]:
    """``entries`` with URLs made absolute against the URL of the page that listed them."""
    return tuple(e if e.is_absolute else e.with_url(urljoin(page_url, e.url)) for e in entries)


def rebase(entries: Iterable[IndexEntry], from_dir: str, to_dir: str) -> tuple[IndexEntry, ...]:
    """``entries`` linked from a page in ``to_dir`` instead of ``from_dir`` (both bucket key
    directories): each relative link is resolved to its key, then linked again with
    :func:`~wheelgate.core.layout.href`. Absolute links stay as they are."""

    def moved(entry: IndexEntry) -> IndexEntry:
        if entry.is_absolute:
            return entry
        key = posixpath.normpath(posixpath.join(from_dir, unquote(entry.url)))
        return entry.with_url(href(to_dir, key))

    return tuple(moved(e) for e in entries)


def staging_view(
    borrowed: Iterable[IndexEntry],
    *,
    add: Iterable[IndexEntry] = (),
    drop: Iterable[str] = (),
) -> Callable[[tuple[IndexEntry, ...]], tuple[IndexEntry, ...]]:
    """Transform for a staging project page: its own (relative-URL) entries, minus file names
    in ``drop``, plus ``add``, over the ``borrowed`` nightly entries (absolute URLs), so the
    staging index is complete. Staging's own entry wins a file-name clash."""
    borrowed = tuple(borrowed)
    add = tuple(add)
    dropped = frozenset(drop)

    def transform(current: tuple[IndexEntry, ...]) -> tuple[IndexEntry, ...]:
        own = [e for e in current if not e.is_absolute and e.filename not in dropped]
        return merge_entries(borrowed, merge_entries(own, add))

    return transform


class ProjectDocument(TypedDict):
    """A PEP 691 project page; each file a dict of PEP 691 keys."""

    meta: dict[str, str]
    name: str
    versions: list[str]
    files: list[dict[str, object]]


def project_document(page: ProjectPage) -> ProjectDocument:
    """The PEP 691 project document (with the PEP 700 fields) both forms of a page are
    rendered from: a file's yank state, metadata hash and verdict are mapped here, once."""
    return {
        "meta": {"api-version": API_VERSION},
        "name": page.name,
        "versions": [str(v) for v in sorted({e.version for e in page.entries})],
        "files": [_file_document(e) for e in page.entries],
    }


def _file_document(e: IndexEntry) -> dict[str, object]:
    metadata: dict[str, str] | bool = {"sha256": e.metadata_sha256} if e.metadata_sha256 else False
    item: dict[str, object] = {
        "filename": e.filename,
        "url": e.url,
        "hashes": {"sha256": e.sha256},
    }
    if e.requires_python:
        item["requires-python"] = e.requires_python
    item["core-metadata"] = metadata
    item["dist-info-metadata"] = metadata
    item["size"] = e.size
    item["upload-time"] = e.upload_time
    item["yanked"] = e.yanked
    if e.verdict_url:
        item[JSON_FIELD] = e.verdict_url
    return item


def render_project_json(page: ProjectPage) -> str:
    """PEP 691 project page with the PEP 700 fields: :func:`project_document` as JSON."""
    return json.dumps(project_document(page), separators=(",", ":")) + "\n"


def render_project_html(page: ProjectPage) -> str:
    """PEP 503 project page: :func:`project_document` as anchors, each file's keys as the
    attributes of :data:`~wheelgate.index.simple_api.ANCHOR_ATTRIBUTES`."""
    doc = project_document(page)
    name = escape(doc["name"])
    lines = [
        "<!DOCTYPE html>",
        "<html>",
        "  <head>",
        f'    <meta name="pypi:repository-version" content="{API_VERSION}">',
        f"    <title>Links for {name}</title>",
        "  </head>",
        "  <body>",
        f"    <h1>Links for {name}</h1>",
    ]
    lines += [f"    {_anchor(item)}<br>" for item in doc["files"]]
    lines += ["  </body>", "</html>", ""]
    return "\n".join(lines)


def _anchor(item: Mapping[str, object]) -> str:
    """A PEP 691 file dict as a PEP 503 anchor."""
    attrs = [f'href="{anchor_attribute(item["url"])}#{anchor_attribute(item["hashes"])}"']
    for key, attribute in ANCHOR_ATTRIBUTES:
        value = anchor_attribute(item.get(key))
        if value is not None:
            attrs.append(f'{attribute}="{value}"')
    return f"<a {' '.join(attrs)}>{escape(str(item['filename']))}</a>"


def parse_project_json(raw: bytes | str) -> ProjectPage:
    """Read back a page written by :func:`render_project_json`.

    Raises :class:`PageFormatError` when the page is not a PEP 691 project page, or a file it
    lists lacks what WheelGate writes of each (a link, its SHA-256, size and upload time).
    """
    page = read_project_page(raw)
    if page.name is None or page.unreadable:
        raise PageFormatError(
            f"not a WheelGate PEP 691 project page: name {page.name!r}, "
            f"{page.unreadable} file(s) without a file name or link"
        )
    entries = [_entry(f) for f in page.files]
    return ProjectPage(
        name=canonicalize_name(page.name), entries=tuple(sorted(entries, key=_sort_key))
    )


def _entry(f: ListedFile) -> IndexEntry:
    if f.sha256 is None or f.size is None or f.upload_time is None:
        raise PageFormatError(
            f"not a WheelGate PEP 691 project page: {f.filename} lacks its sha256, size or "
            "upload-time"
        )
    return IndexEntry(
        filename=f.filename,
        url=f.url,
        sha256=f.sha256,
        size=f.size,
        upload_time=f.upload_time,
        requires_python=f.requires_python,
        metadata_sha256=f.metadata_sha256,
        yanked=f.yanked,
        verdict=f.verdict_url is not None,
    )


def render_index_directory(entries: Iterable[IndexEntry]) -> dict[str, str]:
    """Every page of one index directory from its entries: ``<project>/index.html``,
    ``<project>/index.json``, and the root ``index.html``/``index.json`` (paths relative to
    the directory). Used for full builds; promotion updates pages incrementally instead."""
    by_project: dict[str, list[IndexEntry]] = {}
    for entry in entries:
        by_project.setdefault(entry.project, []).append(entry)
    pages: dict[str, str] = {}
    for project, items in by_project.items():
        page = ProjectPage(name=project, entries=tuple(sorted(items, key=_sort_key)))
        pages[f"{project}/index.html"] = render_project_html(page)
        pages[f"{project}/index.json"] = render_project_json(page)
    names = sorted(by_project)
    pages["index.html"] = render_root_html(names)
    pages["index.json"] = render_root_json(names)
    return pages


def render_root_html(projects: Sequence[str]) -> str:
    """PEP 503 root page listing ``projects`` (normalized names)."""
    lines = [
        "<!DOCTYPE html>",
        "<html>",
        "  <head>",
        f'    <meta name="pypi:repository-version" content="{API_VERSION}">',
        "    <title>Simple index</title>",
        "  </head>",
        "  <body>",
    ]
    lines += [f'    <a href="{escape(p)}/">{escape(p)}</a><br>' for p in sorted(projects)]
    lines += ["  </body>", "</html>", ""]
    return "\n".join(lines)


def render_root_json(projects: Sequence[str]) -> str:
    """PEP 691 root page."""
    doc = {
        "meta": {"api-version": API_VERSION},
        "projects": [{"name": p} for p in sorted(projects)],
    }
    return json.dumps(doc, separators=(",", ":")) + "\n"
