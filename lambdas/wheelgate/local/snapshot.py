"""A bucket's every object version and delete marker, for "nothing changed" checks.

Two equal snapshots of a versioned bucket (nightly has Object Lock, so versioning) mean that no
object was written, replaced or deleted in between. ``ListObjectVersions`` answers at most 1,000
entries a call, so the snapshot follows every page: a comparison of first pages alone would
pass for any change to a key that sorts after them. The demo and the tests share this one
helper.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

#: What a snapshot says of a delete marker, which has no ETag.
DELETE_MARKER = "delete-marker"


def version_snapshot(client: S3Client, bucket: str, prefix: str = "") -> dict[str, str]:
    """``{"<key>@<version id>": ETag}`` for every version in ``bucket`` under ``prefix``, and
    ``DELETE_MARKER`` for every delete marker, across all pages of the listing."""
    found: dict[str, str] = {}
    paginator = client.get_paginator("list_object_versions")
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
        for version in page.get("Versions", []):
            found[f"{version['Key']}@{version['VersionId']}"] = version["ETag"]
        for marker in page.get("DeleteMarkers", []):
            found[f"{marker['Key']}@{marker['VersionId']}"] = DELETE_MARKER
    return found
