"""The promoter handler against the real S3 API (moto server), events delivered by the test."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.lambda_events import Context, sqs_batch
from wheelgate.core.errors import TransientError
from wheelgate.lambda_function import handler
from wheelgate.local.names import LOCAL_REPORTER_PRINCIPAL, NIGHTLY_BUCKET, STAGING_BUCKET
from wheelgate.local.sample_wheels import build_wheel, manifest_for
from wheelgate.local.snapshot import version_snapshot
from wheelgate.local.stack import LocalWheelGate
from wheelgate.staging.local_artifacts import inspect_files
from wheelgate.staging.stage import stage
from wheelgate.storage.bucket import Bucket

COMMIT = "4" * 40


def sqs_event(key: str, principal: str | None) -> dict[str, Any]:
    """The SQS message S3 sends for the write of ``key`` as it now stands (its real ETag)."""
    s3_object: dict[str, Any] = {"key": key.replace("/", "%2F"), "size": 1}
    try:
        head = boto3.client("s3").head_object(Bucket=STAGING_BUCKET, Key=key)
        s3_object["eTag"] = head["ETag"].strip('"')
    except ClientError:
        pass  # not in this S3: an event without an ETag reads the key as it stands
    record: dict[str, Any] = {
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "awsRegion": "us-east-1",
        "eventTime": "2026-11-30T04:00:00.000Z",
        "eventName": "ObjectCreated:Put",
        "requestParameters": {"sourceIPAddress": "127.0.0.1"},
        "responseElements": {"x-amz-request-id": "r", "x-amz-id-2": "i"},
        "s3": {
            "s3SchemaVersion": "1.0",
            "configurationId": "manifests",
            "bucket": {
                "name": STAGING_BUCKET,
                "ownerIdentity": {"principalId": "o"},
                "arn": f"arn:aws:s3:::{STAGING_BUCKET}",
            },
            "object": s3_object,
        },
    }
    record["userIdentity"] = {"principalId": principal} if principal else {"principalId": ""}
    return sqs_batch(json.dumps({"Records": [record]}))


def deliver(key: str, principal: str | None = LOCAL_REPORTER_PRINCIPAL) -> dict[str, Any]:
    return handler.lambda_handler(sqs_event(key, principal), Context())  # type: ignore[arg-type]


def nightly_versions(s3: Any) -> dict[str, str]:
    """Every object version and delete marker in nightly: equal snapshots, nothing written."""
    return version_snapshot(s3, NIGHTLY_BUCKET)


class Run:
    """One run staged through the same code as ``wheelgate stage``."""

    def __init__(self, buckets: tuple[Bucket, Bucket], tmp: Path, run_id: str, index: str) -> None:
        self.staging, self.nightly = buckets
        self.run_id, self.index, self.tmp = run_id, index, tmp
        self.files: list[Path] = []

    def stage(self, *wheels: Path, pages: bool = True) -> Run:
        """Stage ``wheels`` as ``wheelgate stage`` does; without ``pages``, not the run's
        index pages (the files alone)."""
        stage(
            staging=self.staging,
            nightly=self.nightly,
            nightly_base_url="http://nightly/",
            run_id=self.run_id,
            index=self.index,
            commit=COMMIT,
            artifacts=inspect_files(list(wheels)),
            publish_pages=pages,
        )
        self.files += wheels
        return self

    def manifest(
        self, files: list[Path] | None = None, result: str = "passed", test: str = "smoke"
    ) -> dict[str, Any]:
        return manifest_for(
            self.run_id, COMMIT, self.index, files or self.files, result=result, test=test
        )

    def report(
        self, manifest: dict[str, Any] | bytes, principal: str | None = LOCAL_REPORTER_PRINCIPAL
    ) -> dict[str, Any]:
        body = manifest if isinstance(manifest, bytes) else json.dumps(manifest).encode()
        key = f"manifests/{self.run_id}.json"
        self.staging.put(key, body, content_type="application/json")
        response = deliver(key, principal)
        assert response == {"batchItemFailures": []}
        found = self.staging.get(f"records/{self.run_id}.json")
        assert found is not None
        return json.loads(found[0])


@pytest.fixture
def run(buckets: tuple[Bucket, Bucket], tmp_path: Path, request: pytest.FixtureRequest) -> Run:
    name = request.node.name.replace("_", "-")[-60:].strip("-")
    return Run(buckets, tmp_path, name, f"t/{name}")


def wheel(tmp: Path, name: str = "pkg", version: str = "1.0", **kw: Any) -> Path:
    return build_wheel(tmp, name, version, **kw)


def test_manifest_from_another_principal_never_decides_the_run(run: Run, s3: Any) -> None:
    # Given a staged run whose manifest is first written by a principal not trusted for it...
    run.stage(wheel(run.tmp))
    before = nightly_versions(s3)
    manifest = run.manifest()
    record = run.report(manifest, principal="AWS:AROAINTRUDER:session")
    # ...the write is noted, and the run is still waiting for its reporter.
    assert (record["state"], record["reason"]) == ("pending", "untrusted-writer")
    assert "AROAINTRUDER" in record["message"]
    assert nightly_versions(s3) == before
    # When the reporter then writes the very same bytes, Then they decide the run.
    record = run.report(manifest)
    assert record["state"] == "promoted", record["message"]
    assert [h["state"] for h in record["history"]] == ["pending", "promoted"]


def test_event_without_identity_never_decides_the_run(run: Run) -> None:
    run.stage(wheel(run.tmp))
    record = run.report(run.manifest(), principal=None)
    assert (record["state"], record["reason"]) == ("pending", "untrusted-writer")


def test_an_event_is_judged_on_the_bytes_its_writer_wrote(run: Run, s3: Any) -> None:
    # Given the reporter's manifest event, and the manifest then overwritten by another writer
    # before the event is handled...
    run.stage(wheel(run.tmp))
    key = f"manifests/{run.run_id}.json"
    run.staging.put(key, json.dumps(run.manifest()).encode(), content_type="application/json")
    event = sqs_event(key, LOCAL_REPORTER_PRINCIPAL)
    forged = run.manifest()
    forged["sets"][0]["tests"] = [
        {"name": "smoke", "result": "passed", "url": "https://x.invalid/"}
    ]
    run.staging.put(key, json.dumps(forged).encode(), content_type="application/json")
    before = nightly_versions(s3)
    # When the reporter's event is handled, Then the other writer's bytes are not taken for
    # the reporter's: nothing is decided or copied.
    assert handler.lambda_handler(event, Context()) == {"batchItemFailures": []}  # type: ignore[arg-type]
    assert run.staging.get(f"records/{run.run_id}.json") is None
    assert nightly_versions(s3) == before


def promote_spying_on_reads(run: Run) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    reads: list[dict[str, Any]] = []

    def spy(params: dict[str, Any], **_: Any) -> None:
        reads.append(params)

    assert boto3.DEFAULT_SESSION is not None
    boto3.DEFAULT_SESSION.events.register("provide-client-params.s3.GetObject", spy)
    try:
        record = run.report(run.manifest())
    finally:
        boto3.DEFAULT_SESSION.events.unregister("provide-client-params.s3.GetObject", spy)
    return record, reads


def released_metadata_matches(s3: Any, run: Run, wheel_path: Path) -> None:
    import zipfile

    with zipfile.ZipFile(wheel_path) as archive:
        [member] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        expected = archive.read(member)
    key = f"{run.index}/{wheel_path.name}.metadata"
    released = s3.get_object(Bucket=NIGHTLY_BUCKET, Key=key)["Body"].read()
    assert released == expected
    page = json.loads(
        s3.get_object(Bucket=NIGHTLY_BUCKET, Key=f"{run.index}/big/index.json")["Body"].read()
    )
    assert page["files"][0]["core-metadata"] == {"sha256": hashlib.sha256(expected).hexdigest()}
    assert page["files"][0]["requires-python"] == ">=3.9"


def wheel_bytes_read(reads: list[dict[str, Any]]) -> int:
    wheel_reads = [p for p in reads if p["Key"].endswith(".whl")]
    assert wheel_reads
    assert all("Range" in p for p in wheel_reads)
    ranges = [p["Range"].removeprefix("bytes=").split("-") for p in wheel_reads]
    return sum(int(b) - int(a) + 1 for a, b in ranges)


def test_promotion_never_downloads_a_wheel(run: Run, s3: Any) -> None:
    big = wheel(run.tmp, "big", payload_bytes=8_000_000)
    run.stage(big)
    record, reads = promote_spying_on_reads(run)
    assert record["state"] == "promoted", record
    # The wheel is copied server-side; its METADATA and WHEEL are checked with a few ranged
    # reads of its zip directory, never the whole file.
    assert wheel_bytes_read(reads) < big.stat().st_size // 100
    released_metadata_matches(s3, run, big)
    # The copy keeps a verifiable full-object SHA-256, and Object Lock retention.
    head = s3.head_object(
        Bucket=NIGHTLY_BUCKET, Key=f"{run.index}/{big.name}", ChecksumMode="ENABLED"
    )
    import base64

    digest = hashlib.sha256(big.read_bytes()).hexdigest()
    assert base64.b64decode(head["ChecksumSHA256"]).hex() == digest
    assert head["ObjectLockMode"] == "GOVERNANCE"


def test_without_a_staged_metadata_file_it_is_read_with_ranged_reads(run: Run, s3: Any) -> None:
    big = wheel(run.tmp, "big", payload_bytes=8_000_000)
    run.stage(big)
    s3.delete_object(
        Bucket=STAGING_BUCKET, Key=f"runs/{run.run_id}/{run.index}/{big.name}.metadata"
    )
    record, reads = promote_spying_on_reads(run)
    assert record["state"] == "promoted", record
    assert wheel_bytes_read(reads) < big.stat().st_size // 100
    released_metadata_matches(s3, run, big)


def test_tampered_staged_file_is_rejected(run: Run, s3: Any) -> None:
    good = wheel(run.tmp)
    run.stage(good)
    manifest = run.manifest()
    # Someone flips one byte of the staged file after the tests ran (same size).
    tampered = bytearray(good.read_bytes())
    tampered[len(tampered) // 2] ^= 0xFF
    key = f"runs/{run.run_id}/{run.index}/{good.name}"
    s3.put_object(
        Bucket=STAGING_BUCKET,
        Key=key,
        Body=bytes(tampered),
        ChecksumAlgorithm="SHA256",
        Metadata={"wheelgate-commit": COMMIT},
    )
    before = nightly_versions(s3)
    record = run.report(manifest)
    assert (record["state"], record["reason"]) == ("rejected", "checksum-mismatch")
    assert nightly_versions(s3) == before


def test_file_staged_but_not_listed_rejects_the_set(run: Run, s3: Any) -> None:
    a, b = wheel(run.tmp, "a"), wheel(run.tmp, "b")
    run.stage(a, b)
    before = nightly_versions(s3)
    record = run.report(run.manifest(files=[a]))
    assert record["reason"] == "file-not-listed"
    assert nightly_versions(s3) == before


def test_existing_nightly_file_with_other_bytes_is_never_overwritten(run: Run, s3: Any) -> None:
    w = wheel(run.tmp)
    run.stage(w)
    s3.put_object(
        Bucket=NIGHTLY_BUCKET,
        Key=f"{run.index}/{w.name}",
        Body=b"older release",
        ChecksumAlgorithm="SHA256",
    )
    before = nightly_versions(s3)
    record = run.report(run.manifest())
    assert record["reason"] == "nightly-conflict"
    assert nightly_versions(s3) == before


def test_a_promoted_run_cannot_be_replayed_with_other_content(run: Run, s3: Any) -> None:
    first = wheel(run.tmp)
    run.stage(first)
    assert run.report(run.manifest())["state"] == "promoted"
    later = wheel(run.tmp, "later")
    run.stage(later)
    before = nightly_versions(s3)
    record = run.report(run.manifest(files=[first, later]))
    assert record["state"] == "promoted"
    assert record["history"][-1]["reason"] == "replay-conflict"
    assert nightly_versions(s3) == before


def test_transient_failure_is_retried_and_converges(
    run: Run, s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    w1, w2 = wheel(run.tmp, "one"), wheel(run.tmp, "two")
    run.stage(w1, w2)
    key = f"manifests/{run.run_id}.json"
    run.staging.put(key, json.dumps(run.manifest()).encode(), content_type="application/json")
    original = Bucket.copy_in
    calls = {"n": 0}

    def flaky(self: Bucket, *args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise TransientError("SlowDown (injected)")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Bucket, "copy_in", flaky)
    # Given a copy fails after the first succeeded, the message is reported as failed...
    assert deliver(key) == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
    pending = json.loads(run.staging.get(f"records/{run.run_id}.json")[0])  # type: ignore[index]
    assert (pending["state"], pending["attempts"]) == ("pending", 1)
    # ...no page lists any file of the incomplete set...
    assert run.nightly.get(f"{run.index}/one/index.json") is None
    assert run.nightly.get(f"{run.index}/two/index.json") is None
    # ...and the redelivery finishes the job, skipping what was already copied.
    assert deliver(key) == {"batchItemFailures": []}
    record = json.loads(run.staging.get(f"records/{run.run_id}.json")[0])  # type: ignore[index]
    assert record["state"] == "promoted"
    actions = sorted(f["action"] for f in record["sets"][0]["files"])
    assert actions == ["already-released", "copied"]


def test_poison_message_fails_so_sqs_moves_it_to_the_dead_letter_queue() -> None:
    event = sqs_event("manifests/x.json", LOCAL_REPORTER_PRINCIPAL)
    event["Records"][0]["body"] = "this is not an S3 event"
    response = handler.lambda_handler(event, Context())  # type: ignore[arg-type]
    assert response == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}


@pytest.fixture(autouse=True)
def _fresh_promoter() -> Iterator[None]:
    handler.promoter.cache_clear()
    yield
    handler.promoter.cache_clear()


def test_mirror_runs_are_accepted_only_from_the_mirror_role(
    buckets: tuple[Bucket, Bucket], tmp_path: Path
) -> None:
    from wheelgate.local.names import LOCAL_DEPS_PRINCIPAL

    # A build role could stage runs/deps-x/ and the reporter write its manifest: refused, since
    # a mirror run skips the index's required tests on the strength of its review.
    forged = Run(buckets, tmp_path / "forged", "deps-forged", "t/mirror").stage(wheel(tmp_path))
    manifest = forged.manifest(test="deps-review")
    record = forged.report(manifest, principal=LOCAL_REPORTER_PRINCIPAL)
    assert (record["state"], record["reason"]) == ("pending", "untrusted-writer")
    assert "deps role" in record["message"]
    mirrored = Run(buckets, tmp_path / "ok", "deps-ok", "t/mirror").stage(wheel(tmp_path / "ok"))
    manifest = mirrored.manifest(test="deps-review")
    assert mirrored.report(manifest, principal=LOCAL_DEPS_PRINCIPAL)["state"] == "promoted"


def test_uv_resolves_through_the_json_api(
    stack: LocalWheelGate, buckets: tuple[Bucket, Bucket], tmp_path: Path
) -> None:
    import subprocess

    from tests.integration.conftest import uv_binary
    from wheelgate.staging.hermetic import hermetic_env

    run = Run(buckets, tmp_path, "uv-json", "t/uv-json")
    run.stage(wheel(tmp_path, "uvpkg", "1.0"))
    assert run.report(run.manifest())["state"] == "promoted"
    stack.nightly_server.bytes_sent.clear()
    target = tmp_path / "site"
    result = subprocess.run(
        [
            uv_binary(),
            "pip",
            "install",
            "--target",
            str(target),
            "--index-url",
            f"{stack.nightly_url}{run.index}/",
            "uvpkg==1.0",
        ],
        env=hermetic_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    served = set(stack.nightly_server.bytes_sent)
    # uv asked for the PEP 691 JSON page, never the HTML one.
    assert f"{run.index}/uvpkg/index.json" in served
    assert f"{run.index}/uvpkg/index.html" not in served
    assert (target / "uvpkg" / "__init__.py").exists()


def test_dry_run_resolution_reads_metadata_not_the_wheel(
    stack: LocalWheelGate, buckets: tuple[Bucket, Bucket], tmp_path: Path, venv_factory: Any
) -> None:
    from tests.integration.installs import installs, pip

    # Given a 2 MB wheel and its dependency promoted to nightly...
    run = Run(buckets, tmp_path, "dry-run", "t/dry-run")
    dep = wheel(tmp_path, "dry-filelock", "3.18.0")
    big = wheel(
        tmp_path, "dry-torch", "2.7.0", requires=["dry-filelock>=3"], payload_bytes=2_000_000
    )
    assert run.stage(dep, big).report(run.manifest())["state"] == "promoted"
    stack.nightly_server.bytes_sent.clear()
    # When pip resolves it with --dry-run against the nightly index...
    report = tmp_path / "report.json"
    result = pip(
        venv_factory("dry-run"),
        *("install", "--dry-run", "--report", str(report)),
        *("--index-url", f"{stack.nightly_url}{run.index}/", "dry-torch==2.7.0"),
    )
    assert result.returncode == 0, result.stderr
    assert {i["metadata"]["name"] for i in installs(report)} == {"dry-torch", "dry-filelock"}
    # Then the server sent each wheel's PEP 658 metadata file and not one byte of a wheel.
    served = dict(stack.nightly_server.bytes_sent)
    for path in (big, dep):
        key = f"{run.index}/{path.name}"
        assert served.get(f"{key}.metadata", 0) > 0, served
        assert served.get(key, 0) == 0, served


def test_a_run_never_restages_a_file_name_with_other_bytes(
    buckets: tuple[Bucket, Bucket], tmp_path: Path
) -> None:
    from wheelgate.staging.errors import StageError

    run = Run(buckets, tmp_path, "restage-1", "t/restage").stage(wheel(tmp_path / "a", "pkg"))
    rebuilt = wheel(tmp_path / "b", "pkg", module_source="CHANGED = True\n")
    with pytest.raises(StageError, match="already has other files staged"):
        run.stage(rebuilt)
    head = run.staging.head(f"runs/restage-1/t/restage/{rebuilt.name}")
    assert head is not None
    assert head.sha256 == hashlib.sha256(run.files[0].read_bytes()).hexdigest()


def test_a_test_url_on_another_host_is_rejected(run: Run, s3: Any) -> None:
    # Given a manifest (written past `wheelgate report`) linking a test result elsewhere...
    run.stage(wheel(run.tmp))
    manifest = run.manifest()
    manifest["sets"][0]["tests"][0]["url"] = "https://ci.example.org/runs/1"
    before = nightly_versions(s3)
    # When the promoter, configured with the default hosts (github.com), handles it
    record = run.report(manifest)
    # Then it is rejected naming the field, and nothing reaches nightly
    assert (record["state"], record["reason"]) == ("rejected", "invalid-manifest")
    assert "sets.0.tests.0.url" in record["message"]
    assert "not on an allowed host (github.com)" in record["message"]
    assert nightly_versions(s3) == before
