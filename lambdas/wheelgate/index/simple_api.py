"""The simple repository API's two forms, and the one reader of both. Pure.

A project page is one PEP 691 document: a file is a dict of PEP 691 keys, and its PEP 503
anchor carries the same keys as the attributes of :data:`ANCHOR_ATTRIBUTES` (the link itself
as ``href`` with a ``#sha256=`` fragment). :mod:`wheelgate.index.pages` renders both forms from
that document; :func:`read_project_page` reads either form, written by WheelGate or by another
tool, back into it and then into :class:`ListedFile` values. Every module that reads an index
page reads it here (``tests/unit/test_page_readers.py`` holds that).

Strict by page, lenient by file: a page that is not a project page raises
:class:`PageFormatError`; a file entry without a file name or a link is left out and counted in
:attr:`SimplePage.unreadable`, so a reader of WheelGate's own pages can refuse the page and a
reader of another tool's page can take what the rest of it says.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from html import escape
from html.parser import HTMLParser
from urllib.parse import unquote, urldefrag, urlsplit

from packaging.utils import canonicalize_name

from wheelgate.core.verdicts import HTML_ATTRIBUTE, JSON_FIELD

API_VERSION = "1.1"
#: The PEP 691 file keys an anchor carries, in the order they are written, with their PEP 503
#: attribute: PEP 503 ``data-requires-python``, PEP 658/714 metadata, PEP 700 upload time, PEP
#: 592 yank state and the file's verdict (docs/verdicts.md).
ANCHOR_ATTRIBUTES: tuple[tuple[str, str], ...] = (
    ("requires-python", "data-requires-python"),
    ("core-metadata", "data-core-metadata"),
    ("dist-info-metadata", "data-dist-info-metadata"),
    ("upload-time", "data-upload-time"),
    ("yanked", "data-yanked"),
    (JSON_FIELD, HTML_ATTRIBUTE),
)
#: The keys whose value is a hash (``{"sha256": hex}``) or ``True``/``False``: ``sha256=<hex>``
#: (or ``true``) as an attribute.
_HASH_KEYS = frozenset({"core-metadata", "dist-info-metadata"})
_SHA256 = re.compile(r"[0-9a-f]{64}")


class PageFormatError(ValueError):
    """A stored index page that cannot be read back."""


def anchor_attribute(value: object) -> str | None:
    """The PEP 503 attribute value of a PEP 691 file key's ``value``, HTML-escaped; ``None``
    when the anchor leaves it out (an absent or ``False`` value). ``True`` is the empty
    attribute (a yank without a reason); a hash is ``<algorithm>=<hex>``."""
    if value is None or value is False:
        return None
    if value is True:
        return ""
    if isinstance(value, Mapping):
        first = next(iter(value.items()), None)
        return None if first is None else escape(f"{first[0]}={first[1]}")
    return escape(str(value))


def _document_value(key: str, text: str) -> object:
    """The PEP 691 value of an anchor's attribute for ``key``: :func:`anchor_attribute`'s
    inverse."""
    if key in _HASH_KEYS:
        algorithm, _, digest = text.partition("=")
        return {algorithm: digest} if digest else text.lower() == "true"
    if key == "yanked":
        return text or True
    return text


@dataclass(frozen=True)
class ListedFile:
    """One file a project page lists. ``url`` is the link as the page gives it (relative to
    the page, or absolute), without a fragment; ``sha256`` is lower-case hex, ``None`` where
    the page gives none (or one that is no SHA-256); ``yanked`` is ``False`` or the reason
    (possibly empty, ``True`` when none is given); ``verdict_url`` as the page gives it."""

    filename: str
    url: str
    sha256: str | None = None
    size: int | None = None
    upload_time: str | None = None
    requires_python: str | None = None
    metadata_sha256: str | None = None
    yanked: str | bool = False
    verdict_url: str | None = None


@dataclass(frozen=True)
class SimplePage:
    """A project page read back: its ``name`` as written (``None`` on a PEP 503 page), the
    files it lists, and how many of its file entries could not be read (``unreadable``)."""

    name: str | None
    files: tuple[ListedFile, ...]
    unreadable: int = 0


def _sha256(hashes: object) -> str | None:
    value = hashes.get("sha256") if isinstance(hashes, Mapping) else None
    if not isinstance(value, str) or not _SHA256.fullmatch(value.lower()):
        return None
    return value.lower()


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _listed_file(item: object) -> ListedFile | None:
    """A PEP 691 file dict as a :class:`ListedFile`; ``None`` without a file name or link."""
    if not isinstance(item, Mapping):
        return None
    filename, url = item.get("filename"), item.get("url")
    if not isinstance(filename, str) or not filename or not isinstance(url, str):
        return None
    metadata = item.get("core-metadata", item.get("dist-info-metadata"))
    size, yanked = item.get("size"), item.get("yanked", False)
    return ListedFile(
        filename=filename,
        url=urldefrag(url).url,
        sha256=_sha256(item.get("hashes")),
        size=size if isinstance(size, int) and not isinstance(size, bool) else None,
        upload_time=_text(item.get("upload-time")),
        requires_python=_text(item.get("requires-python")),
        metadata_sha256=_sha256(metadata),
        yanked=yanked if isinstance(yanked, str | bool) else False,
        verdict_url=_text(item.get(JSON_FIELD)),
    )


class _Anchors(HTMLParser):
    """A PEP 503 page's anchors as PEP 691 file dicts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.files: list[dict[str, object]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "a":
            return
        found = dict(attrs)
        link = found.get("href")
        if not link:
            return
        url, fragment = urldefrag(link)
        algorithm, _, digest = fragment.partition("=")
        item: dict[str, object] = {
            "filename": unquote(posixpath.basename(urlsplit(url).path)),
            "url": url,
            "hashes": {algorithm: digest} if digest else {},
        }
        for key, attribute in ANCHOR_ATTRIBUTES:
            if attribute in found:
                item[key] = _document_value(key, found[attribute] or "")
        self.files.append(item)


def _document(raw: bytes | str, *, html: bool) -> tuple[object, list[object]]:
    """The name and the file dicts of a page's PEP 691 document, from either form."""
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    if html:
        anchors = _Anchors()
        try:
            anchors.feed(text)
            anchors.close()
        except AssertionError as exc:  # what HTMLParser raises on markup it gives up on
            raise PageFormatError(f"not a PEP 503 project page: {exc!r}") from exc
        return None, list(anchors.files)
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise PageFormatError(f"not a PEP 691 project page: {exc!r}") from exc
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, list):
        raise PageFormatError("not a PEP 691 project page: it has no list of files")
    return doc.get("name"), files


def read_project_page(raw: bytes | str, *, html: bool = False) -> SimplePage:
    """The files a project page lists: a PEP 691 JSON page, or with ``html`` a PEP 503 page.

    Raises :class:`PageFormatError` when ``raw`` is not a project page of that form.
    """
    name, items = _document(raw, html=html)
    files = [_listed_file(item) for item in items]
    return SimplePage(
        name=name if isinstance(name, str) else None,
        files=tuple(f for f in files if f is not None),
        unreadable=files.count(None),
    )


def read_root_page(raw: bytes | str) -> tuple[str, ...]:
    """Project names (normalized, sorted) a PEP 691 root page lists; :class:`PageFormatError`
    if it is not one."""
    try:
        doc = json.loads(raw)
        return tuple(sorted(canonicalize_name(p["name"]) for p in doc["projects"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise PageFormatError(f"not a PEP 691 root page: {exc!r}") from exc
