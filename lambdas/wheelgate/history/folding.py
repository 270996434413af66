"""The promoter's folding of one stage entry: read it, check it against the staged objects,
and merge its run into the history (:class:`EntryFolder`).

An entry that is not JSON, not an entry (a time without a zone included), for a directory the
deployment does not serve, or does not match what is staged is refused with a reason and never
retried (:class:`FoldResult`); only a storage error or a history that keeps changing raises, so
that the event is delivered again. What the history keeps of a run is checked or the
promoter's own: its files' SHA-256 are S3's or hashed from the bytes, its staging time the
earliest write of its objects (:func:`first_staged`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pydantic import ValidationError

from wheelgate.core.layout import STAGING
from wheelgate.core.manifest import describe_errors
from wheelgate.core.objects import META_COMMIT
from wheelgate.core.timestamps import upload_time
from wheelgate.history.fold import (
    EntryRefused,
    StagedObject,
    check_entry,
    check_index_allowed,
    merged_run,
    run_of_entry,
)
from wheelgate.history.model import HistoryRun, StagedEntry
from wheelgate.history.offer import NightlyReleases, with_offer
from wheelgate.history.store import STAGED_RUNS_PER_DAY, HistoryStore
from wheelgate.index.store import IndexStore
from wheelgate.storage.bucket import Bucket

#: Reason codes of an entry that could not be read.
REFUSED_GONE = "entry-gone"
REFUSED_FORMAT = "entry-format"
#: A new never-reported run beyond its day's cap (:data:`~.store.STAGED_RUNS_PER_DAY`).
REFUSED_CAPPED = "day-capped"


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
