"""S3 adapters. Every class takes a boto3 client; nothing here reads the environment.

Errors are translated at this boundary (:mod:`wheelgate.storage.errors`), for the call and for
reading its response body alike: a missing object is ``None``, a lost conditional write is
:class:`PreconditionFailed`, an unreachable endpoint, a timeout, throttling and server errors
are :class:`StorageUnavailable` (a ``TransientError``), a refusal is :class:`AccessError`.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import random
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import urlencode

from botocore.exceptions import BotoCoreError, ClientError
from s3transfer.manager import TransferConfig, TransferManager
from s3transfer.subscribers import BaseSubscriber

from wheelgate.core.objects import (
    META_SHA256,
    ListedObject,
    ObjectInfo,
    sha256_b64_to_hex,
    sha256_hex_to_b64,
)
from wheelgate.storage.errors import (
    PreconditionFailed,
    endpoint_of,
    error_code,
    http_status,
    translated,
)

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

#: Content type of a stored wheel or sdist.
ARTIFACT_CONTENT_TYPE = "application/octet-stream"
#: S3's single-request limit for PutObject and CopyObject.
SINGLE_REQUEST_LIMIT = 5 * 1024**3
#: Part size for multipart copies of larger objects (S3 allows at most 10,000 parts): copies
#: are server-side, so a part costs a request and no memory.
MULTIPART_PART_SIZE = 512 * 1024**2
#: Part size for multipart uploads of larger files: the parts in flight are held in memory,
#: so UPLOAD_CONCURRENCY parts of 16 MiB keep an upload's buffers near 128 MiB (a 6 GiB file
#: is 384 parts; s3transfer raises the size where 10,000 parts would not hold the file).
UPLOAD_PART_SIZE = 16 * 1024**2
#: Each part's checksum, which S3 verifies as the part arrives. Not SHA-256: a multipart
#: object keeps only a composite of its parts' checksums, which nothing here reads (the file's
#: SHA-256 is computed from the same single read), and a SHA-256 per part would hash every
#: byte once more in the client and once more in the server (zlib's CRC32 costs far less).
UPLOAD_PART_CHECKSUM = "CRC32"
#: Parts uploading at once, and held in memory at once.
UPLOAD_CONCURRENCY = 8

logger = logging.getLogger(__name__)

_NOT_FOUND = {"404", "NoSuchKey", "NotFound", "NoSuchVersion"}


def retry_delay(attempt: int) -> float:
    """Seconds to wait before retrying after losing a conditional write for the ``attempt``-th
    time: exponential, capped at 2 s, with jitter so that racing writers spread out."""
    return float(min(2.0, 0.02 * 2**attempt) * random.uniform(0.5, 1.0))  # noqa: S311


@dataclass(frozen=True)
class ObjectLock:
    """An explicit Object Lock for one written version: ``mode`` (``GOVERNANCE`` or
    ``COMPLIANCE``) until ``until``. Without one, a version takes the bucket's default."""

    mode: str
    until: datetime


@dataclass(frozen=True)
class Copied:
    """A server-side copy: the copy's ETag and the full-object SHA-256 S3 computed of it
    (``None`` for a multipart copy, of which S3 keeps a composite checksum only)."""

    etag: str
    sha256: str | None


def s3_translated(client: S3Client, operation: str, bucket: str, key: str) -> Any:
    """:func:`~wheelgate.storage.errors.translated` for ``operation`` on ``s3://bucket/key``
    through ``client``'s endpoint."""
    return translated(operation, f"s3://{bucket}/{key}", endpoint_of(client))


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


class _Progress(BaseSubscriber):
    """s3transfer's progress events as the byte counts ``callback`` takes."""

    def __init__(self, callback: Callable[[int], None]) -> None:
        self._callback = callback

    def on_progress(self, future: Any, bytes_transferred: int, **kwargs: Any) -> None:
        self._callback(bytes_transferred)


