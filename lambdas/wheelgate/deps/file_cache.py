"""Caching the ``files`` of a validated deps.yml in S3.

HEAD the target; missing → stream the download to a temporary file (constant memory) verifying
size and SHA-256 (:class:`~wheelgate.deps.download.Fetcher`), then upload it with its SHA-256
(S3 verifies it) and ``If-None-Match: *``, so a concurrent sync never overwrites; the same bytes
present → skip; other bytes present → fail, never overwrite.
"""

from __future__ import annotations

import mimetypes
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from wheelgate.core.objects import ObjectInfo
from wheelgate.deps.download import DownloadError, Fetcher, Progress
from wheelgate.deps.rows import Action, Row
from wheelgate.deps.targets import FileTarget
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.errors import PreconditionFailed

#: User metadata on cached files: where the bytes came from.
META_SOURCE_URL = "wheelgate-source-url"
DEFAULT_CONTENT_TYPE = "application/octet-stream"


def content_type(key: str) -> str:
    """A sensible Content-Type for a cached file (``application/octet-stream`` if unknown).

    Compressed tarballs are served as their compression (``application/gzip``), not as
    ``application/x-tar`` with an encoding, so clients download them as they are.
    """
    kind, encoding = mimetypes.guess_type(key, strict=False)
    if encoding is not None:
        return {
            "gzip": "application/gzip",
            "bzip2": "application/x-bzip2",
            "xz": "application/x-xz",
        }.get(encoding, DEFAULT_CONTENT_TYPE)
    return kind or DEFAULT_CONTENT_TYPE


def _compare(head: ObjectInfo, sha256: str, size: int | None) -> str | None:
    """Why the stored object is not the expected bytes, or ``None`` when it is."""
    if head.sha256 is None:
        return f"exists without a recorded SHA-256 ({head.size} bytes); not overwritten"
    if head.sha256 != sha256 or (size is not None and head.size != size):
        return f"exists with other bytes (sha256 {head.sha256}, {head.size} bytes); not overwritten"
    return None


def plan_file(bucket: Bucket, target: FileTarget) -> Row:
    """What syncing ``target`` would do: ``upload``, ``skip`` or ``conflict``."""
    where = f"s3://{bucket.name}/{target.key}"
    head = bucket.head(target.key)
    if head is None:
        return Row(target.entry, where, "upload", target.size or 0)
    problem = _compare(head, target.sha256, target.size)
    if problem:
        return Row(target.entry, where, "conflict", head.size, detail=problem)
    return Row(target.entry, where, "skip", head.size, detail="same SHA-256 present")


def sync_file(
    bucket: Bucket,
    target: FileTarget,
    fetcher: Fetcher,
    workdir: Path,
    *,
    progress: Progress | None = None,
) -> Row:
    """Cache one file (see the module docstring); never raises for the entry's own failure (a
    download that failed, other bytes at its key), which is returned as a ``failed`` row. A
    storage error (:mod:`wheelgate.storage.errors`) is raised: it is the bucket's, not the
    entry's, and ends the sync with exit 4."""
    started = time.monotonic()
    where = f"s3://{bucket.name}/{target.key}"

    def row(action: Action, size: int = 0, detail: str = "") -> Row:
        return Row(target.entry, where, action, size, time.monotonic() - started, detail)

    try:
        planned = plan_file(bucket, target)
        if planned.action != "upload":
            failed = planned.action == "conflict"
            return row("failed" if failed else "skipped", planned.bytes, planned.detail)
        with tempfile.TemporaryDirectory(dir=workdir) as tmp:
            path = Path(tmp) / "download"
            size = fetcher.download(
                target.url,
                path,
                sha256=target.sha256,
                size=target.size,
                progress=(lambda done, total: progress(target.entry, done, total))
                if progress
                else None,
            )
            metadata = {META_SOURCE_URL: target.url} if target.url.isascii() else {}
            try:
                bucket.upload_file(
                    path,
                    target.key,
                    sha256=target.sha256,
                    content_type=content_type(target.key),
                    metadata=metadata,
                    if_none_match=True,
                )
            except PreconditionFailed:
                # Someone else wrote the key since our HEAD: fine if it is the same bytes.
                head = bucket.head(target.key)
                problem = "vanished" if head is None else _compare(head, target.sha256, size)
                if problem:
                    return row("failed", size, f"written concurrently and {problem}")
                return row("skipped", size, "written concurrently with the same bytes")
        return row("uploaded", size)
    except DownloadError as exc:
        return row("failed", detail=str(exc))


def sync_files(
    targets: Sequence[FileTarget],
    buckets: Mapping[str, Bucket],
    fetcher: Fetcher,
    workdir: Path,
    *,
    jobs: int = 4,
    progress: Progress | None = None,
) -> list[Row]:
    """Sync every file target, at most ``jobs`` at a time; rows in the targets' order."""

    def one(target: FileTarget) -> Row:
        return sync_file(
            buckets[target.bucket],
            target,
            fetcher,
            workdir,
            progress=progress,
        )

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, targets))
