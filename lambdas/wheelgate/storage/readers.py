"""Readers over S3 objects and local files: ranged reads of one object version, and the file
wrappers an upload reads through (progress, and the file's SHA-256 hashed as it is read once)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO

from s3transfer.subscribers import BaseSubscriber

from wheelgate.storage.errors import s3_translated

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


class S3RangeReader:
    """:class:`wheelgate.core.wheelmeta.RangeReader` over one S3 object version (pinned by ETag)."""

    def __init__(self, client: S3Client, bucket: str, key: str, size: int, etag: str) -> None:
        self._client = client
        self._bucket = bucket
        self._key = key
        self._size = size
        self._etag = etag
        self.requests = 0
        self.bytes_read = 0

    @property
    def size(self) -> int:
        return self._size

    def read(self, start: int, length: int) -> bytes:
        if length <= 0:
            return b""
        end = min(start + length, self._size) - 1
        with s3_translated(self._client, "GetObject", self._bucket, self._key):
            response = self._client.get_object(
                Bucket=self._bucket,
                Key=self._key,
                Range=f"bytes={start}-{end}",
                IfMatch=self._etag,
            )
            data = response["Body"].read()
        self.requests += 1
        self.bytes_read += len(data)
        return data


class ProgressReader:
    """File wrapper that reports how far into the file the upload has read.

    botocore may read the body more than once (checksums, retries), so progress is the
    furthest offset reached, reported as the increase since the last report.
    """

    def __init__(self, handle: BinaryIO, callback: Callable[[int], None] | None) -> None:
        self._handle = handle
        self._callback = callback
        self._furthest = 0

    def read(self, size: int = -1) -> bytes:
        data = self._handle.read(size)
        position = self._handle.tell()
        if position > self._furthest:
            if self._callback:
                self._callback(position - self._furthest)
            self._furthest = position
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._handle.seek(offset, whence)

    def tell(self) -> int:
        return self._handle.tell()


class FileChangedError(Exception):
    """A local file's bytes are not what the caller said, or changed while they were read."""


class HashingReader:
    """A local file, hashed (SHA-256) as it is read once from start to end.

    A read that goes back over bytes already hashed (a retried request re-reads its body) does
    not hash them twice; a read past the bytes hashed so far, or a file whose length is not
    ``size``, makes :meth:`hexdigest` raise :class:`FileChangedError`.
    """

    def __init__(self, handle: BinaryIO, size: int) -> None:
        self._handle = handle
        self._size = size
        self._digest = hashlib.sha256()
        self._hashed = 0
        self._skipped = False
        self.name = str(getattr(handle, "name", "file"))

    def read(self, size: int = -1) -> bytes:
        start = self._handle.tell()
        data = self._handle.read(size)
        if start > self._hashed:
            self._skipped = True
        elif start + len(data) > self._hashed:
            self._digest.update(memoryview(data)[self._hashed - start :])
            self._hashed = start + len(data)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._handle.seek(offset, whence)

    def tell(self) -> int:
        return self._handle.tell()

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def hexdigest(self) -> str:
        """The SHA-256 of the whole file, once every byte of it has been read."""
        if self._skipped or self._hashed != self._size:
            raise FileChangedError(
                f"{self.name} changed while it was uploaded ({self._hashed:,} of "
                f"{self._size:,} bytes read in order); stage it again"
            )
        return self._digest.hexdigest()


class TransferProgress(BaseSubscriber):
    """s3transfer's progress events as the byte counts ``callback`` takes."""

    def __init__(self, callback: Callable[[int], None]) -> None:
        self._callback = callback

    def on_progress(self, future: Any, bytes_transferred: int, **kwargs: Any) -> None:
        self._callback(bytes_transferred)
