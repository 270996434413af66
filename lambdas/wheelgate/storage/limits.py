"""How much a bucket adapter sends at once and in one request: one frozen value that each
:class:`~wheelgate.storage.bucket.Bucket` carries, built where the adapter is built (the
promoter's handler, the CLI, local mode, a test or a benchmark), in the manner of s3transfer's
``TransferConfig``. Every component reads its bucket's ``limits`` rather than taking them as
arguments of its own."""

from __future__ import annotations

from dataclasses import dataclass

#: Requests one step of a component makes at once (reads, heads, copies of distinct files):
#: within botocore's connection pool of the promoter's client (``max_pool_connections=32``).
REQUEST_WORKERS = 16
#: S3's single-request limit for PutObject and CopyObject.
SINGLE_REQUEST_LIMIT = 5 * 1024**3
#: Part size for multipart copies of larger objects (S3 allows at most 10,000 parts): copies
#: are server-side, so a part costs a request and no memory.
MULTIPART_PART_SIZE = 512 * 1024**2
#: Part size for multipart uploads of larger files: the parts in flight are held in memory,
#: so PART_CONCURRENCY parts of 16 MiB keep an upload's buffers near 128 MiB (a 6 GiB file
#: is 384 parts; s3transfer raises the size where 10,000 parts would not hold the file).
UPLOAD_PART_SIZE = 16 * 1024**2
#: Parts of one multipart upload or copy in flight at once (an upload's also held in memory).
PART_CONCURRENCY = 8


@dataclass(frozen=True)
class TransferLimits:
    """The limits of one bucket adapter.

    ``workers`` bounds the requests a step makes at once; ``single_request_limit`` is the
    largest object written or copied in one request (larger ones go in parts);
    ``copy_part_size`` and ``upload_part_size`` are the part sizes of a multipart copy and
    upload; ``part_concurrency`` bounds the parts of one transfer in flight. Tests lower
    ``single_request_limit`` and the part sizes to exercise multipart paths with small files.
    Raises ``ValueError`` for a limit below 1.
    """

    workers: int = REQUEST_WORKERS
    single_request_limit: int = SINGLE_REQUEST_LIMIT
    copy_part_size: int = MULTIPART_PART_SIZE
    upload_part_size: int = UPLOAD_PART_SIZE
    part_concurrency: int = PART_CONCURRENCY

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if value < 1:
                raise ValueError(f"transfer limit {name} must be at least 1, not {value}")
