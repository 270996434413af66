"""Transfers: a local file uploaded so that S3 checks its SHA-256 (in one request, or in parts
that s3transfer sends, with our own completion check), and a server-side copy part by part.
Multipart ones complete with ``If-None-Match: *``."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError
from s3transfer.manager import TransferConfig, TransferManager

from wheelgate.core.objects import META_SHA256, ObjectInfo, sha256_hex_to_b64
from wheelgate.storage.errors import PreconditionFailed, s3_translated
from wheelgate.storage.limits import TransferLimits
from wheelgate.storage.readers import (
    FileChangedError,
    HashingReader,
    ProgressReader,
    TransferProgress,
)

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

#: Content type of a stored wheel or sdist.
ARTIFACT_CONTENT_TYPE = "application/octet-stream"
#: Each part's checksum, which S3 verifies as the part arrives. Not SHA-256: a multipart
#: object keeps only a composite of its parts' checksums, which nothing here reads (the file's
#: SHA-256 is computed from the same single read), and a SHA-256 per part would hash every
#: byte once more in the client and once more in the server (zlib's CRC32 costs far less).
UPLOAD_PART_CHECKSUM = "CRC32"

logger = logging.getLogger(__name__)


def upload_file(
    client: S3Client,
    bucket: str,
    path: Path,
    key: str,
    *,
    sha256: str | None,
    content_type: str,
    metadata: Mapping[str, str],
    limits: TransferLimits,
    progress: Callable[[int], None] | None = None,
    if_none_match: bool = False,
) -> str:
    """Upload a file so that S3 checks its SHA-256; return the file's SHA-256.

    Up to ``limits.single_request_limit`` bytes go in one PutObject carrying the full-object
    SHA-256 (``sha256``, computed first when ``None``), which S3 verifies; it is also kept
    in user metadata. A larger file is uploaded in parts of ``limits.upload_part_size``,
    ``limits.part_concurrency`` at a time, each with its own :data:`UPLOAD_PART_CHECKSUM`
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
    if size > limits.single_request_limit:
        return multipart_upload(
            client,
            bucket,
            path,
            key,
            size,
            sha256,
            content_type,
            meta,
            progress,
            limits,
            if_none_match,
        )
    if sha256 is None:
        raise ValueError(f"{path}: a file sent in one request needs its SHA-256 first")
    condition = {"IfNoneMatch": "*"} if if_none_match else {}
    with path.open("rb") as handle, s3_translated(client, "PutObject", bucket, key):
        client.put_object(
            Bucket=bucket,
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


def multipart_upload(
    client: S3Client,
    bucket: str,
    path: Path,
    key: str,
    size: int,
    sha256: str | None,
    content_type: str,
    metadata: Mapping[str, str],
    progress: Callable[[int], None] | None,
    limits: TransferLimits,
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
        client,
        TransferConfig(
            multipart_threshold=1,
            multipart_chunksize=limits.upload_part_size,
            max_request_concurrency=limits.part_concurrency,
            max_in_memory_upload_chunks=limits.part_concurrency,
        ),
    )
    with path.open("rb") as handle:
        reader = HashingReader(handle, size)
        check = _on_complete(bucket, key, reader, sha256, if_none_match)
        event = "before-parameter-build.s3.CompleteMultipartUpload"
        handler_id = f"wheelgate-complete-{id(reader)}"
        client.meta.events.register(event, check, unique_id=handler_id)
        try:
            with s3_translated(client, bucket, "multipart upload", key):
                future = transfer.upload(
                    reader,  # type: ignore[arg-type]
                    bucket,
                    key,
                    extra_args={
                        "ContentType": content_type,
                        "ChecksumAlgorithm": UPLOAD_PART_CHECKSUM,
                        "Metadata": dict(metadata),
                    },
                    subscribers=[TransferProgress(progress)] if progress else None,
                )
                future.result()
        finally:
            client.meta.events.unregister(event, unique_id=handler_id)
            transfer.shutdown()
    return reader.hexdigest()


def _on_complete(
    bucket: str, key: str, reader: HashingReader, sha256: str | None, if_none_match: bool
) -> Callable[..., None]:
    """Handler for this upload's CompleteMultipartUpload: raising stops the upload before
    it completes (the transfer manager then aborts it)."""

    def check(params: dict[str, Any], **_: Any) -> None:
        if params.get("Bucket") != bucket or params.get("Key") != key:
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


def multipart_copy(
    client: S3Client,
    bucket: str,
    source: str,
    source_head: ObjectInfo | None,
    source_key: str,
    source_etag: str,
    size: int,
    key: str,
    limits: TransferLimits,
    metadata: Mapping[str, str] | None,
    sha256: str | None,
) -> str:
    """Our own code, not s3transfer's managed copy: every part copy is pinned to the
    source's ETag and the completion is ``If-None-Match: *`` (the managed copy passes
    neither to those calls), and the copy records the verified SHA-256. Parts are
    ``limits.copy_part_size``, ``limits.part_concurrency`` at a time."""
    part = limits.copy_part_size
    head = source_head
    if head is None or head.etag != source_etag:
        raise PreconditionFailed(f"s3://{source}/{source_key} changed during the copy")
    recorded = dict(head.metadata if metadata is None else metadata)
    if sha256:
        recorded[META_SHA256] = sha256
    with s3_translated(client, bucket, "multipart copy", key):
        upload = client.create_multipart_upload(
            Bucket=bucket,
            Key=key,
            ContentType=ARTIFACT_CONTENT_TYPE,
            Metadata=recorded,
        )
        upload_id = upload["UploadId"]
        ranges = [(start, min(start + part, size) - 1) for start in range(0, size, part)]

        def copy_part(numbered: tuple[int, tuple[int, int]]) -> dict[str, Any]:
            number, (first, last) = numbered
            result = client.upload_part_copy(
                Bucket=bucket,
                Key=key,
                UploadId=upload_id,
                PartNumber=number,
                CopySource={"Bucket": source, "Key": source_key},
                CopySourceIfMatch=source_etag,
                CopySourceRange=f"bytes={first}-{last}",
            )
            return {"PartNumber": number, "ETag": result["CopyPartResult"]["ETag"]}

        try:
            with ThreadPoolExecutor(max_workers=limits.part_concurrency) as pool:
                parts = list(pool.map(copy_part, enumerate(ranges, start=1)))
            completed = client.complete_multipart_upload(
                Bucket=bucket,
                Key=key,
                UploadId=upload_id,
                MultipartUpload={"Parts": parts},  # type: ignore[typeddict-item]
                IfNoneMatch="*",
            )
            return str(completed["ETag"])
        except BaseException:
            _abort(client, bucket, key, upload_id)
            raise


def _abort(client: S3Client, bucket: str, key: str, upload_id: str) -> None:
    """Abandon a multipart upload after a failure. That failure is what the caller sees:
    an abort that fails too (the upload already gone, the endpoint down) is logged, never
    raised in its place; an upload left behind is removed by the bucket's
    incomplete-upload lifecycle rule."""
    try:
        client.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)
    except (ClientError, BotoCoreError) as exc:
        logger.warning(
            "s3://%s/%s: abandoning upload %s failed too: %s", bucket, key, upload_id, exc
        )
