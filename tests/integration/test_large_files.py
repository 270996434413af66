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

from wheelgate.core.settings import PromoterSettings
from wheelgate.local.sample_wheels import build_wheel, manifest_for
from wheelgate.local.stack import (
    LOCAL_REPORTER_PRINCIPAL,
    NIGHTLY_BUCKET,
    STAGING_BUCKET,
    LocalStack,
)
from wheelgate.promotion.promoter import ManifestEvent, Promoter
from wheelgate.staging.stage import inspect_files, stage
from wheelgate.storage.bucket import Bucket

MB = 1024 * 1024
LIMIT = 5 * MB  # S3's smallest part size


def test_multipart_staged_wheel_is_multipart_copied_with_a_verifiable_hash(
    stack: LocalStack, tmp_path: Path
) -> None:
    s3: Any = boto3.client("s3")
    staging, nightly = Bucket(s3, STAGING_BUCKET), Bucket(s3, NIGHTLY_BUCKET)
    big = build_wheel(tmp_path, "huge", "1.0", payload_bytes=12 * MB)
    sha = hashlib.sha256(big.read_bytes()).hexdigest()
    run, index = "large-1", "v2/large"
    stage(
        staging=staging,
        nightly=nightly,
        nightly_base_url=stack.nightly_url,
        run_id=run,
        index=index,
        commit="6" * 40,
        artifacts=inspect_files([big]),
        single_request_limit=LIMIT,
        part_size=LIMIT,
    )
    staged = s3.head_object(Bucket=STAGING_BUCKET, Key=f"runs/{run}/{index}/{big.name}")
    assert staged["ETag"].endswith('-3"')  # three parts
    manifest = manifest_for(run, "6" * 40, index, [big])
    staging.put(
        f"manifests/{run}.json", json.dumps(manifest).encode(), content_type="application/json"
    )
    promoter = Promoter(
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
