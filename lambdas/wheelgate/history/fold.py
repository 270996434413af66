"""Folding a stage call's entry into its month of run history: read it, check it, merge it.

The promoter folds each :class:`~wheelgate.history.model.StagedEntry` (:class:`EntryFolder`)
only after checking it (:func:`check_entry`): its directory is one the deployment serves, its
key is the one its content names, its run is a CI run, and each file it lists is staged with
the size, commit and SHA-256 it claims (S3's own checksum, or the promoter's hash of the
bytes). A build job can write any entry it likes, so nothing it says is kept unless the staged
objects say the same, and what no object says is the promoter's: when the run was staged is
the earliest write of its objects (:func:`first_staged`). The entry's own ``staged_at`` is
never kept.

An entry that is not JSON, not an entry (a time without a zone included), for a directory the
deployment does not serve, or does not match what is staged is refused with a reason and never
retried (:class:`FoldResult`); only a storage error or a history that keeps changing raises, so
that the event is delivered again.

A run's commit time and attempt are those of its first folded entry (a later entry, which any
build job may write, never changes them), until the reporter's manifest states its own
(:mod:`~wheelgate.history.decision`). Once reported, a run's files are its manifest's: a stage
entry describes only a run not yet reported, and changes nothing of one that was.

The checks and the merge are pure (the staged objects are handed in as :class:`StagedObject`
values); :class:`EntryFolder` does the reads and the write.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from pydantic import ValidationError

from wheelgate.core.errors import Reason
from wheelgate.core.layout import REQUEST_RUN_PREFIXES, STAGING, LayoutError
from wheelgate.core.lifecycle import lifecycle_expiry
from wheelgate.core.manifest import describe_errors
from wheelgate.core.objects import META_COMMIT
from wheelgate.core.timestamps import parse_upload_time, upload_time
from wheelgate.history.model import (
    CommitTimeBy,
    EntryFile,
    HistoryFile,
    HistoryRun,
    RunState,
    StagedEntry,
    project_and_version,
)
from wheelgate.history.offer import NightlyReleases, merged_offer, with_offer
from wheelgate.history.store import STAGED_RUNS_PER_DAY, HistoryStore
from wheelgate.index.store import IndexStore
from wheelgate.storage.bucket import Bucket

#: Reason codes of a refused entry.
REFUSED_KEY = "entry-key-mismatch"
REFUSED_REQUEST = "request-run-id"
REFUSED_MISSING = "file-not-staged"
REFUSED_SHA256 = "sha256-mismatch"
REFUSED_COMMIT = "commit-mismatch"
REFUSED_NAME = "not-a-distribution"
#: The promoter's own reason code for a directory it does not serve (its grant names no other).
REFUSED_INDEX = Reason.INDEX_NOT_ALLOWED.value
#: Reason codes of an entry that could not be read.
REFUSED_GONE = "entry-gone"
REFUSED_FORMAT = "entry-format"
#: A new never-reported run beyond its day's cap (:data:`~.store.STAGED_RUNS_PER_DAY`).
REFUSED_CAPPED = "day-capped"


class EntryRefused(ValueError):
    """An entry the history does not take: ``reason`` is a code above, ``message`` a sentence
    naming what was wrong."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class StagedObject:
    """What staging holds under a file's key: its SHA-256 as S3 computed it or the promoter
    hashed the bytes (never what the writer recorded; ``None``: not known, as when its size or
    commit already differ from the entry's), the commit its metadata names (``None``: none)
    and its size."""

    sha256: str | None
    commit: str | None
    size: int


def check_index_allowed(key: str, entry: StagedEntry, allowed: frozenset[str]) -> None:
    """Return if the deployment serves ``entry``'s directory (``allowed``; empty: any).
    Raises :class:`EntryRefused` (``index-not-allowed``) otherwise: the promoter may write the
    history of its own directories alone, so folding it could only fail, again and again."""
    if allowed and entry.index not in allowed:
        raise EntryRefused(
            REFUSED_INDEX,
            f"{key}: index directory {entry.index!r} is not one this deployment serves",
        )


def check_entry(key: str, entry: StagedEntry, staged: Mapping[str, StagedObject | None]) -> None:
    """Return if ``entry``, read from ``key``, may be folded: ``staged`` maps each of its
    files' names to what staging holds for it (``None``: nothing).

    Raises :class:`EntryRefused` for a key its content does not name, a request's run id, a
    name that is not a distribution's, or a file that is not staged, is staged with other
    bytes or from another commit: the whole entry is refused.
    """
    try:
        expected = STAGING.history_entry(entry.index, entry.run_id, entry.entry_id)
    except LayoutError as exc:
        raise EntryRefused(REFUSED_KEY, f"{key}: {exc}") from None
    if key != expected:
        raise EntryRefused(
            REFUSED_KEY, f"{key} holds an entry whose content names another key, {expected}"
        )
    if entry.run_id.startswith(REQUEST_RUN_PREFIXES):
        raise EntryRefused(
            REFUSED_REQUEST, f"{key}: run {entry.run_id} is a request to the promoter, not a run"
        )
    for f in entry.files:
        _check_file(entry, f, staged.get(f.filename))


