"""A stage call's entry in the run history: what it staged, written once for the promoter to
check and fold in (:mod:`wheelgate.history.fold`)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

from wheelgate.core.layout import STAGING
from wheelgate.history.model import EntryFile, OfferFile, StagedEntry
from wheelgate.staging.errors import StageError
from wheelgate.staging.local_artifacts import LocalArtifact
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.errors import PreconditionFailed

ENTRY_CONTENT_TYPE = "application/json"


def staged_entry(
    *,
    run_id: str,
    attempt: int,
    index: str,
    commit: str,
    commit_time: str | None,
    staged_at: str,
    artifacts: Sequence[LocalArtifact],
    offer: Sequence[OfferFile] = (),
) -> StagedEntry:
    """The entry of a call that staged ``artifacts`` (each hashed) for ``run_id``, and the
    nightly files the run's index offered beside them (``offer``). Raises ``ValueError`` for
    a file not hashed yet."""
    return StagedEntry(
        run_id=run_id,
        attempt=attempt,
        index=index,
        commit=commit,
        commit_time=commit_time,
        staged_at=staged_at,
        files=tuple(
            EntryFile(filename=a.filename, sha256=a.digest, size=a.size) for a in artifacts
        ),
        offer=tuple(offer),
    )


def write_entry(staging: Bucket, entry: StagedEntry) -> str:
    """Write ``entry`` once (``If-None-Match: *``) and return its key. Its key names its
    content, so an entry already there is this one. Raises :class:`StageError` when the
    object there holds other bytes (nothing but a stage call writes entries)."""
    key = STAGING.history_entry(entry.index, entry.run_id, entry.entry_id)
    body = entry.to_json().encode()
    try:
        staging.put(key, body, content_type=ENTRY_CONTENT_TYPE, if_none_match=True)
    except PreconditionFailed:
        found = staging.get(key)
        if found is None or not _holds(found[0], entry):
            raise StageError(f"{key} is already written with another entry") from None
    return key


def _holds(body: bytes, entry: StagedEntry) -> bool:
    try:
        return StagedEntry.model_validate_json(body) == entry
    except ValidationError:
        return False
