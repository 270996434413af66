"""Full rebuild of an index directory's pages from the files in the bucket (repair, and a
changed listing retention).

Promotion keeps pages current incrementally; this is for the day a page is lost or damaged, or
the directory's retention rule changed. The archive pages are rebuilt from every file in the
directory, the listing pages from what the rule keeps of them
(:func:`~wheelgate.index.archive.update_archive`). Yank state and upload times already on a
page are kept for files whose bytes are unchanged. The command runs it under the directory's
lease, as a promotion runs; without the lease it still loses nothing a concurrent writer adds:
each page write reconciles the scan with the page as it then stands (:func:`rescanned`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime

from wheelgate.core.layout import (
    METADATA_SUFFIX,
    NIGHTLY,
    PAGES,
    STAGING,
    VERDICT_SUFFIX,
    check_index,
)
from wheelgate.core.manifest import parse_distribution_filename
from wheelgate.core.objects import ListedObject
from wheelgate.core.records import LeftInNightly
from wheelgate.core.setting_values import PageRetention, RetentionRule
from wheelgate.core.wheelmeta import core_metadata
from wheelgate.index.archive import add_projects, update_archive
from wheelgate.index.pages import IndexEntry, merge_entries, upload_time
from wheelgate.index.retention import retain
from wheelgate.index.store import IndexStore, PageWrites
from wheelgate.storage.bucket import Bucket


@dataclass
class ProjectChange:
    """What a rebuild changes on a project's pages, by file name: ``added``, ``removed`` and
    ``changed`` on its listing page, of which ``delisted`` are removed by the retention rule
    alone (still in nightly and on the archive); ``archive_added``, ``archive_removed`` and
    ``archive_changed`` on its archive page; and ``left_in_nightly``, files found that no page
    lists and none will (a rejected run's copies, :func:`left_in_nightly`)."""

    project: str
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    delisted: list[str] = field(default_factory=list)
    archive_added: list[str] = field(default_factory=list)
    archive_removed: list[str] = field(default_factory=list)
    archive_changed: list[str] = field(default_factory=list)
    #: Files in nightly that a rejected run's earlier attempt left there: never listed.
    left_in_nightly: list[str] = field(default_factory=list)

    @property
    def any(self) -> bool:
        return bool(
            self.added
            or self.removed
            or self.changed
            or self.archive_added
            or self.archive_removed
            or self.archive_changed
        )


def _diff(
    before: tuple[IndexEntry, ...], after: tuple[IndexEntry, ...]
) -> tuple[list[str], list[str], list[str]]:
    """File names added, removed and changed from ``before`` to ``after``."""
    old = {e.filename: e for e in before}
    new = {e.filename: e for e in after}
    return (
        sorted(set(new) - set(old)),
        sorted(set(old) - set(new)),
        sorted(n for n in set(new) & set(old) if new[n] != old[n]),
    )


def _is_distribution(name: str) -> bool:
    try:
        parse_distribution_filename(name)
    except ValueError:
        return False
    return True


def _entry(bucket: Bucket, obj: ListedObject, filename: str, page_dir: str) -> IndexEntry:
    head = bucket.head(obj.key)
    if head is None or head.sha256 is None:
        raise ValueError(f"s3://{bucket.name}/{obj.key} has no SHA-256; it cannot be indexed")
    metadata = None
    if filename.endswith(".whl"):
        found = bucket.get(obj.key + METADATA_SUFFIX)
        metadata = core_metadata(found[0]) if found else None
    return IndexEntry.for_file(
        filename,
        key=obj.key,
        page_dir=page_dir,
        sha256=head.sha256,
        size=head.size,
        uploaded=upload_time(obj.last_modified) if obj.last_modified else "",
        metadata=metadata,
    )


def _scan(
    bucket: Bucket, objects: Mapping[str, ListedObject], index: str
) -> dict[str, list[IndexEntry]]:
    def build(item: tuple[str, ListedObject]) -> IndexEntry:
        filename, obj = item
        project = parse_distribution_filename(filename).project
        return _entry(bucket, obj, filename, PAGES.project_dir(index, project))

    with ThreadPoolExecutor(max_workers=16) as pool:
        entries = list(pool.map(build, sorted(objects.items())))
    by_project: dict[str, list[IndexEntry]] = defaultdict(list)
    for e in entries:
        by_project[e.project].append(e)
    return dict(by_project)


def scan_nightly(bucket: Bucket, index: str) -> dict[str, list[IndexEntry]]:
    """Entries for every distribution file directly under ``<index>/``; a file with its
    verdict beside it (``<file>.verdict.json``) links it."""
    prefix = f"{check_index(index)}/"
    names = {
        obj.key[len(prefix) :]: obj
        for obj in bucket.list(prefix)
        if "/" not in obj.key[len(prefix) :]
    }
    files = {name: obj for name, obj in names.items() if _is_distribution(name)}
    scanned = _scan(bucket, files, index)
    return {
        project: [replace(e, verdict=e.filename + VERDICT_SUFFIX in names) for e in entries]
        for project, entries in scanned.items()
    }


def reconcile(current: tuple[IndexEntry, ...], scanned: list[IndexEntry]) -> tuple[IndexEntry, ...]:
    """Scanned entries, keeping yank state and upload time of unchanged files."""
    known = {e.filename: e for e in current}
    result = []
    for e in scanned:
        old = known.get(e.filename)
        if old is not None and old.sha256 == e.sha256:
            e = replace(e, yanked=old.yanked, upload_time=old.upload_time)
        result.append(e)
    return merge_entries([], result)


def rescanned(
    bucket: Bucket, index: str, scanned: list[IndexEntry]
) -> Callable[[tuple[IndexEntry, ...]], tuple[IndexEntry, ...]]:
    """Archive transform of a rebuild of ``index``: the ``scanned`` entries reconciled with the
    page as it stands at each write (:func:`reconcile`: its yank states and upload times), plus
    each entry of that page whose file the scan did not see but ``bucket`` now holds (released
    after the scan, by a promotion the rebuild raced). An entry whose file is gone is dropped."""
    names = {e.filename for e in scanned}

    def transform(current: tuple[IndexEntry, ...]) -> tuple[IndexEntry, ...]:
        later = [
            e
            for e in current
            if e.filename not in names
            and bucket.head(NIGHTLY.artifact(index, e.filename)) is not None
        ]
        return merge_entries(reconcile(current, scanned), later)

    return transform


def left_in_nightly(staging: Bucket, index: str) -> dict[str, LeftInNightly]:
    """The files of ``index`` that rejected runs left in nightly, by file name: the notes the
    promoter keeps in ``staging`` (``records/_left/<index>/``, see
    :mod:`wheelgate.promotion.leftovers`)."""
    notes: dict[str, LeftInNightly] = {}
    for obj in staging.list(STAGING.left_in_nightly_prefix(index)):
        found = staging.get(obj.key)
        if found is not None:
            note = LeftInNightly.model_validate_json(found[0])
            notes[note.filename] = note
    return notes


def rebuild(
    *,
    target: Bucket,
    index: str,
    scanned: Mapping[str, list[IndexEntry]],
    dry_run: bool,
    rule: RetentionRule,
    now: datetime,
    retention: PageRetention | None = None,
    left: Mapping[str, LeftInNightly] | None = None,
) -> tuple[list[ProjectChange], PageWrites]:
    """Rewrite every project's archive page of ``index`` in ``target`` from ``scanned``
    entries, and its listing page from what ``rule`` keeps of them at ``now``, each page
    version locked with ``retention`` when given (as the promoter writes them). A scanned file
    ``left`` names (:func:`left_in_nightly`) is not listed unless its archive page lists it
    already (a later promotion released it); it is reported instead.

    Returns the per-project changes and (unless ``dry_run``) the pages written. Raises
    :class:`~wheelgate.core.errors.TransientError` when a page keeps changing under it.
    """
    store = IndexStore(target, retention=retention)
    archive = store.archive_view()
    projects = set(scanned)
    changes: list[ProjectChange] = []
    writes = PageWrites()
    left = left or {}
    for project in sorted(projects):
        known = store.read_archive(index, project)
        archived, _ = archive.read_project(index, project)
        listing, _ = store.read_project(index, project)
        on_archive = {e.filename for e in known[0].entries}
        unlisted = sorted(
            e.filename
            for e in scanned.get(project, [])
            if e.filename in left and e.filename not in on_archive
        )
        found = [e for e in scanned.get(project, []) if e.filename not in unlisted]
        entries = reconcile(known[0].entries, found)
        listed = retain(entries, rule, now=now).listed
        added, removed, changed = _diff(listing.entries, listed)
        archive_added, archive_removed, archive_changed = _diff(archived.entries, entries)
        kept = {e.filename for e in entries}
        change = ProjectChange(
            project=project,
            added=added,
            removed=removed,
            changed=changed,
            delisted=[n for n in removed if n in kept],
            archive_added=archive_added,
            archive_removed=archive_removed,
            archive_changed=archive_changed,
            left_in_nightly=unlisted,
        )
        changes.append(change)
        if change.any and not dry_run:
            written = update_archive(
                store,
                index,
                project,
                rescanned(target, index, found),
                rule=rule,
                now=now,
                known=known,
            )
            writes.extend(written)
    if not dry_run:
        writes.extend(add_projects(store, index, projects))
    return changes, writes