class Bucket:
    """One S3 bucket through one boto3 client."""

    def __init__(self, client: S3Client, name: str) -> None:
        self.client = client
        self.name = name

    def sibling(self, name: str) -> Bucket:
        """The bucket ``name`` through this bucket's client (an import's source)."""
        return Bucket(self.client, name)

    def range_reader(self, key: str, size: int, etag: str) -> S3RangeReader:
        """Ranged reads of the version of ``key`` with ETag ``etag`` (``size`` bytes)."""
        return S3RangeReader(self.client, self.name, key, size, etag)

    def _translated(self, operation: str, key: str) -> Any:
        """Translate botocore's errors of ``operation`` on ``key`` (a context manager)."""
        return s3_translated(self.client, operation, self.name, key)

    def _call(self, key: str, fn: Callable[..., Any], **kwargs: Any) -> Any:
        """``fn`` (a client method) on ``key``: its response, or ``None`` for no such object."""
        operation = self.client.meta.method_to_api_mapping.get(fn.__name__, fn.__name__)
        with self._translated(operation, key):
            try:
                return fn(Bucket=self.name, Key=key, **kwargs)
            except ClientError as exc:
                code = error_code(exc)
                if code in _NOT_FOUND or (http_status(exc) == "404" and code != "NoSuchBucket"):
                    return None
                raise

    def head(self, key: str) -> ObjectInfo | None:
        response = self._call(key, self.client.head_object, ChecksumMode="ENABLED")
        if response is None:
            return None
        checksum = response.get("ChecksumSHA256")
        etag = str(response["ETag"])
        # S3 keeps only a composite (checksum-of-parts) SHA-256 for multipart objects, which
        # is not the file's hash; a multipart ETag ends in "-<parts>".
        composite = response.get("ChecksumType") == "COMPOSITE" or "-" in etag.strip('"')
        return ObjectInfo(
            key=key,
            size=int(response["ContentLength"]),
            etag=etag,
            s3_sha256=sha256_b64_to_hex(checksum) if checksum and not composite else None,
            metadata=dict(response.get("Metadata", {})),
            version_id=response.get("VersionId"),
        )

    def sha256_of(self, key: str, etag: str, chunk: int = 8 * 1024 * 1024) -> str:
        """SHA-256 of the object version with ETag ``etag``, computed from its bytes.

        For a multipart object, whose only S3 checksum is composite (a checksum of part
        checksums), this is the one way to know its full-object SHA-256 without trusting what
        its writer said: it reads the whole object once.
        """
        return self.read_into(key, None, if_match=etag, chunk=chunk)

    def read_into(
        self,
        key: str,
        handle: BinaryIO | None,
        *,
        if_match: str | None = None,
        chunk: int = 8 * 1024 * 1024,
    ) -> str:
        """Stream the object (only the version with ETag ``if_match``, if given) into
        ``handle`` (or nowhere) in ``chunk``-byte pieces, and return the SHA-256 of the bytes
        read. Raises :class:`PreconditionFailed` when there is no such object (version)."""
        condition = {"IfMatch": if_match} if if_match else {}
        response = self._call(key, self.client.get_object, **condition)
        if response is None:
            raise PreconditionFailed(key)
        digest = hashlib.sha256()
        body = response["Body"]
        with self._translated("GetObject", key):
            while data := body.read(chunk):
                digest.update(data)
                if handle is not None:
                    handle.write(data)
        return digest.hexdigest()

    def get(self, key: str, *, if_match: str | None = None) -> tuple[bytes, str] | None:
        """Body and ETag, or ``None`` if there is no such object. With ``if_match``, only the
        version with that ETag: another one raises :class:`PreconditionFailed`."""
        condition = {"IfMatch": if_match} if if_match else {}
        response = self._call(key, self.client.get_object, **condition)
        if response is None:
            return None
        with self._translated("GetObject", key):
            return response["Body"].read(), str(response["ETag"])

    def list(self, prefix: str, *, direct: bool = False) -> Iterator[ListedObject]:
        """Objects under ``prefix``; with ``direct``, only those directly in it (not in its
        "subfolders"), so the cost does not grow with what the subfolders hold."""
        paginator = self.client.get_paginator("list_objects_v2")
        with self._translated("ListObjectsV2", prefix):
            pages = (
                paginator.paginate(Bucket=self.name, Prefix=prefix, Delimiter="/")
                if direct
                else paginator.paginate(Bucket=self.name, Prefix=prefix)
            )
            for page in pages:
                for item in page.get("Contents", []):
                    yield ListedObject(
                        item["Key"], int(item["Size"]), str(item["ETag"]), item.get("LastModified")
                    )

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
        """Write a small object with a SHA-256 checksum; return its ETag.

        ``if_match`` / ``if_none_match`` make the write conditional; a lost condition (an
        ``if_match`` key that is gone included) raises :class:`PreconditionFailed`. ``lock``
        gives the version its own Object Lock (the writer needs ``s3:PutObjectRetention``);
        ``tags`` are its object tags (the writer needs ``s3:PutObjectTagging``).
        """
        digest = hashlib.sha256(body).digest()
        kwargs: dict[str, Any] = {
            "Body": body,
            "ContentType": content_type,
            "ChecksumAlgorithm": "SHA256",
            "ChecksumSHA256": base64.b64encode(digest).decode(),
            # Also in metadata: not every S3 implementation stores the checksum.
            "Metadata": {**(metadata or {}), META_SHA256: digest.hex()},
        }
        if cache_control:
            kwargs["CacheControl"] = cache_control
        if if_match:
            kwargs["IfMatch"] = if_match
        if if_none_match:
            kwargs["IfNoneMatch"] = "*"
        if lock is not None:
            kwargs["ObjectLockMode"] = lock.mode
            kwargs["ObjectLockRetainUntilDate"] = lock.until
        if tags:
            kwargs["Tagging"] = urlencode(tags)
        with self._translated("PutObject", key):
            try:
                response = self.client.put_object(Bucket=self.name, Key=key, **kwargs)
            except ClientError as exc:
                if if_match and error_code(exc) in _NOT_FOUND:
                    # S3 answers If-Match on a key that is gone with 404: the version read is.
                    raise PreconditionFailed(f"s3://{self.name}/{key}: {error_code(exc)}") from exc
                raise
        return str(response["ETag"])

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
        """Write ``key`` only if it is still the version read (ETag ``etag``; absent when
        ``None``). ``False`` when another writer changed it first: re-read and re-apply.
        ``lock`` and ``tags`` as for :meth:`put`."""
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

    def upload_file(
        self,
        path: Path,
        key: str,
        *,
        sha256: str | None,
        content_type: str,
        metadata: Mapping[str, str],
        progress: Callable[[int], None] | None = None,
        part_size: int = UPLOAD_PART_SIZE,
        single_request_limit: int = SINGLE_REQUEST_LIMIT,
        if_none_match: bool = False,
    ) -> str:
        """Upload a file so that S3 checks its SHA-256; return the file's SHA-256.

        Up to ``single_request_limit`` bytes go in one PutObject carrying the full-object
        SHA-256 (``sha256``, computed first when ``None``), which S3 verifies; it is also kept
        in user metadata. A larger file is uploaded in parts of ``part_size``,
        :data:`UPLOAD_CONCURRENCY` at a time, each with its own :data:`UPLOAD_PART_CHECKSUM`
        that S3 verifies, and the file's SHA-256 is computed from the same single read: with
        ``sha256`` given it is kept in user metadata and the upload is abandoned before it
        completes if the file's bytes are not those; without it, user metadata cannot carry
        it (S3 takes an object's metadata when the upload starts, and keeps only a composite
        checksum of a multipart object) and the caller records the returned hash.

        With ``if_none_match`` the write never replaces an object: if ``key`` exists (or is
        written concurrently) it raises :class:`PreconditionFailed`. Raises
        :class:`FileChangedError` when the file's bytes are not ``sha256`` or change while
        they are read.
        """
        size = path.stat().st_size
        meta = {**metadata, META_SHA256: sha256} if sha256 else dict(metadata)
        if size > single_request_limit:
            return self._multipart_upload(
                path, key, size, sha256, content_type, meta, progress, part_size, if_none_match
            )
        if sha256 is None:
            raise ValueError(f"{path}: a file sent in one request needs its SHA-256 first")
        condition = {"IfNoneMatch": "*"} if if_none_match else {}
        with path.open("rb") as handle, self._translated("PutObject", key):
            self.client.put_object(
                Bucket=self.name,
                Key=key,
                Body=ProgressReader(handle, progress),  # type: ignore[arg-type]
                ContentLength=size,
                ContentType=content_type,
                ChecksumAlgorithm="SHA256",
                ChecksumSHA256=sha256_hex_to_b64(sha256),
                Metadata=meta,
                **condition,  # type: ignore[arg-type]
            )
        return sha256

    def _multipart_upload(
        self,
        path: Path,
        key: str,
        size: int,
        sha256: str | None,
        content_type: str,
        metadata: Mapping[str, str],
        progress: Callable[[int], None] | None,
        part_size: int,
        if_none_match: bool,
    ) -> str:
        """s3transfer's TransferManager uploads the parts: concurrency, the parts held in
        memory (bounded by ``max_in_memory_upload_chunks``), each part's checksum (botocore
        computes it from the bytes it sends, and S3 checks it), and the AbortMultipartUpload
        after a failure, whose own failure it logs rather than raising in place of the first
        error. Given an open file, it reads the parts in order in one thread, so
        :class:`HashingReader` sees the file once from start to end.

        Our own code is what the library does not do: ``If-None-Match: *`` on
        CompleteMultipartUpload (not among the arguments it passes to that call) and the check
        of the file's hash before it, both added to that one request by a handler on the
        client (:meth:`_on_complete`)."""
        transfer = TransferManager(
            self.client,
            TransferConfig(
                multipart_threshold=1,
                multipart_chunksize=part_size,
                max_request_concurrency=UPLOAD_CONCURRENCY,
                max_in_memory_upload_chunks=UPLOAD_CONCURRENCY,
            ),
        )
        with path.open("rb") as handle:
            reader = HashingReader(handle, size)
            check = self._on_complete(key, reader, sha256, if_none_match)
            event = "before-parameter-build.s3.CompleteMultipartUpload"
            handler_id = f"wheelgate-complete-{id(reader)}"
            self.client.meta.events.register(event, check, unique_id=handler_id)
            try:
                with self._translated("multipart upload", key):
                    future = transfer.upload(
                        reader,  # type: ignore[arg-type]
                        self.name,
                        key,
                        extra_args={
                            "ContentType": content_type,
                            "ChecksumAlgorithm": UPLOAD_PART_CHECKSUM,
                            "Metadata": dict(metadata),
                        },
                        subscribers=[_Progress(progress)] if progress else None,
                    )
                    future.result()
            finally:
                self.client.meta.events.unregister(event, unique_id=handler_id)
                transfer.shutdown()
        return reader.hexdigest()

    def _on_complete(
        self, key: str, reader: HashingReader, sha256: str | None, if_none_match: bool
    ) -> Callable[..., None]:
        """Handler for this upload's CompleteMultipartUpload: raising stops the upload before
        it completes (the transfer manager then aborts it)."""

        def check(params: dict[str, Any], **_: Any) -> None:
            if params.get("Bucket") != self.name or params.get("Key") != key:
                return
            digest = reader.hexdigest()
            if sha256 is not None and digest != sha256:
                raise FileChangedError(
                    f"{reader.name}: its bytes have SHA-256 {digest}, not {sha256}; "
                    "the upload was abandoned"
                )
            if if_none_match:
                params["IfNoneMatch"] = "*"

        return check

    def copy_in(
        self,
        source: Bucket,
        source_key: str,
        source_etag: str,
        size: int,
        key: str,
        *,
        part_size: int = MULTIPART_PART_SIZE,
        single_request_limit: int = SINGLE_REQUEST_LIMIT,
        metadata: Mapping[str, str] | None = None,
        sha256: str | None = None,
    ) -> Copied:
        """Server-side copy that never overwrites; return the copy's ETag and full-object
        SHA-256.

        The source is pinned by ETag. Up to ``single_request_limit`` bytes, S3 computes a
        full-object SHA-256 of the copy (the request asks for ``ChecksumAlgorithm=SHA256``),
        which is returned for the caller to verify; larger objects are copied part by part and
        have none: such a copy records ``sha256`` (the hash the caller verified the source's
        bytes against) when given. The copy keeps the source's user metadata (the hash
        recorded in it travels with the copy), or has ``metadata`` instead (and the content
        type of a distribution file). Raises :class:`PreconditionFailed` if ``key`` exists.
        """
        copy_source = {"Bucket": source.name, "Key": source_key}
        replaced: dict[str, Any] = (
            {}
            if metadata is None
            else {
                "MetadataDirective": "REPLACE",
                "Metadata": dict(metadata),
                "ContentType": ARTIFACT_CONTENT_TYPE,
            }
        )
        if size <= single_request_limit:
            with self._translated("CopyObject", key):
                response = self.client.copy_object(
                    Bucket=self.name,
                    Key=key,
                    CopySource=copy_source,  # type: ignore[arg-type]
                    CopySourceIfMatch=source_etag,
                    IfNoneMatch="*",
                    ChecksumAlgorithm="SHA256",
                    **replaced,
                )
            result = response.get("CopyObjectResult", {})
            checksum = result.get("ChecksumSHA256")
            return Copied(
                etag=str(result.get("ETag", "")),
                sha256=sha256_b64_to_hex(checksum) if checksum else None,
            )
        etag = self._multipart_copy(
            source, source_key, source_etag, size, key, part_size, metadata, sha256
        )
        return Copied(etag=etag, sha256=None)

    def _multipart_copy(
        self,
        source: Bucket,
        source_key: str,
        source_etag: str,
        size: int,
        key: str,
        part: int,
        metadata: Mapping[str, str] | None,
        sha256: str | None,
    ) -> str:
        """Our own code, not s3transfer's managed copy: every part copy is pinned to the
        source's ETag and the completion is ``If-None-Match: *`` (the managed copy passes
        neither to those calls), and the copy records the verified SHA-256."""
        head = source.head(source_key)
        if head is None or head.etag != source_etag:
            raise PreconditionFailed(f"s3://{source.name}/{source_key} changed during the copy")
        recorded = dict(head.metadata if metadata is None else metadata)
        if sha256:
            recorded[META_SHA256] = sha256
        with self._translated("multipart copy", key):
            upload = self.client.create_multipart_upload(
                Bucket=self.name,
                Key=key,
                ContentType=ARTIFACT_CONTENT_TYPE,
                Metadata=recorded,
            )
            upload_id = upload["UploadId"]
            ranges = [(start, min(start + part, size) - 1) for start in range(0, size, part)]

            def copy_part(numbered: tuple[int, tuple[int, int]]) -> dict[str, Any]:
                number, (first, last) = numbered
                result = self.client.upload_part_copy(
                    Bucket=self.name,
                    Key=key,
                    UploadId=upload_id,
                    PartNumber=number,
                    CopySource={"Bucket": source.name, "Key": source_key},
                    CopySourceIfMatch=source_etag,
                    CopySourceRange=f"bytes={first}-{last}",
                )
                return {"PartNumber": number, "ETag": result["CopyPartResult"]["ETag"]}

            try:
                with ThreadPoolExecutor(max_workers=8) as pool:
                    parts = list(pool.map(copy_part, enumerate(ranges, start=1)))
                completed = self.client.complete_multipart_upload(
                    Bucket=self.name,
                    Key=key,
                    UploadId=upload_id,
                    MultipartUpload={"Parts": parts},  # type: ignore[typeddict-item]
                    IfNoneMatch="*",
                )
                return str(completed["ETag"])
            except BaseException:
                self._abort(key, upload_id)
                raise

    def _abort(self, key: str, upload_id: str) -> None:
        """Abandon a multipart upload after a failure. That failure is what the caller sees:
        an abort that fails too (the upload already gone, the endpoint down) is logged, never
        raised in its place; an upload left behind is removed by the bucket's
        incomplete-upload lifecycle rule."""
        try:
            self.client.abort_multipart_upload(Bucket=self.name, Key=key, UploadId=upload_id)
        except (ClientError, BotoCoreError) as exc:
            logger.warning(
                "s3://%s/%s: abandoning upload %s failed too: %s", self.name, key, upload_id, exc
            )
