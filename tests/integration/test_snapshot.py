"""The one nightly snapshot helper (``wheelgate.local.snapshot``) that every "nightly
unchanged" check uses sees every version and delete marker, past the 1,000 entries S3 answers
per listing (the real S3 API, moto server)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from wheelgate.local.snapshot import DELETE_MARKER, version_snapshot

BUCKET = "wheelgate-snapshot-paging"
#: The most entries one ListObjectVersions call answers (S3's MaxKeys limit).
LISTING_PAGE = 1000


def test_a_change_to_the_last_key_past_a_thousand_versions_is_seen(s3: Any) -> None:
    # Given a versioned bucket holding one version more than one listing returns...
    s3.create_bucket(Bucket=BUCKET)
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    keys = [f"v2/dir/pkg-{n:04d}.whl" for n in range(LISTING_PAGE + 1)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda key: s3.put_object(Bucket=BUCKET, Key=key, Body=b"1"), keys))
    before = version_snapshot(s3, BUCKET)
    assert len(before) == LISTING_PAGE + 1
    # (one listing call stops before the key that sorts last: a helper that made one call
    # would compare truncated lists)
    first = s3.list_object_versions(Bucket=BUCKET)
    assert first["IsTruncated"]
    assert keys[-1] not in {v["Key"] for v in first["Versions"]}
    # When that last key gets a new version, Then the snapshot shows exactly it
    written = s3.put_object(Bucket=BUCKET, Key=keys[-1], Body=b"2")
    after = version_snapshot(s3, BUCKET)
    assert after != before
    assert set(after) - set(before) == {f"{keys[-1]}@{written['VersionId']}"}
    # And a delete marker on it is seen too
    deleted = s3.delete_object(Bucket=BUCKET, Key=keys[-1])
    assert deleted["DeleteMarker"]
    marked = version_snapshot(s3, BUCKET)
    assert marked == {**after, f"{keys[-1]}@{deleted['VersionId']}": DELETE_MARKER}
