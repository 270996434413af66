"""What each WheelGate role may do: the statements of its identity policy. The bucket policies
(stacks/bucket_policies.py) deny the same writes to everyone else."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from wheelgate.core.import_sources import ImportSource
from wheelgate.core.layout import (
    HISTORY_PREFIX,
    JSON_PAGE,
    MANIFESTS_PREFIX,
    METADATA_SUFFIX,
    RECORDS_PREFIX,
    RUNS_PREFIX,
    STATUS_PREFIX,
    VERDICT_KEYS_KEY,
)

from .bucket_policies import UNCONDITIONAL_CREATION
from .object_keys import (
    ANY_MIRROR_MANIFEST_KEYS,
    HISTORY_ENTRY_KEYS,
    IMPORT_REQUEST_KEYS,
    IMPORT_RUN_KEYS,
    MIRROR_MANIFEST_KEYS,
    MIRROR_RECORD_KEYS,
    MIRROR_RUN_KEYS,
    index_page_keys,
    page_keys,
)


def build_statements(staging: s3.IBucket, nightly: s3.IBucket) -> list[iam.PolicyStatement]:
    """The build role: uploads ``runs/*`` but mirror and import runs to staging, tags its run's
    pages, creates (never replaces) its stage calls' history entries, reads staging, and reads
    nightly's index pages and metadata files."""
    return [
        iam.PolicyStatement(
            sid="UploadStagedRuns",
            # Multipart uploads of large wheels can be abandoned mid-way.
            actions=["s3:PutObject", "s3:AbortMultipartUpload"],
            resources=[staging.arn_for_objects(f"{RUNS_PREFIX}*")],
        ),
        iam.PolicyStatement(
            # One small JSON object per stage call (history/_entries/<index>/<run>/...).
            sid="WriteHistoryEntries",
            actions=["s3:PutObject"],
            resources=[staging.arn_for_objects(HISTORY_ENTRY_KEYS)],
        ),
        iam.PolicyStatement(
            # Create-only, as the bucket policy also says: one run's build job cannot alter
            # another run's entry (bucket: DenyHistoryEntryWritesWithoutIfNoneMatch).
            sid="DenyHistoryEntryRewrites",
            effect=iam.Effect.DENY,
            actions=["s3:PutObject"],
            resources=[staging.arn_for_objects(HISTORY_ENTRY_KEYS)],
            conditions=UNCONDITIONAL_CREATION,
        ),
        iam.PolicyStatement(
            # A run's pages are written with the tag that selects their lifecycle rule
            # (storage.py ExpireRunPages); PutObject with tags needs this too.
            sid="TagRunPages",
            actions=["s3:PutObjectTagging"],
            resources=page_keys(staging, RUNS_PREFIX),
        ),
        iam.PolicyStatement(
            # Mirror runs are the deps role's alone (bucket: DenyMirrorWritesExceptDeps).
            sid="DenyMirrorRuns",
            effect=iam.Effect.DENY,
            actions=["s3:PutObject", "s3:AbortMultipartUpload", "s3:PutObjectTagging"],
            resources=[staging.arn_for_objects(MIRROR_RUN_KEYS)],
        ),
        iam.PolicyStatement(
            # An import's gathered files are the promoter's alone (bucket:
            # DenyImportRunWritesExceptPromoter).
            sid="DenyImportRuns",
            effect=iam.Effect.DENY,
            actions=["s3:PutObject", "s3:AbortMultipartUpload", "s3:PutObjectTagging"],
            resources=[staging.arn_for_objects(IMPORT_RUN_KEYS)],
        ),
        iam.PolicyStatement(
            sid="ReadStaging",
            actions=["s3:GetObject"],
            resources=[staging.arn_for_objects("*")],
        ),
        iam.PolicyStatement(
            # The run's index borrows nightly's pages of its dependency closure, which
            # it walks through the PEP 658 metadata files (never a wheel).
            sid="ReadNightlyIndexPages",
            actions=["s3:GetObject"],
            resources=[
                *page_keys(nightly),
                nightly.arn_for_objects(f"*{METADATA_SUFFIX}"),
            ],
        ),
        iam.PolicyStatement(
            # ListBucket makes a missing page a 404 instead of a 403.
            sid="ListBuckets",
            actions=["s3:ListBucket"],
            resources=[staging.bucket_arn, nightly.bucket_arn],
        ),
    ]


def reporter_statements(staging: s3.IBucket, nightly: s3.IBucket) -> list[iam.PolicyStatement]:
    """The reporter role: writes ``manifests/*`` but mirror manifests and import requests in
    staging; reads runs, records and nightly."""
    return [
        iam.PolicyStatement(
            sid="WriteManifests",
            actions=["s3:PutObject"],
            resources=[staging.arn_for_objects(f"{MANIFESTS_PREFIX}*")],
        ),
        iam.PolicyStatement(
            # A mirror manifest promotes third-party wheels: the deps role's alone.
            sid="DenyMirrorManifests",
            effect=iam.Effect.DENY,
            actions=["s3:PutObject"],
            resources=[staging.arn_for_objects(ANY_MIRROR_MANIFEST_KEYS)],
        ),
        iam.PolicyStatement(
            # An import request releases untested files: the break-glass role's alone
            # (bucket: DenyImportWritesExceptBreakGlass).
            sid="DenyImportRequests",
            effect=iam.Effect.DENY,
            actions=["s3:PutObject"],
            resources=[staging.arn_for_objects(IMPORT_REQUEST_KEYS)],
        ),
        iam.PolicyStatement(
            sid="ReadRunsAndRecords",
            actions=["s3:GetObject"],
            resources=[
                staging.arn_for_objects(f"{RUNS_PREFIX}*"),
                staging.arn_for_objects(f"{RECORDS_PREFIX}*"),
            ],
        ),
        iam.PolicyStatement(
            # report holds each test's evidence to the bytes the run's index offers:
            # nightly's pages and metadata of the closure, and the nightly wheels an
            # environment is matched with (all of it public through the CDN anyway).
            sid="ReadNightly",
            actions=["s3:GetObject"],
            resources=[nightly.arn_for_objects("*")],
        ),
        iam.PolicyStatement(
            # ListBucket makes a missing page a 404 instead of a 403.
            sid="ListBuckets",
            actions=["s3:ListBucket"],
            resources=[staging.bucket_arn, nightly.bucket_arn],
        ),
    ]


def dev_statements(dev_bucket_name: str) -> list[iam.PolicyStatement]:
    """The dev role: reads, writes and lists the dev bucket ``dev_bucket_name``, nothing else."""
    dev_bucket_arn = f"arn:{Aws.PARTITION}:s3:::{dev_bucket_name}"
    return [
        iam.PolicyStatement(
            sid="UseDevBucket",
            actions=[
                "s3:PutObject",
                "s3:GetObject",
                "s3:DeleteObject",
                "s3:AbortMultipartUpload",
            ],
            resources=[f"{dev_bucket_arn}/*"],
        ),
        iam.PolicyStatement(
            sid="ListDevBucket", actions=["s3:ListBucket"], resources=[dev_bucket_arn]
        ),
    ]


def deps_statements(
    staging: s3.IBucket, nightly: s3.IBucket, cache: s3.IBucket, cache_prefixes: Sequence[str]
) -> list[iam.PolicyStatement]:
    """The deps role: writes and reads ``cache_prefixes`` of the cache, stages mirror runs and
    reads their records, and reads the JSON index pages."""
    cache_keys = [cache.arn_for_objects(f"{prefix}*") for prefix in cache_prefixes]
    return [
        iam.PolicyStatement(
            # Files over 5 GiB are multipart uploads, which s3:PutObject also covers.
            sid="WriteCache",
            actions=["s3:PutObject"],
            resources=cache_keys,
        ),
        iam.PolicyStatement(sid="ReadCache", actions=["s3:GetObject"], resources=cache_keys),
        iam.PolicyStatement(
            sid="StageMirrorRuns",
            actions=["s3:PutObject"],
            resources=[
                staging.arn_for_objects(MIRROR_RUN_KEYS),
                staging.arn_for_objects(MIRROR_MANIFEST_KEYS),
            ],
        ),
        iam.PolicyStatement(
            sid="ReadMirrorRunsAndRecords",
            actions=["s3:GetObject"],
            resources=[
                staging.arn_for_objects(MIRROR_RUN_KEYS),
                staging.arn_for_objects(MIRROR_RECORD_KEYS),
            ],
        ),
        iam.PolicyStatement(
            sid="ReadIndexPages",
            actions=["s3:GetObject"],
            resources=[
                staging.arn_for_objects(f"*/{JSON_PAGE}"),
                nightly.arn_for_objects(f"*/{JSON_PAGE}"),
            ],
        ),
        iam.PolicyStatement(
            # Without ListBucket a missing key (a file not cached yet, a record not
            # written yet, a page of a new project) is a 403 instead of a 404. S3 makes
            # that check without an s3:prefix, so a prefix condition would defeat it.
            sid="ListBuckets",
            actions=["s3:ListBucket"],
            resources=[cache.bucket_arn, staging.bucket_arn, nightly.bucket_arn],
        ),
    ]


