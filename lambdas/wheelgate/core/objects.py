"""What WheelGate knows about a stored object, and the user metadata it keeps on files. Pure."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

#: User metadata WheelGate stores on staged and released files (``x-amz-meta-*``).
META_SHA256 = "wheelgate-sha256"
META_COMMIT = "wheelgate-commit"
META_RUN_ID = "wheelgate-run-id"
#: On a file an import gathered into staging: the ``s3://`` URI it was copied from, and the
#: source object's ETag then (a source that changed since is not imported from that copy).
META_IMPORT_SOURCE = "wheelgate-import-source"
META_SOURCE_ETAG = "wheelgate-source-etag"


def sha256_b64_to_hex(value: str) -> str | None:
    """Hex digest from S3's base64 ``ChecksumSHA256``; ``None`` for a composite (``-N``)."""
    if "-" in value:
        return None
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw.hex() if len(raw) == 32 else None


def sha256_hex_to_b64(value: str) -> str:
    return base64.b64encode(bytes.fromhex(value)).decode()


@dataclass(frozen=True)
class ObjectInfo:
    """What a HEAD tells about an object.

    ``s3_sha256`` is the full-object SHA-256 S3 computed (``None`` if S3 has only a composite
    checksum or none); ``meta_sha256`` is the one WheelGate recorded in user metadata.
    """

    key: str
    size: int
    etag: str
    s3_sha256: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    version_id: str | None = None

    @property
    def meta_sha256(self) -> str | None:
        return self.metadata.get(META_SHA256)

    @property
    def sha256(self) -> str | None:
        """The best SHA-256 known: S3's own if it has one, else the recorded one."""
        return self.s3_sha256 or self.meta_sha256


@dataclass(frozen=True)
class ListedObject:
    key: str
    size: int
    etag: str
    last_modified: datetime | None = None
