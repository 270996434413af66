"""What the promotion service is handed: one manifest event, and the request it carries.

:class:`ManifestEvent` is an S3 ObjectCreated event for a key under ``manifests/`` (a run's
manifest, a yank, override or import request), with the writer S3 names.
:func:`parse_request` reads the bytes that writer wrote into a :class:`Request`, the one value
every route takes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from wheelgate.core.layout import STAGING, LayoutError
from wheelgate.core.records import PromotionRecord
from wheelgate.promotion.recorder import RecordStore
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.errors import PreconditionFailed


@dataclass(frozen=True)
class ManifestEvent:
    """An S3 ObjectCreated event for a manifest key: ``principal_id`` is who wrote it, and
    ``etag`` the ETag of what that writer wrote (so a later write by someone else is never
    taken for this writer's). ``event_time`` is when S3 says the manifest was written."""

    key: str
    principal_id: str | None = None
    etag: str | None = None
    #: The SQS message body that carried the event (a failed fan-out execution sends it back
    #: to the queue) and the event's time; ``None`` where the event came from elsewhere.
    body: str | None = None
    event_time: datetime | None = None


@dataclass(frozen=True)
class Request:
    """A manifest or request as its event's writer wrote it: the run id its key names, its
    bytes and their SHA-256, the writer (``actor``), and the run's record so far. ``at`` is
    the time of the decision on it, taken once by the service: every record and page the
    decision writes is stamped with it."""

    run_id: str
    raw: bytes
    digest: str
    actor: str | None
    existing: PromotionRecord | None
    event: ManifestEvent
    at: datetime


def parse_request(
    event: ManifestEvent, staging: Bucket, records: RecordStore, *, at: datetime
) -> Request | None:
    """The request ``event`` names, read from ``staging`` (the version its writer wrote), with
    its run's record from ``records``, to be decided ``at``. ``None`` when the key is not a
    manifest's, or the object is gone or was overwritten since (the newer write has an event
    of its own, judged on its own writer)."""
    try:
        run_id = STAGING.run_id_from_manifest_key(event.key)
    except LayoutError:
        return None
    try:
        found = staging.get(event.key, if_match=event.etag)
    except PreconditionFailed:
        return None
    if found is None:
        return None
    raw, _etag = found
    return Request(
        run_id=run_id,
        raw=raw,
        digest=hashlib.sha256(raw).hexdigest(),
        actor=event.principal_id,
        existing=records.load(run_id),
        event=event,
        at=at,
    )