def _check_file(entry: StagedEntry, f: EntryFile, found: StagedObject | None) -> None:
    where = STAGING.artifact(entry.run_id, entry.index, f.filename)
    try:
        project_and_version(f.filename)
    except ValueError as exc:
        raise EntryRefused(REFUSED_NAME, f"{f.filename} is not a distribution: {exc}") from None
    if found is None:
        raise EntryRefused(REFUSED_MISSING, f"{where} is not staged")
    if found.size != f.size:
        raise EntryRefused(
            REFUSED_SHA256, f"{where} is {found.size} bytes, the entry claims {f.size}"
        )
    if found.commit != entry.commit:
        raise EntryRefused(
            REFUSED_COMMIT,
            f"{where} is staged from commit {found.commit or '(none)'}, "
            f"the entry claims {entry.commit}",
        )
    if found.sha256 != f.sha256:
        raise EntryRefused(
            REFUSED_SHA256,
            f"{where} is staged with sha256 {found.sha256 or '(unknown)'}, "
            f"the entry claims {f.sha256}",
        )


def expires_at(staged_at: str, run_expiry_days: int | None) -> str | None:
    """When a file staged at ``staged_at`` is expired by staging's lifecycle rule of
    ``run_expiry_days`` (``None``: unknown). The run's first staged time is no later than any
    of its files' writes, so this never says a file is there after it is gone."""
    if run_expiry_days is None:
        return None
    return upload_time(lifecycle_expiry(parse_upload_time(staged_at), run_expiry_days))


def history_file(
    run_id: str,
    index: str,
    filename: str,
    sha256: str,
    size: int,
    *,
    staged_at: str,
    run_expiry_days: int | None,
    nightly_key: str | None = None,
) -> HistoryFile:
    """A run's file as the history keeps it. Raises ``ValueError`` for a name that is not a
    distribution's."""
    project, version = project_and_version(filename)
    return HistoryFile(
        filename=filename,
        project=project,
        version=version,
        sha256=sha256,
        size=size,
        staging_key=STAGING.artifact(run_id, index, filename),
        nightly_key=nightly_key,
        expires_at=expires_at(staged_at, run_expiry_days),
    )


def run_of_entry(entry: StagedEntry, run_expiry_days: int | None, *, staged_at: str) -> HistoryRun:
    """The run a checked entry describes: staged at ``staged_at`` (the earliest write of its
    objects, as the promoter read it; never the entry's own claim), with the entry's files, its
    attempt and its commit time as a build job stated it."""
    return HistoryRun(
        run_id=entry.run_id,
        attempt=entry.attempt,
        index=entry.index,
        commit=entry.commit,
        commit_time=entry.commit_time,
        commit_time_by=None if entry.commit_time is None else CommitTimeBy.BUILD,
        staged_at=staged_at,
        files=tuple(
            history_file(
                entry.run_id,
                entry.index,
                f.filename,
                f.sha256,
                f.size,
                staged_at=staged_at,
                run_expiry_days=run_expiry_days,
            )
            for f in entry.files
        ),
    )


def union_files(
    kept: Iterable[HistoryFile], added: Iterable[HistoryFile]
) -> tuple[HistoryFile, ...]:
    """``kept`` and those of ``added`` whose names ``kept`` lacks, by file name."""
    by_name = {f.filename: f for f in kept}
    for f in added:
        by_name.setdefault(f.filename, f)
    return tuple(sorted(by_name.values(), key=lambda f: f.filename))


def merged_run(existing: HistoryRun, staged: HistoryRun) -> HistoryRun:
    """``existing`` with what a later stage call's entry adds: while the run was never
    reported, its files (a name already there keeps its record) and its offer; nothing else.
    Its commit time and attempt are its first entry's, and a run once reported is its
    manifest's alone, so ``existing`` is returned as it is."""
    if existing.state is not RunState.STAGED:
        return existing
    return existing.model_copy(
        update={
            "files": union_files(existing.files, staged.files),
            **merged_offer(existing, staged),
        }
    )


