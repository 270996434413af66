"""The S3 bucket adapter. It takes a boto3 client; nothing here reads the environment.

Errors are translated at this boundary (:mod:`wheelgate.storage.errors`), for the call and for
reading its response body alike: a missing object is ``None``, a lost conditional write is
:class:`PreconditionFailed`, an unreachable endpoint, a timeout, throttling and server errors
are :class:`StorageUnavailable` (a ``TransientError``), a refusal is :class:`AccessError`.
Readers live in :mod:`wheelgate.storage.readers`, file uploads and multipart copies in
:mod:`wheelgate.storage.transfers`.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import urlencode

from botocore.exceptions import ClientError

from wheelgate.core.objects import (
    META_SHA256,
    ListedObject,
    ObjectInfo,
    sha256_b64_to_hex,
)
from wheelgate.storage.errors import (
    PreconditionFailed,
    error_code,
    http_status,
    s3_translated,
)
from wheelgate.storage.limits import TransferLimits
from wheelgate.storage.readers import FileChangedError as FileChangedError
from wheelgate.storage.readers import HashingReader as HashingReader
from wheelgate.storage.readers import S3RangeReader as S3RangeReader

# Also named here, where staging/ and deps/ import them from.
from wheelgate.storage.transfers import ARTIFACT_CONTENT_TYPE as ARTIFACT_CONTENT_TYPE
from wheelgate.storage.transfers import multipart_copy, upload_file

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

_NOT_FOUND = {"404", "NoSuchKey", "NotFound", "NoSuchVersion"}


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


class Bucket:
    """One S3 bucket through one boto3 client, within ``limits`` (the requests a component
    makes at once through it, and its transfers' single-request limit and part sizes)."""

    def __init__(
        self, client: S3Client, name: str, *, limits: TransferLimits | None = None
    ) -> None:
        self.client = client
        self.name = name
        self.limits = limits or TransferLimits()

    def sibling(self, name: str) -> Bucket:
        """The bucket ``name`` through this bucket's client and limits (an import's source)."""
        return Bucket(self.client, name, limits=self.limits)

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
        if_none_match: bool = False,
    ) -> str:
        """Upload a file so that S3 checks its SHA-256, within this bucket's limits; return
        the file's SHA-256 (:func:`wheelgate.storage.transfers.upload_file`)."""
        return upload_file(
            self.client,
            self.name,
            path,
            key,
            sha256=sha256,
            content_type=content_type,
            metadata=metadata,
            limits=self.limits,
            progress=progress,
            if_none_match=if_none_match,
        )

    def copy_in(
        self,
        source: Bucket,
        source_key: str,
        source_etag: str,
        size: int,
        key: str,
        *,
        metadata: Mapping[str, str] | None = None,
        sha256: str | None = None,
    ) -> Copied:
        """Server-side copy that never overwrites; return the copy's ETag and full-object
        SHA-256.

        The source is pinned by ETag. Up to this bucket's ``limits.single_request_limit``
        bytes, S3 computes a full-object SHA-256 of the copy (the request asks for
        ``ChecksumAlgorithm=SHA256``), which is returned for the caller to verify; larger
        objects are copied part by part (this bucket's ``limits.copy_part_size``) and have
        none: such a copy records ``sha256`` (the hash the caller verified the source's bytes
        against) when given. The copy keeps the source's user metadata (the hash
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
        if size <= self.limits.single_request_limit:
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
        etag = multipart_copy(
            self.client,
            self.name,
            source.name,
            source.head(source_key),
            source_key,
            source_etag,
            size,
            key,
            self.limits,
            metadata,
            sha256,
        )
        return Copied(etag=etag, sha256=None)
