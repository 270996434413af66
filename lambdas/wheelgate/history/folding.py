"""The promoter's folding of one stage entry: read it, check it against the staged objects,
and merge its run into the history (:class:`EntryFolder`).

An entry that is not JSON, not an entry, or does not match what is staged is refused with a
reason and never retried (:class:`FoldResult`); only a storage error or a history that keeps
changing raises, so that the event is delivered again.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from wheelgate.core.layout import STAGING
from wheelgate.core.manifest import describe_errors
from wheelgate.core.objects import META_COMMIT
from wheelgate.history.fold import (
    EntryRefused,
    StagedObject,
    check_entry,
    merged_run,
    run_of_entry,
)
from wheelgate.history.model import HistoryRun, StagedEntry
from wheelgate.history.offer import NightlyReleases, with_offer
from wheelgate.history.store import HistoryStore
from wheelgate.index.store import IndexStore
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.recorded_checksum import recorded_sha256

#: Reason codes of an entry that could not be read.
REFUSED_GONE = "entry-gone"
REFUSED_FORMAT = "entry-format"


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
    entry's offer is checked against ``nightly_pages`` (:mod:`wheelgate.history.offer`)."""

    def __init__(
        self,
        staging: Bucket,
        store: HistoryStore,
        *,
        run_expiry_days: int | None,
        nightly_pages: IndexStore,
    ) -> None:
        self.staging = staging
        self.store = store
        self.run_expiry_days = run_expiry_days
        self.nightly_pages = nightly_pages

    def fold(self, key: str) -> FoldResult:
        """Fold the entry at ``key``. Returns a refused :class:`FoldResult` for an entry that
        is gone, unreadable or does not match its staged files; raises what storage raises."""
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
            check_entry(key, entry, self._staged(entry))
        except EntryRefused as refused:
            return FoldResult(key, reason=refused.reason, message=refused.message)
        staged = with_offer(
            run_of_entry(entry, self.run_expiry_days), entry, NightlyReleases(self.nightly_pages)
        )
        # A decision that came first put the run in the month its first staged object was
        # written in, which is no earlier than the entry's: it is merged there.
        month = self.store.find_month(entry.index, entry.run_id, since=staged.month)
        kept = self.store.change_run(
            entry.index,
            month or staged.month,
            entry.run_id,
            lambda run: staged if run is None else merged_run(run, staged),
        )
        return FoldResult(key, run=kept)

    def _staged(self, entry: StagedEntry) -> dict[str, StagedObject | None]:
        """What staging holds for each of the entry's files (one HEAD each, and a sidecar GET
        for a file uploaded in parts)."""
        staged: dict[str, StagedObject | None] = {}
        for f in entry.files:
            head = self.staging.head(STAGING.artifact(entry.run_id, entry.index, f.filename))
            staged[f.filename] = (
                None
                if head is None
                else StagedObject(
                    sha256=recorded_sha256(self.staging, head),
                    commit=head.metadata.get(META_COMMIT),
                    size=head.size,
                )
            )
        return staged
