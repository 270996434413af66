"""An in-memory S3 bucket with :class:`~wheelgate.storage.bucket.Bucket`'s interface, for the
promotion unit tests.

It keeps what the promoter relies on: ETags, conditional writes (``If-Match``,
``If-None-Match``) and pinned reads, a SHA-256 checksum on every single-request write and copy
(none on a multipart copy, whose ETag ends in ``-<parts>``), user metadata (a copy keeps the
source's unless replaced), listings with and without a delimiter, and one world of buckets
shared by siblings. ``tests/integration/test_memory_bucket.py`` runs the same assertions
against it and the local S3, so it cannot drift from the real thing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, BinaryIO

from wheelgate.core.objects import META_SHA256, ListedObject, ObjectInfo
from wheelgate.storage.bucket import Copied, ObjectLock
from wheelgate.storage.errors import PreconditionFailed
from wheelgate.storage.limits import TransferLimits


@dataclass
class _Object:
    body: bytes
    etag: str
    metadata: dict[str, str]
    sha256: str | None
    modified: datetime


@dataclass
class World:
    """Every bucket of one fake S3, by name; ``calls`` counts requests by operation; every
    bucket has ``limits``."""

    buckets: dict[str, dict[str, _Object]] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    limits: TransferLimits = field(default_factory=TransferLimits)

    def bucket(self, name: str) -> MemoryBucket:
        self.buckets.setdefault(name, {})
        return MemoryBucket(self, name)


def _etag(body: bytes, parts: int = 0) -> str:
    digest = hashlib.md5(body, usedforsecurity=False).hexdigest()
    return f'"{digest}-{parts}"' if parts else f'"{digest}"'


class MemoryBucket:
    """One bucket of a :class:`World`."""

    def __init__(self, world: World, name: str) -> None:
        self.world = world
        self.name = name
        self.limits = world.limits

    @property
    def objects(self) -> dict[str, _Object]:
        return self.world.buckets[self.name]

    def _count(self, operation: str) -> None:
        self.world.calls[operation] = self.world.calls.get(operation, 0) + 1

    def _version(self, key: str, if_match: str | None) -> _Object | None:
        found = self.objects.get(key)
        if found is not None and if_match and found.etag != if_match:
            raise PreconditionFailed(f"memory://{self.name}/{key}: 412")
        return found

    def sibling(self, name: str) -> MemoryBucket:
        return self.world.bucket(name)

    def range_reader(self, key: str, size: int, etag: str) -> _RangeReader:
        return _RangeReader(self, key, size, etag)

    def head(self, key: str) -> ObjectInfo | None:
        self._count("HeadObject")
        found = self.objects.get(key)
        if found is None:
            return None
        return ObjectInfo(
            key=key,
            size=len(found.body),
            etag=found.etag,
            s3_sha256=found.sha256,
            metadata=dict(found.metadata),
        )

    def get(self, key: str, *, if_match: str | None = None) -> tuple[bytes, str] | None:
        self._count("GetObject")
        found = self._version(key, if_match)
        return None if found is None else (found.body, found.etag)

    def sha256_of(self, key: str, etag: str, chunk: int = 8 * 1024 * 1024) -> str:
        return self.read_into(key, None, if_match=etag, chunk=chunk)

    def read_into(
        self,
        key: str,
        handle: BinaryIO | None,
        *,
        if_match: str | None = None,
        chunk: int = 8 * 1024 * 1024,
    ) -> str:
        self._count("GetObject")
        found = self._version(key, if_match)
        if found is None:
            raise PreconditionFailed(key)
        if handle is not None:
            handle.write(found.body)
        return hashlib.sha256(found.body).hexdigest()

    def list(self, prefix: str, *, direct: bool = False) -> Iterator[ListedObject]:
        self._count("ListObjectsV2")
        for key in sorted(self.objects):
            if not key.startswith(prefix) or (direct and "/" in key[len(prefix) :]):
                continue
            found = self.objects[key]
            yield ListedObject(key, len(found.body), found.etag, found.modified)

    def put(
        self,
        key: str,
        body: bytes,
        *,
        content_type: str,
        cache_control: str | None = None,
        if_match: str | None = None,
        if_none_match: bool = False,
        metadata: Mapping[str, str] | None = None,
        lock: ObjectLock | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> str:
        self._count("PutObject")
        found = self._version(key, if_match)
        if if_match and found is None:
            raise PreconditionFailed(f"memory://{self.name}/{key}: NoSuchKey")
        if if_none_match and found is not None:
            raise PreconditionFailed(f"memory://{self.name}/{key}: 412")
        sha256 = hashlib.sha256(body).hexdigest()
        stored = _Object(
            body=body,
            etag=_etag(body),
            metadata={**(metadata or {}), META_SHA256: sha256},
            sha256=sha256,
            modified=datetime.now(UTC),
        )
        self.objects[key] = stored
        return stored.etag

    def commit(
        self,
        key: str,
        body: bytes,
        *,
        etag: str | None,
        content_type: str,
        cache_control: str | None = None,
        lock: ObjectLock | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> bool:
        try:
            self.put(
                key,
                body,
                content_type=content_type,
                cache_control=cache_control,
                if_match=etag,
                if_none_match=etag is None,
                lock=lock,
                tags=tags,
            )
        except PreconditionFailed:
            return False
        return True

    def copy_in(
        self,
        source: Any,
        source_key: str,
        source_etag: str,
        size: int,
        key: str,
        *,
        metadata: Mapping[str, str] | None = None,
        sha256: str | None = None,
    ) -> Copied:
        self._count("CopyObject")
        original = source.objects.get(source_key)
        if original is None or original.etag != source_etag or key in self.objects:
            raise PreconditionFailed(f"memory://{self.name}/{key}: 412")
        recorded = dict(original.metadata if metadata is None else metadata)
        multipart = size > self.limits.single_request_limit
        if multipart and sha256:
            recorded[META_SHA256] = sha256
        parts = -(-size // self.limits.copy_part_size) if multipart else 0
        copy = _Object(
            body=original.body,
            etag=_etag(original.body, parts),
            metadata=recorded,
            sha256=None if multipart else hashlib.sha256(original.body).hexdigest(),
            modified=datetime.now(UTC),
        )
        self.objects[key] = copy
        return Copied(etag=copy.etag, sha256=copy.sha256)


class _RangeReader:
    """Ranged reads of one version of an object (pinned by ETag), as ``S3RangeReader``."""

    def __init__(self, bucket: MemoryBucket, key: str, size: int, etag: str) -> None:
        self._bucket = bucket
        self._key = key
        self._size = size
        self._etag = etag

    @property
    def size(self) -> int:
        return self._size

    def read(self, start: int, length: int) -> bytes:
        if length <= 0:
            return b""
        found = self._bucket.get(self._key, if_match=self._etag)
        if found is None:
            raise PreconditionFailed(self._key)
        return found[0][start : min(start + length, self._size)]
