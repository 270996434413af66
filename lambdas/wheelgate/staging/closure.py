"""The projects a run's index must offer: the run's own and their dependency closure in nightly.

A run's tests install the run's projects from its index; pip and uv then ask that index for
every project the chosen files require, and so on. The closure is walked over nightly's
listing pages and the PEP 658 metadata files beside its wheels (never a wheel): a project is
in it when a ``Requires-Dist`` of a file the index lists for a project already in it names it,
whatever the requirement's marker or extra, so a test on any platform, interpreter or set of
extras resolves. Each distinct METADATA (by the hash the page carries for it) is read once.

What the walk costs follows the run: a listing page per project of the closure and a
metadata file per distinct METADATA of the files those pages list, never the directory's
other projects.

A file whose METADATA nightly does not serve (an sdist) adds no requirement: an installer
builds such a file to learn what it needs, which an index cannot answer for.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Executor, ThreadPoolExecutor
from urllib.parse import unquote

from wheelgate.core.layout import METADATA_SUFFIX, PAGES, project_dir
from wheelgate.core.wheelmeta import required_projects
from wheelgate.index.pages import IndexEntry, ProjectPage
from wheelgate.index.store import IndexStore
from wheelgate.storage.bucket import Bucket

#: A project's page as nightly lists it now (empty if nightly has no such project).
PageReader = Callable[[str], ProjectPage]
#: The bytes of a METADATA file, by its key; ``None`` when there is none.
MetadataReader = Callable[[str], bytes | None]


def metadata_key(index: str, project: str, entry: IndexEntry) -> str | None:
    """The key of the PEP 658 file beside a file a project's page links relatively (``None``
    for a file without one, or one linked from elsewhere)."""
    if entry.metadata_sha256 is None or entry.is_absolute:
        return None
    page_dir = PAGES.project_dir(index, project)
    return posixpath.normpath(posixpath.join(page_dir, unquote(entry.url))) + METADATA_SUFFIX


def dependency_closure(
    index: str,
    roots: Mapping[str, Iterable[bytes]],
    read_page: PageReader,
    read_metadata: MetadataReader,
    *,
    pool: Executor,
) -> dict[str, ProjectPage]:
    """Nightly's page of every project of the closure of ``roots`` (project -> the METADATA
    of the run's own files of it), keyed by normalized name; projects nightly lacks have an
    empty page. Pages are read a level at a time, each level's pages and metadata files
    through ``pool``."""
    required = {project_dir(p) for p in roots}
    for contents in roots.values():
        for content in contents:
            required |= required_projects(content)
    pages: dict[str, ProjectPage] = {}
    read: set[str] = set()
    level = sorted(required)
    while level:
        pages.update(zip(level, pool.map(read_page, level), strict=True))
        keys = {}
        for project in level:
            for entry in pages[project].entries:
                key = metadata_key(index, project, entry)
                if key is not None and entry.metadata_sha256 not in read:
                    read.add(str(entry.metadata_sha256))
                    keys[str(entry.metadata_sha256)] = key
        named: set[str] = set()
        for found in pool.map(read_metadata, keys.values()):
            if found is not None:
                named |= required_projects(found)
        level = sorted(named - pages.keys())
    return pages


def nightly_closure(
    nightly: Bucket,
    index: str,
    roots: Mapping[str, Iterable[bytes]],
) -> dict[str, ProjectPage]:
    """:func:`dependency_closure` over the nightly bucket's listing pages of ``index``,
    ``nightly.limits.workers`` requests at a time."""
    pages = IndexStore(nightly)

    def read_page(project: str) -> ProjectPage:
        return pages.read_project(index, project)[0]

    def read_metadata(key: str) -> bytes | None:
        found = nightly.get(key)
        return found[0] if found else None

    with ThreadPoolExecutor(max_workers=nightly.limits.workers) as pool:
        return dependency_closure(index, roots, read_page, read_metadata, pool=pool)
