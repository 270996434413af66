"""Files above S3's single-request limit: multipart upload (hashed as it is read, its SHA-256
recorded beside it) and multipart copy (the verified SHA-256 in the copy's metadata, checked
after it); a failure and the cleanup after it. The limit is lowered so that a 12 MB wheel
takes the path a 6 GB wheel takes."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

import boto3
import pytest
from boto3.s3.transfer import TransferConfig
from botocore.awsrequest import AWSResponse

from tests.integration.conftest import local_process
from tests.integration.test_promoter import nightly_versions
from wheelgate.core.errors import TransientError
from wheelgate.core.layout import STAGING
from wheelgate.core.manifest import parse_manifest
from wheelgate.core.settings import PromoterSettings
from wheelgate.local.names import LOCAL_REPORTER_PRINCIPAL, NIGHTLY_BUCKET, STAGING_BUCKET
from wheelgate.local.sample_wheels import build_wheel, manifest_for
from wheelgate.local.stack import LocalWheelGate
from wheelgate.promotion.compose import build_service
from wheelgate.promotion.event import ManifestEvent
from wheelgate.staging.local_artifacts import inspect_files
from wheelgate.staging.stage import stage
from wheelgate.staging.staged_files import staged_sets
from wheelgate.storage.bucket import Bucket, FileChangedError
from wheelgate.storage.limits import TransferLimits

MB = 1024 * 1024
LIMIT = 5 * MB  # S3's smallest part size
#: Buckets whose transfers go in parts of ``LIMIT`` above ``LIMIT``.
SMALL = TransferLimits(single_request_limit=LIMIT, copy_part_size=LIMIT, upload_part_size=LIMIT)


def stage_in_parts(client: Any, stack: LocalWheelGate, wheel: Path, run: str, index: str) -> None:
    """``wheelgate stage`` of ``wheel`` through ``client``, in parts of ``LIMIT``."""
    stage(
        staging=Bucket(client, STAGING_BUCKET, limits=SMALL),
        nightly=Bucket(client, NIGHTLY_BUCKET, limits=SMALL),
        nightly_base_url=stack.nightly_url,
        run_id=run,
        index=index,
        commit="6" * 40,
        artifacts=inspect_files([wheel]),
    )


def stage_multipart(
    stack: LocalWheelGate,
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
    staging = Bucket(s3, STAGING_BUCKET)
    stage_in_parts(s3, stack, wheel, run, index)
    manifest = manifest_for(run, "6" * 40, index, [wheel])
    if claimed_sha256 is not None:
        [listed] = manifest["sets"]
        for f in [*listed["files"], *listed["tests"][0]["installed"]]:
            f["sha256"] = claimed_sha256
    staging.put(
        f"manifests/{run}.json", json.dumps(manifest).encode(), content_type="application/json"
    )
    return f"runs/{run}/{index}/{wheel.name}"


@pytest.mark.slow
def test_multipart_staged_wheel_is_multipart_copied_with_a_verifiable_hash(
    stack: LocalWheelGate, tmp_path: Path
) -> None:
    s3: Any = boto3.client("s3")
    staging = Bucket(s3, STAGING_BUCKET, limits=SMALL)
    nightly = Bucket(s3, NIGHTLY_BUCKET, limits=SMALL)
    big = build_wheel(tmp_path, "huge", "1.0", payload_bytes=12 * MB)
    sha = hashlib.sha256(big.read_bytes()).hexdigest()
    run, index = "large-1", "v2/large"
    key = stage_multipart(stack, big, run, index)
    staged = s3.head_object(Bucket=STAGING_BUCKET, Key=key)
    assert staged["ETag"].endswith('-3"')  # three parts
    # Hashed as it was read once: the hash is recorded beside it, and is what report lists.
    assert "wheelgate-sha256" not in staged["Metadata"]
    assert staging.get(key + ".sha256")[0] == f"{sha}  {big.name}\n".encode()  # type: ignore[index]
    assert staged_sets(staging, run)[index][0].sha256 == sha
    promoter = build_service(
        settings=PromoterSettings.from_env(os.environ),
        staging=staging,
        nightly=nightly,
    )
    decision = promoter.handle(ManifestEvent(f"manifests/{run}.json", LOCAL_REPORTER_PRINCIPAL))
    record = None if decision is None else decision.record
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


@pytest.mark.slow
def test_a_multipart_staged_file_with_other_bytes_is_rejected_before_any_copy(
    stack: LocalWheelGate, tmp_path: Path
) -> None:
    # Given a multipart-staged wheel whose manifest claims other bytes (S3 has no SHA-256 of
    # its own to compare at verification)...
    s3: Any = boto3.client("s3")
    run = "large-mismatch-1"
    wheel = build_wheel(tmp_path, "mpart", "1.0", payload_bytes=6 * MB)
    key = stage_multipart(stack, wheel, run, f"v2/{run}", claimed_sha256="1" * 64)
    assert s3.head_object(Bucket=STAGING_BUCKET, Key=key)["ETag"].endswith('-2"')
    before = nightly_versions(s3)
    promoter = build_service(
        settings=PromoterSettings.from_env(os.environ),
        staging=Bucket(s3, STAGING_BUCKET, limits=SMALL),
        nightly=Bucket(s3, NIGHTLY_BUCKET, limits=SMALL),
    )
    reads: list[str] = []

    def spy(params: dict[str, Any], **_: Any) -> None:
        if params["Key"] == key and "Range" not in params:
            reads.append(params["Key"])

    s3.meta.events.register("provide-client-params.s3.GetObject", spy)
    try:
        # When the single invocation promotes it...
        decision = promoter.handle(ManifestEvent(f"manifests/{run}.json", LOCAL_REPORTER_PRINCIPAL))
        record = None if decision is None else decision.record
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
    stack: LocalWheelGate, tmp_path: Path
) -> None:
    # Given a multipart-staged wheel verified (its hash read left for later)...
    s3: Any = boto3.client("s3")
    run = "large-changed-1"
    wheel = build_wheel(tmp_path, "mpart", "1.0", payload_bytes=6 * MB)
    key = stage_multipart(stack, wheel, run, f"v2/{run}")
    settings = PromoterSettings.from_env(os.environ)
    promoter = build_service(
        settings=settings,
        staging=Bucket(s3, STAGING_BUCKET),
        nightly=Bucket(s3, NIGHTLY_BUCKET),
    )
    manifest = parse_manifest(
        s3.get_object(Bucket=STAGING_BUCKET, Key=f"manifests/{run}.json")["Body"].read(),
        expected_run_id=run,
    )
    verified = promoter.flow.verifier.verify(manifest, manifest.sets[0])
    [step] = verified.unhashed
    assert step.source_key == key
    promoter.flow.verifier.check_hash(step)  # the bytes are the manifest's
    # When the staged object is written again after verification (another ETag)...
    s3.put_object(Bucket=STAGING_BUCKET, Key=key, Body=wheel.read_bytes())
    # Then its hash check refuses to read another version: a transient error (verify again).
    with pytest.raises(TransientError, match="changed since it was verified"):
        promoter.flow.verifier.check_hash(step)


def answering(client: Any, answers: dict[str, tuple[int, str]]) -> None:
    """Make S3 answer each operation of ``answers`` with its HTTP status and error code."""

    def answer(model: Any, **_: Any) -> Any:
        if model.name not in answers:
            return None
        status, code = answers[model.name]
        response = AWSResponse(url="", status_code=status, headers={}, raw=None)  # type: ignore[arg-type]
        return response, {
            "Error": {"Code": code, "Message": f"injected {code}"},
            "ResponseMetadata": {"HTTPStatusCode": status},
        }

    client.meta.events.register("before-call.s3", answer)


#: CompleteMultipartUpload fails, then so does the abort that cleans up after it.
FAILED_THEN_GONE = {
    "CompleteMultipartUpload": (500, "InternalError"),
    "AbortMultipartUpload": (404, "NoSuchUpload"),
}


def test_a_failed_completion_is_reported_not_the_cleanup_that_failed_after_it(
    stack: LocalWheelGate, tmp_path: Path
) -> None:
    # Given S3 failing a multipart upload's completion (500), and then its abort (the upload
    # gone), for staging and for the promoter's copy alike...
    clean: Any = boto3.client("s3")
    failing: Any = boto3.client("s3")
    answering(failing, FAILED_THEN_GONE)
    run, index = "large-cleanup-1", "v2/large-cleanup"
    wheel = build_wheel(tmp_path, "cleanup", "1.0", payload_bytes=12 * MB)
    key = STAGING.artifact(run, index, wheel.name)
    # When a file over the single-request limit is staged...
    with pytest.raises(TransientError) as staging_failed:
        stage_in_parts(failing, stack, wheel, run, index)
    # Then the error is the completion's, not the abort's, and nothing is staged.
    assert "InternalError" in str(staging_failed.value)
    assert "NoSuchUpload" not in str(staging_failed.value)
    assert Bucket(clean, STAGING_BUCKET).head(key) is None
    # And the same for a multipart copy of a staged file.
    staged = stage_multipart(stack, wheel, run, index)
    head = Bucket(clean, STAGING_BUCKET).head(staged)
    assert head is not None
    target = f"{index}/{wheel.name}"
    with pytest.raises(TransientError) as copy_failed:
        Bucket(failing, NIGHTLY_BUCKET, limits=SMALL).copy_in(
            Bucket(clean, STAGING_BUCKET), staged, head.etag, head.size, target
        )
    assert "InternalError" in str(copy_failed.value)
    assert "NoSuchUpload" not in str(copy_failed.value)
    assert Bucket(clean, NIGHTLY_BUCKET).head(target) is None


def test_an_upload_of_other_bytes_than_the_hash_given_never_completes(
    stack: LocalWheelGate, tmp_path: Path
) -> None:
    # Given a file over the single-request limit and a SHA-256 that is not its bytes' (the
    # file changed since it was hashed)...
    s3: Any = boto3.client("s3")
    staging = Bucket(s3, STAGING_BUCKET, limits=SMALL)
    path = tmp_path / "changed-1.0.tar.gz"
    path.write_bytes(os.urandom(12 * MB))
    key = "runs/large-changed-upload/v2/large/changed-1.0.tar.gz"
    # When it is uploaded in parts, which hash it as they read it...
    with pytest.raises(FileChangedError, match="not " + "0" * 64):
        staging.upload_file(
            path,
            key,
            sha256="0" * 64,
            content_type="application/octet-stream",
            metadata={},
            if_none_match=True,
        )
    # Then the upload is abandoned before its completion: no object, no upload left open.
    assert staging.head(key) is None
    uploads = s3.list_multipart_uploads(Bucket=STAGING_BUCKET, Prefix=key).get("Uploads", [])
    assert uploads == []


class AnonymousMemory:
    """Polls a process's anonymous resident memory (RssAnon: what it allocated, not the file
    pages it maps, which the kernel may drop) and keeps its peak, in bytes."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self.start = self.now()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def now(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
        raise AssertionError(f"no RssAnon for process {self.pid}")

    def _poll(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, self.now())

    def grown(self) -> int:
        """The peak's growth over the first reading; stops polling."""
        self._stop.set()
        self._thread.join()
        return max(self.peak, self.now()) - self.start


