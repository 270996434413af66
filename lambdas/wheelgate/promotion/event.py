"""What the promotion service is handed: one manifest event, and who may have written it.

:class:`ManifestEvent` is an S3 ObjectCreated event for a key under ``manifests/`` (a run's
manifest, a yank request or a break-glass override request), with the writer S3 names.
:func:`written_by` tells whether that writer is a given role; every route checks it before it
parses the object.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


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


def written_by(principal_id: str | None, role_id: str) -> bool:
    """Whether an S3 event's ``principalId`` is the role with unique id ``role_id`` (any of
    its sessions: ``AWS:<role id>:<session>``)."""
    return principal_id is not None and (
        principal_id == f"AWS:{role_id}" or principal_id.startswith(f"AWS:{role_id}:")
    )
