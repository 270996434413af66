"""The SHA-256 recorded for a staged file, read back without reading the file.

``wheelgate stage`` records each file's SHA-256 where S3 keeps it (a file sent in one request)
or in a ``.sha256`` sidecar (a file hashed as it uploaded in parts, whose object cannot carry
it). Staging reads it to compare a re-run's files, the history to check an entry's files.
"""

from __future__ import annotations

import re

from wheelgate.core.layout import CHECKSUM_SUFFIX
from wheelgate.core.objects import ObjectInfo
from wheelgate.storage.bucket import Bucket

_HEX_SHA256 = re.compile(r"[0-9a-f]{64}")


def recorded_sha256(staging: Bucket, head: ObjectInfo) -> str | None:
    """The SHA-256 recorded for a staged file: S3's own (a file sent in one request), its user
    metadata's, or its ``.sha256`` sidecar's (a file hashed as it uploaded in parts, whose
    object cannot carry it); ``None`` if none is."""
    if head.sha256 is not None:
        return head.sha256
    found = staging.get(head.key + CHECKSUM_SUFFIX)
    if found is None:
        return None
    digest = found[0].decode("ascii", "replace").split(" ", 1)[0].strip().lower()
    return digest if _HEX_SHA256.fullmatch(digest) else None