def promoter_statements(
    staging: s3.IBucket, nightly: s3.IBucket, index_dirs: Sequence[str]
) -> list[iam.PolicyStatement]:
    """The promoter role: reads staging, writes its records, status, import runs and the run
    history of ``index_dirs`` (never its entries), reads nightly, and writes (and locks pages)
    only under ``index_dirs`` and the verdict keys."""
    return [
        iam.PolicyStatement(
            sid="ReadStaging",
            actions=["s3:GetObject", "s3:GetObjectAttributes"],
            resources=[staging.arn_for_objects("*")],
        ),
        iam.PolicyStatement(
            sid="WriteRecordsAndStatus",
            actions=["s3:PutObject"],
            resources=[
                staging.arn_for_objects(f"{RECORDS_PREFIX}*"),
                staging.arn_for_objects(f"{STATUS_PREFIX}*"),
            ],
        ),
        iam.PolicyStatement(
            # The history's shards, head and page of each configured directory; an index
            # directory never starts with '_', so none of these reaches history/_entries/.
            sid="WriteRunHistory",
            actions=["s3:PutObject"],
            resources=[
                staging.arn_for_objects(f"{HISTORY_PREFIX}{index}/*") for index in index_dirs
            ],
        ),
        iam.PolicyStatement(
            # An import's files, copied server-side from its source (multipart for
            # files over 5 GiB, which can be abandoned mid-way).
            sid="GatherImports",
            actions=["s3:PutObject", "s3:AbortMultipartUpload"],
            resources=[staging.arn_for_objects(IMPORT_RUN_KEYS)],
        ),
        iam.PolicyStatement(
            sid="ReadNightly",
            actions=["s3:GetObject", "s3:GetObjectAttributes"],
            resources=[nightly.arn_for_objects("*")],
        ),
        iam.PolicyStatement(
            # Server-side copies of files over the multipart threshold are multipart.
            # Only under the configured index directories (index_dirs), where it
            # publishes; the promoter refuses any other directory too.
            sid="WriteNightly",
            actions=["s3:PutObject", "s3:AbortMultipartUpload"],
            resources=[nightly.arn_for_objects(f"{index}/*") for index in index_dirs],
        ),
        iam.PolicyStatement(
            # The public keys of verdicts (docs/verdicts.md): a fixed key outside every
            # index directory, named like a page, so it may be updated in place (If-Match)
            # when a rotation adds a key.
            sid="WriteVerdictKeys",
            actions=["s3:PutObject"],
            resources=[nightly.arn_for_objects(VERDICT_KEYS_KEY)],
        ),
        iam.PolicyStatement(
            # A PutObject that sets its own Object Lock needs this too: the index pages
            # are written with a lock shorter than the files', so that replaced page
            # versions can expire. Pages only; the bucket policy denies a file a
            # shorter lock (DenyShortFileLocks) whatever the identity policy says.
            sid="LockNightlyPages",
            actions=["s3:PutObjectRetention"],
            resources=[arn for index in index_dirs for arn in index_page_keys(nightly, index)],
        ),
        iam.PolicyStatement(
            sid="ListBuckets",
            actions=["s3:ListBucket"],
            resources=[staging.bucket_arn, nightly.bucket_arn],
        ),
    ]


def import_source_statements(sources: Sequence[ImportSource]) -> list[iam.PolicyStatement]:
    """Let the promoter read each import source (``import_sources``): list its bucket under
    its prefix, read its objects there (the files, and the index pages beside them), and
    nothing else of that bucket. A bucket in another account must also allow the promoter
    role in its own policy."""
    listing = []
    for n, source in enumerate(sources):
        bucket_arn = f"arn:{Aws.PARTITION}:s3:::{source.bucket}"
        listing.append(
            iam.PolicyStatement(
                sid=f"ListImportSource{n}",
                actions=["s3:ListBucket"],
                resources=[bucket_arn],
                # The import lists its prefix alone (Prefix=<prefix>); a whole-bucket entry
                # has no prefix to hold it to.
                conditions=(
                    {"StringLike": {"s3:prefix": [f"{source.prefix}*"]}} if source.prefix else None
                ),
            )
        )
    return [
        iam.PolicyStatement(
            sid="ReadImportSources",
            actions=["s3:GetObject"],
            resources=[
                f"arn:{Aws.PARTITION}:s3:::{source.bucket}/{source.prefix}*" for source in sources
            ],
        ),
        *listing,
    ]
