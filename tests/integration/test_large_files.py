"""Files above S3's single-request limit: multipart upload and multipart copy, with the
full-object SHA-256 carried in metadata and checked after the copy. The limit is lowered so
that a 12 MB wheel takes the path a 6 GB wheel takes."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.integration.test_promoter import nightly_versions
from wheelgate.core.errors import TransientError
from wheelgate.core.manifest import parse_manifest
from wheelgate.core.settings import PromoterSettings
from wheelgate.local.sample_wheels import build_wheel, manifest_for
from wheelgate.local.stack import (
    LOCAL_REPORTER_PRINCIPAL,
    NIGHTLY_BUCKET,
    STAGING_BUCKET,
    LocalStack,
)
from wheelgate.promotion.event import ManifestEvent
from wheelgate.promotion.service import PromotionService
from wheelgate.staging.stage import inspect_files, stage
from wheelgate.storage.bucket import Bucket

MB = 1024 * 1024
LIMIT = 5 * MB  # S3's smallest part size


def stage_multipart(
    stack: LocalStack,
    wheel: Path,
    run: str,
    index: str,
    *,
    claimed_sha256: str | None = None,
) -> str:
    """Stage ``wheel`` in parts of ``LIMIT`` (S3 keeps only a composite checksum of it) and
    write a manifest that gives it ``claimed_sha256`` (default: its real one); returns its
    staged key."""
    s3: Any = boto3.client("s3")
    staging, nightly = Bucket(s3, STAGING_BUCKET), Bucket(s3, NIGHTLY_BUCKET)
    stage(
        staging=staging,
        nightly=nightly,
        nightly_base_url=stack.nightly_url,
        run_id=run,
        index=index,
        commit="6" * 40,
        artifacts=inspect_files([wheel]),
        single_request_limit=LIMIT,
        part_size=LIMIT,
    )
    manifest = manifest_for(run, "6" * 40, index, [wheel])
    if claimed_sha256 is not None:
        [listed] = manifest["sets"]
        for f in [*listed["files"], *listed["tests"][0]["installed"]]:
            f["sha256"] = claimed_sha256
    staging.put(
        f"manifests/{run}.json", json.dumps(manifest).encode(), content_type="application/json"
    )
    return f"runs/{run}/{index}/{wheel.name}"


def test_multipart_staged_wheel_is_multipart_copied_with_a_verifiable_hash(
    stack: LocalStack, tmp_path: Path
) -> None:
    s3: Any = boto3.client("s3")
    staging, nightly = Bucket(s3, STAGING_BUCKET), Bucket(s3, NIGHTLY_BUCKET)
    big = build_wheel(tmp_path, "huge", "1.0", payload_bytes=12 * MB)
    sha = hashlib.sha256(big.read_bytes()).hexdigest()
    run, index = "large-1", "v2/large"
    key = stage_multipart(stack, big, run, index)
    staged = s3.head_object(Bucket=STAGING_BUCKET, Key=key)
    assert staged["ETag"].endswith('-3"')  # three parts
    promoter = PromotionService(
        settings=PromoterSettings.from_env(os.environ),
        staging=staging,
        nightly=nightly,
        single_request_limit=LIMIT,
        part_size=LIMIT,
    )
    record = promoter.handle(ManifestEvent(f"manifests/{run}.json", LOCAL_REPORTER_PRINCIPAL))
    assert record is not None
    assert record.state.value == "promoted", record.message
    copy = s3.head_object(Bucket=NIGHTLY_BUCKET, Key=f"{index}/{big.name}")
    assert copy["ETag"].endswith('-3"')  # copied part by part, server-side
    assert copy["Metadata"]["wheelgate-sha256"] == sha
    assert copy["ContentLength"] == big.stat().st_size
    page = json.loads(nightly.get(f"{index}/huge/index.json")[0])  # type: ignore[index]
    assert page["files"][0]["hashes"]["sha256"] == sha
    # The bytes really are the wheel's.
    body = s3.get_object(Bucket=NIGHTLY_BUCKET, Key=f"{index}/{big.name}")["Body"].read()
    assert hashlib.sha256(body).hexdigest() == sha


def test_a_multipart_staged_file_with_other_bytes_is_rejected_before_any_copy(
    stack: LocalStack, tmp_path: Path
) -> None:
    # Given a multipart-staged wheel whose manifest claims other bytes (S3 has no SHA-256 of
    # its own to compare at verification)...
    s3: Any = boto3.client("s3")
    run = "large-mismatch-1"
    wheel = build_wheel(tmp_path, "mpart", "1.0", payload_bytes=6 * MB)
    key = stage_multipart(stack, wheel, run, f"v2/{run}", claimed_sha256="1" * 64)
    assert s3.head_object(Bucket=STAGING_BUCKET, Key=key)["ETag"].endswith('-2"')
    before = nightly_versions(s3)
    promoter = PromotionService(
        settings=PromoterSettings.from_env(os.environ),
        staging=Bucket(s3, STAGING_BUCKET),
        nightly=Bucket(s3, NIGHTLY_BUCKET),
        single_request_limit=LIMIT,
        part_size=LIMIT,
    )
    reads: list[str] = []

    def spy(params: dict[str, Any], **_: Any) -> None:
        if params["Key"] == key and "Range" not in params:
            reads.append(params["Key"])

    s3.meta.events.register("provide-client-params.s3.GetObject", spy)
    try:
        # When the single invocation promotes it...
        record = promoter.handle(ManifestEvent(f"manifests/{run}.json", LOCAL_REPORTER_PRINCIPAL))
    finally:
        s3.meta.events.unregister("provide-client-params.s3.GetObject", spy)
    # Then its bytes were read once, in that invocation, and found not to be the manifest's
    assert reads == [key]
    assert record is not None
    real = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert (record.state.value, record.reason) == ("rejected", "checksum-mismatch")
    assert f"{wheel.name}: manifest sha256 {'1' * 64} but staged object has {real}" in (
        record.message
    )
    # And nightly is byte for byte what it was.
    assert nightly_versions(s3) == before


def test_a_staged_file_changed_since_verification_is_not_hashed(
    stack: LocalStack, tmp_path: Path
) -> None:
    # Given a multipart-staged wheel verified (its hash read left for later)...
    s3: Any = boto3.client("s3")
    run = "large-changed-1"
    wheel = build_wheel(tmp_path, "mpart", "1.0", payload_bytes=6 * MB)
    key = stage_multipart(stack, wheel, run, f"v2/{run}")
    settings = PromoterSettings.from_env(os.environ)
    promoter = PromotionService(
        settings=settings,
        staging=Bucket(s3, STAGING_BUCKET),
        nightly=Bucket(s3, NIGHTLY_BUCKET),
    )
    manifest = parse_manifest(
        s3.get_object(Bucket=STAGING_BUCKET, Key=f"manifests/{run}.json")["Body"].read(),
        expected_run_id=run,
    )
    verified = promoter.verifier.verify(manifest, manifest.sets[0])
    [step] = verified.unhashed
    assert step.source_key == key
    promoter.verifier.check_hash(step)  # the bytes are the manifest's
    # When the staged object is written again after verification (another ETag)...
    s3.put_object(Bucket=STAGING_BUCKET, Key=key, Body=wheel.read_bytes())
    # Then its hash check refuses to read another version: a transient error (verify again).
    with pytest.raises(TransientError, match="changed since it was verified"):
        promoter.verifier.check_hash(step)