@dataclass(frozen=True)
class FoldResult:
    """What folding an entry did: the run it folded (``None`` when refused), or the refusal's
    reason code and sentence."""

    key: str
    run: HistoryRun | None = None
    reason: str | None = None
    message: str = ""

    @property
    def folded(self) -> bool:
        return self.run is not None


class EntryFolder:
    """Folds entries written to ``staging`` into the history ``store``; each staged file gets
    an expiry ``run_expiry_days`` after the run was staged (``None``: none recorded); each
    entry's offer is checked against ``nightly_pages`` (:mod:`wheelgate.history.offer`). An
    entry for a directory not in ``allowed_indexes`` (empty: any) is refused; a new
    never-reported run beyond ``staged_runs_per_day`` of its day is dropped
    (:meth:`~wheelgate.history.store.HistoryStore.add_staged_run`)."""

    def __init__(
        self,
        staging: Bucket,
        store: HistoryStore,
        *,
        run_expiry_days: int | None,
        nightly_pages: IndexStore,
        allowed_indexes: frozenset[str] = frozenset(),
        staged_runs_per_day: int = STAGED_RUNS_PER_DAY,
    ) -> None:
        self.staging = staging
        self.store = store
        self.run_expiry_days = run_expiry_days
        self.nightly_pages = nightly_pages
        self.allowed_indexes = allowed_indexes
        self.staged_runs_per_day = staged_runs_per_day

    def fold(self, key: str) -> FoldResult:
        """Fold the entry at ``key``. Returns a refused :class:`FoldResult` for an entry that
        is gone, unreadable, for a directory not allowed, does not match its staged files, or
        whose run was dropped by the day's cap; raises what storage raises."""
        found = self.staging.get(key)
        if found is None:
            return FoldResult(key, reason=REFUSED_GONE, message=f"{key} is gone")
        try:
            entry = StagedEntry.model_validate_json(found[0])
        except ValidationError as exc:
            return FoldResult(
                key,
                reason=REFUSED_FORMAT,
                message=f"{key} is not a history entry: {describe_errors(exc)}",
            )
        try:
            check_index_allowed(key, entry, self.allowed_indexes)
            check_entry(key, entry, self._staged(entry))
        except EntryRefused as refused:
            return FoldResult(key, reason=refused.reason, message=refused.message)
        first = first_staged(self.staging, entry.run_id)
        if first is None:  # its files were there a moment ago: gone since (expired)
            return FoldResult(key, reason=REFUSED_GONE, message=f"run {entry.run_id} is gone")
        staged = with_offer(
            run_of_entry(entry, self.run_expiry_days, staged_at=upload_time(first)),
            entry,
            NightlyReleases(self.nightly_pages),
        )
        # A decision that came first put the run in the month its first staged object was
        # written in (or, with none left, the month it was decided in): no earlier than this.
        month = self.store.find_month(entry.index, entry.run_id, since=staged.month)
        kept = self.store.add_staged_run(
            entry.index,
            month or staged.month,
            entry.run_id,
            lambda run: staged if run is None else merged_run(run, staged),
            cap=self.staged_runs_per_day,
        )
        if kept is None:
            return FoldResult(
                key,
                reason=REFUSED_CAPPED,
                message=f"{entry.index} already lists {self.staged_runs_per_day} never-reported "
                f"runs staged on {staged.staged_at[:10]}: run {entry.run_id} is left out until "
                "it is reported",
            )
        return FoldResult(key, run=kept)

    def _staged(self, entry: StagedEntry) -> dict[str, StagedObject | None]:
        """What staging holds for each of the entry's files: one HEAD each, and for a file
        S3 holds no SHA-256 of (uploaded in parts) whose size and commit are the entry's, one
        read of its bytes, hashed. Never its writer's metadata or ``.sha256`` sidecar."""
        staged: dict[str, StagedObject | None] = {}
        for f in entry.files:
            head = self.staging.head(STAGING.artifact(entry.run_id, entry.index, f.filename))
            if head is None:
                staged[f.filename] = None
                continue
            commit = head.metadata.get(META_COMMIT)
            sha256 = head.s3_sha256
            if sha256 is None and (head.size, commit) == (f.size, entry.commit):
                sha256 = self.staging.sha256_of(head.key, head.etag)
            staged[f.filename] = StagedObject(sha256=sha256, commit=commit, size=head.size)
        return staged


def first_staged(staging: Bucket, run_id: str) -> datetime | None:
    """When run ``run_id`` was first staged, as S3 says: the earliest LastModified of its
    objects (one LIST of ``runs/<run_id>/``); ``None`` when none is left. A build job may
    write any time into an entry, not into S3's clock."""
    times = [
        o.last_modified
        for o in staging.list(STAGING.run_prefix(run_id))
        if o.last_modified is not None
    ]
    return min(times, default=None)