@pytest.mark.slow
def test_local_mode_holds_an_object_larger_than_the_memory_it_grows_by(tmp_path: Path) -> None:
    # Given `wheelgate local` in its own process, and a file of 256 MiB...
    size = 256 * MB
    path = tmp_path / "held-1.0.tar.gz"
    path.write_bytes(os.urandom(size))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    # Two requests at a time, so that what the server holds for the requests it serves (two
    # parts of 8 MiB) is small beside the object.
    two = TransferConfig(max_concurrency=2)
    with local_process("--no-promoter") as local:
        s3 = local.client("s3")
        bucket = local.env["WHEELGATE_STAGING_BUCKET"]
        memory = AnonymousMemory(local.process.pid)
        # When it is uploaded in parts, completed, read back by range and in full, and copied
        # part by part...
        s3.upload_file(str(path), bucket, "held/object", Config=two)
        ranged = s3.get_object(Bucket=bucket, Key="held/object", Range="bytes=100-199")
        assert ranged["Body"].read() == path.read_bytes()[100:200]
        read = hashlib.sha256()
        body = s3.get_object(Bucket=bucket, Key="held/object")["Body"]
        while chunk := body.read(MB):
            read.update(chunk)
        s3.copy({"Bucket": bucket, "Key": "held/object"}, bucket, "held/copy", Config=two)
        copied = s3.head_object(Bucket=bucket, Key="held/copy")
        grown = memory.grown()
        s3.delete_objects(
            Bucket=bucket, Delete={"Objects": [{"Key": "held/object"}, {"Key": "held/copy"}]}
        )
    # Then the bytes are the file's, and the server's memory grew by less than half the object
    # (moto alone builds a completed object in memory twice over: over 512 MiB for this one).
    assert read.hexdigest() == digest
    assert copied["ContentLength"] == size
    assert grown < size / 2, f"the local S3's memory grew by {grown / MB:.0f} MiB"


def test_versions_are_listed_beside_an_object_held_on_disk(stack: LocalWheelGate, s3: Any) -> None:
    # Given a bucket holding an object over moto's in-memory buffer (local mode maps it from
    # its file)...
    bucket = f"held-{os.getpid()}"
    s3.create_bucket(Bucket=bucket)
    body = os.urandom(6 * MB)
    s3.put_object(Bucket=bucket, Key="held/big", Body=body)
    s3.put_object(Bucket=bucket, Key="held/small", Body=b"x")
    # When its versions are listed (moto copies each version it lists)...
    listing = s3.list_object_versions(Bucket=bucket)
    # Then both are listed, and the object on disk still reads back whole.
    assert {(v["Key"], v["Size"]) for v in listing["Versions"]} == {
        ("held/big", 6 * MB),
        ("held/small", 1),
    }
    assert s3.get_object(Bucket=bucket, Key="held/big")["Body"].read() == body
    s3.delete_objects(
        Bucket=bucket, Delete={"Objects": [{"Key": "held/big"}, {"Key": "held/small"}]}
    )
    s3.delete_bucket(Bucket=bucket)
