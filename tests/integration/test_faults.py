"""Faults injected at every step of a promotion, on the real S3 API (moto server).

Each failure fails the SQS message (or kills the invocation, as a Lambda timeout does); the
message is delivered again until it succeeds. Checked after every attempt: nightly's pages
never list a file of an incomplete set. Checked at the end: the run is promoted, every file
is released with its bytes, and no object was copied twice."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from tests.integration.test_override import BREAK_GLASS, BREAK_GLASS_ID, put_override
from tests.integration.test_promoter import Context, Run, deliver, wheel
from wheelgate.cli.main import EXIT_OK, main
from wheelgate.core.env_names import ENV_BREAK_GLASS_ID
from wheelgate.core.layout import STAGING
from wheelgate.lambda_function import handler
from wheelgate.local.names import LOCAL_REPORTER_PRINCIPAL
from wheelgate.local.promoter_loop import sqs_lambda_event, stamp_identity
from wheelgate.local.stack import LocalWheelGate
from wheelgate.storage.bucket import Bucket

FILES = 4


class LambdaTimeout(BaseException):
    """Stands for the runtime killing the invocation: not an Exception, nothing catches it."""


@dataclass
class Fault:
    """Fail the ``nth`` call of ``operation`` whose key matches ``where`` (once)."""

    operation: str
    nth: int = 1
    where: Callable[[str], bool] = lambda _key: True
    kill: bool = False
    seen: int = 0
    fired: bool = False

    def __call__(self, model: Any, params: dict[str, Any], **_: Any) -> Any:
        if self.fired or model.name != self.operation:
            return None
        key = params.get("url", "") if isinstance(params, dict) else ""
        if not self.where(str(key)):
            return None
        self.seen += 1
        if self.seen < self.nth:
            return None
        self.fired = True
        if self.kill:
            raise LambdaTimeout(f"killed during {self.operation} #{self.nth}")
        response = AWSResponse(url="", status_code=503, headers={}, raw=None)  # type: ignore[arg-type]
        return response, {
            "Error": {"Code": "SlowDown", "Message": "Please reduce your request rate."},
            "ResponseMetadata": {"HTTPStatusCode": 503},
        }


@dataclass
class Copies:
    """Successful CopyObject calls per target key."""

    done: dict[str, int] = field(default_factory=dict)

    def before(self, model: Any, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["wheelgate_key"] = params.get("url_path", "")

    def after(self, model: Any, http_response: Any, context: dict[str, Any], **_: Any) -> None:
        if model.name == "CopyObject" and http_response.status_code == 200:
            key = context.get("wheelgate_key", "")
            self.done[key] = self.done.get(key, 0) + 1


FAULTS = {
    "S3 503 reading the manifest": Fault("GetObject", where=lambda k: "/manifests/" in k),
    "S3 503 on a HEAD while verifying": Fault("HeadObject", nth=2),
    "after 1 of 4 copies": Fault("CopyObject", nth=2),
    "after 3 of 4 copies": Fault("CopyObject", nth=4),
    "on the last copy": Fault("CopyObject", nth=FILES),
    "timeout after 2 copies": Fault("CopyObject", nth=3, kill=True),
    "writing a released .metadata": Fault(
        "PutObject", nth=2, where=lambda k: k.endswith(".metadata")
    ),
    "taking the index directory lease": Fault("PutObject", where=lambda k: "/_leases/" in k),
    "before the first index write": Fault("PutObject", where=lambda k: k.endswith("index.html")),
    "during index writes": Fault("PutObject", nth=3, where=lambda k: "/index." in k),
    "writing the root page": Fault(
        "PutObject", where=lambda k: k.endswith("/writing-the-root-page/index.json")
    ),
    "writing the record": Fault("PutObject", where=lambda k: "/records/" in k),
    "timeout writing the record": Fault("PutObject", where=lambda k: "/records/" in k, kill=True),
}


@pytest.fixture
def hooks() -> Iterator[Callable[[Fault], Copies]]:
    session = boto3.DEFAULT_SESSION
    assert session is not None
    registered: list[tuple[str, Any]] = []

    def install(fault: Fault) -> Copies:
        copies = Copies()
        hooks = (
            ("before-call.s3", copies.before),
            ("before-call.s3", fault),
            ("after-call.s3", copies.after),
        )
        for event, hook in hooks:
            session.events.register(event, hook)
            registered.append((event, hook))
        handler.promoter.cache_clear()  # its client is built with these hooks
        return copies

    yield install
    for event, hook in registered:
        session.events.unregister(event, hook)
    handler.promoter.cache_clear()


def expire_leases(run: Run) -> None:
    key = STAGING.lease(run.index)
    found = run.staging.get(key)
    if found is not None:
        lease = json.loads(found[0]) | {"expires": 0}
        run.staging.put(key, json.dumps(lease).encode(), content_type="application/json")


def listed_files(run: Run) -> set[str]:
    listed: set[str] = set()
    for project in {f.name.split("-")[0] for f in run.files}:
        found = run.nightly.get(f"{run.index}/{project}/index.json")
        if found:
            listed |= {f["filename"] for f in json.loads(found[0])["files"]}
    return listed


def assert_never_lists_an_incomplete_set(run: Run) -> None:
    listed = listed_files(run) & {f.name for f in run.files}
    if listed:
        for f in run.files:
            assert run.nightly.head(f"{run.index}/{f.name}") is not None, f"{f.name} listed early"


@pytest.mark.parametrize("fault_name", list(FAULTS))
@pytest.mark.slow
def test_redelivery_converges_after_a_fault(
    fault_name: str,
    hooks: Callable[[Fault], Copies],
    buckets: tuple[Bucket, Bucket],
    tmp_path: Path,
) -> None:
    slug = fault_name.replace(" ", "-").replace(",", "")[:40]
    run = Run(buckets, tmp_path, f"fault-{slug}", f"f/{slug}")
    run.stage(*[wheel(tmp_path, f"pkg{i % 2}", f"1.{i}") for i in range(FILES)])
    key = f"manifests/{run.run_id}.json"
    run.staging.put(key, json.dumps(run.manifest()).encode(), content_type="application/json")
    fault = FAULTS[fault_name]
    fault.seen, fault.fired = 0, False
    copies = hooks(fault)

    attempts = 0
    while True:
        attempts += 1
        try:
            response = deliver(key)
        except LambdaTimeout:
            response = {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
            # SQS redelivers a killed invocation's message only after the queue's visibility
            # timeout (six function timeouts), long after its index lease expired (one
            # function timeout and a minute): expiring the lease stands in for that wait.
            expire_leases(run)
        assert_never_lists_an_incomplete_set(run)
        if not response["batchItemFailures"]:
            break
        assert attempts < 5, "did not converge"
    assert fault.fired, "the fault was never injected"
    assert attempts == 2

    record = json.loads(run.staging.get(f"records/{run.run_id}.json")[0])  # type: ignore[index]
    assert record["state"] == "promoted", record
    assert listed_files(run) >= {f.name for f in run.files}
    for f in run.files:
        assert run.nightly.head(f"{run.index}/{f.name}") is not None
    # Nothing was copied twice: the retry only checked what the failed attempt had done.
    assert all(n == 1 for n in copies.done.values()), copies.done
    assert len(copies.done) == FILES  # each wheel (its .metadata is written, not copied)
    # And the index directory's lease was given back.
    lease = run.staging.get(STAGING.lease(run.index))
    assert lease is not None
    assert json.loads(lease[0])["holder"] is None


def test_a_poison_message_ends_in_the_dead_letter_queue_with_its_record(
    stack: LocalWheelGate,
    buckets: tuple[Bucket, Bucket],
    tmp_path: Path,
    hooks: Callable[[Fault], Copies],
) -> None:
    # Given a manifest whose promotion fails every time (S3 keeps refusing)...
    run = Run(buckets, tmp_path, "poison-1", "f/poison")
    run.stage(wheel(tmp_path, "pkg"))
    always = Fault("CopyObject", nth=1)
    hooks(always)
    sqs = boto3.client("sqs")
    sqs.purge_queue(QueueUrl=stack.queue_url)
    time.sleep(0.5)
    run.staging.put(
        f"manifests/{run.run_id}.json",
        json.dumps(run.manifest()).encode(),
        content_type="application/json",
    )
    moved = False
    for _ in range(10):
        always.fired = False
        got = sqs.receive_message(
            QueueUrl=stack.queue_url, WaitTimeSeconds=1, MessageSystemAttributeNames=["All"]
        ).get("Messages", [])
        if not got:
            dlq = sqs.receive_message(QueueUrl=stack.dlq_url, WaitTimeSeconds=1)
            if dlq.get("Messages"):
                moved = True
                break
            continue
        for m in got:
            m["Body"] = stamp_identity(m["Body"], LOCAL_REPORTER_PRINCIPAL)
            event = sqs_lambda_event([m], stack.queue_arn)
            response = handler.lambda_handler(event, Context())  # type: ignore[arg-type]
            assert response["batchItemFailures"]
            sqs.change_message_visibility(
                QueueUrl=stack.queue_url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
            )
    # ...the message ends in the dead-letter queue, and the record says why.
    assert moved
    record = json.loads(run.staging.get(f"records/{run.run_id}.json")[0])  # type: ignore[index]
    assert record["state"] == "pending"
    assert record["attempts"] >= 3
    assert "SlowDown" in record["message"]


@pytest.fixture
def distribution(stack: LocalWheelGate, monkeypatch: pytest.MonkeyPatch) -> str:
    """A CloudFront distribution on the local endpoint, configured for both indexes."""
    cloudfront = boto3.client("cloudfront")
    created = cloudfront.create_distribution(
        DistributionConfig={
            "CallerReference": f"wheelgate-{time.time_ns()}",
            "Comment": "WheelGate test",
            "Enabled": True,
            "Origins": {
                "Quantity": 1,
                "Items": [
                    {
                        "Id": "nightly",
                        "DomainName": "wheelgate-nightly.s3.amazonaws.com",
                        "S3OriginConfig": {"OriginAccessIdentity": ""},
                    }
                ],
            },
            "DefaultCacheBehavior": {
                "TargetOriginId": "nightly",
                "ViewerProtocolPolicy": "https-only",
                "CachePolicyId": "658327ea-f89d-4fab-a63d-7e88639e58f6",
            },
        }
    )
    distribution_id = str(created["Distribution"]["Id"])
    monkeypatch.setenv("WHEELGATE_NIGHTLY_DISTRIBUTION_ID", distribution_id)
    handler.promoter.cache_clear()
    return distribution_id


def invalidated_paths(distribution_id: str) -> list[list[str]]:
    cloudfront = boto3.client("cloudfront")
    listing = cloudfront.list_invalidations(DistributionId=distribution_id)["InvalidationList"]
    return [
        cloudfront.get_invalidation(DistributionId=distribution_id, Id=item["Id"])["Invalidation"][
            "InvalidationBatch"
        ]["Paths"]["Items"]
        for item in listing.get("Items", [])
    ]


def test_only_the_touched_pages_are_invalidated(
    distribution: str, buckets: tuple[Bucket, Bucket], tmp_path: Path
) -> None:
    run = Run(buckets, tmp_path, "cdn-1", "f/cdn")
    run.stage(wheel(tmp_path, "pkg0", "1.0"))
    assert run.report(run.manifest())["state"] == "promoted"
    [paths] = invalidated_paths(distribution)
    # The listing's pages and the archive's (listing retention), root and project.
    assert sorted(paths) == [
        "/f/cdn/_archive/index.html",
        "/f/cdn/_archive/index.json",
        "/f/cdn/_archive/pkg0/index.html",
        "/f/cdn/_archive/pkg0/index.json",
        "/f/cdn/index.html",
        "/f/cdn/index.json",
        "/f/cdn/pkg0/index.html",
        "/f/cdn/pkg0/index.json",
    ]
    # A second run of the same project leaves the root pages alone, and so their cache.
    run2 = Run(buckets, tmp_path / "2", "cdn-2", "f/cdn")
    run2.stage(wheel(tmp_path / "2", "pkg0", "1.1"))
    assert run2.report(run2.manifest())["state"] == "promoted"
    assert sorted(invalidated_paths(distribution)[-1]) == [
        "/f/cdn/_archive/pkg0/index.html",
        "/f/cdn/_archive/pkg0/index.json",
        "/f/cdn/pkg0/index.html",
        "/f/cdn/pkg0/index.json",
    ]


def test_a_failed_invalidation_is_made_on_redelivery(
    distribution: str, buckets: tuple[Bucket, Bucket], tmp_path: Path
) -> None:
    session = boto3.DEFAULT_SESSION
    assert session is not None
    fault = Fault("CreateInvalidation")
    session.events.register("before-call.cloudfront", fault)
    handler.promoter.cache_clear()
    try:
        run = Run(buckets, tmp_path, "cdn-fault", "f/cdn-fault")
        run.stage(wheel(tmp_path, "pkg0", "1.0"))
        key = f"manifests/{run.run_id}.json"
        run.staging.put(key, json.dumps(run.manifest()).encode(), content_type="application/json")
        assert deliver(key)["batchItemFailures"]
        assert fault.fired
        assert invalidated_paths(distribution) == []
        assert deliver(key) == {"batchItemFailures": []}
    finally:
        session.events.unregister("before-call.cloudfront", fault)
        handler.promoter.cache_clear()
    record = json.loads(run.staging.get(f"records/{run.run_id}.json")[0])  # type: ignore[index]
    assert record["state"] == "promoted"
    assert record["invalidations"]
    [paths] = invalidated_paths(distribution)
    assert "/f/cdn-fault/pkg0/index.json" in paths


def test_an_override_retried_after_a_fault_keeps_its_history(
    hooks: Callable[[Fault], Copies],
    buckets: tuple[Bucket, Bucket],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a rejected run and a break-glass override whose first delivery fails on a copy...
    monkeypatch.setenv(ENV_BREAK_GLASS_ID, BREAK_GLASS_ID)
    run = Run(buckets, tmp_path, "fault-override", "f/override")
    run.stage(wheel(tmp_path, "pkg"))
    assert run.report(run.manifest(result="failed"))["state"] == "rejected"
    request_id = put_override(run)
    key = f"manifests/{request_id}.json"
    fault = Fault("CopyObject")
    hooks(fault)
    assert deliver(key, BREAK_GLASS)["batchItemFailures"]
    assert fault.fired
    # ...when the message is delivered again...
    assert deliver(key, BREAK_GLASS) == {"batchItemFailures": []}
    # ...the request's record keeps the failed attempt, as every other record does.
    record = json.loads(run.staging.get(f"records/{request_id}.json")[0])  # type: ignore[index]
    assert record["state"] == "promoted", record
    assert record["attempts"] == 2
    assert [h["state"] for h in record["history"]] == ["pending", "promoted"]


def _first_attempt_copies_some(
    hooks: Callable[[Fault], Copies], buckets: tuple[Bucket, Bucket], tmp_path: Path, name: str
) -> tuple[Run, str, list[str], list[str]]:
    """A run of four wheels whose first delivery fails after some copies: the run, its
    manifest key, and the file names copied and not copied."""
    run = Run(buckets, tmp_path, name, f"f/{name}")
    run.stage(*[wheel(tmp_path, f"pkg{i % 2}", f"1.{i}") for i in range(FILES)])
    key = f"manifests/{run.run_id}.json"
    run.staging.put(key, json.dumps(run.manifest()).encode(), content_type="application/json")
    fault = Fault("CopyObject", nth=3)
    hooks(fault)
    assert deliver(key)["batchItemFailures"]
    assert fault.fired
    copied = [f.name for f in run.files if run.nightly.head(f"{run.index}/{f.name}")]
    missing = [f.name for f in run.files if f.name not in copied]
    assert copied, "the first attempt copied nothing"
    assert missing, "the first attempt copied everything"
    return run, key, copied, missing


def _remove_staged(run: Run, s3: Any, filename: str) -> None:
    """A staged file gone between attempts (lifecycle expiry, or removed by hand)."""
    for suffix in ("", ".metadata"):
        s3.delete_object(
            Bucket=run.staging.name, Key=f"runs/{run.run_id}/{run.index}/{filename}{suffix}"
        )


def test_a_copied_file_gone_from_staging_is_completed_from_its_nightly_copy(
    hooks: Callable[[Fault], Copies], buckets: tuple[Bucket, Bucket], tmp_path: Path, s3: Any
) -> None:
    # Given a first attempt that copied some files, one of which then left staging...
    run, key, copied, _ = _first_attempt_copies_some(hooks, buckets, tmp_path, "gone-copied")
    _remove_staged(run, s3, copied[0])
    # When the message is delivered again...
    assert deliver(key) == {"batchItemFailures": []}
    # Then the promotion completes: the copy (S3's SHA-256 is the manifest's) stands for it.
    record = json.loads(run.staging.get(f"records/{run.run_id}.json")[0])  # type: ignore[index]
    assert record["state"] == "promoted", record
    assert listed_files(run) >= {f.name for f in run.files}
    assert not list(run.staging.list(f"records/_left/{run.index}/"))


def test_a_rejection_after_a_partial_copy_names_what_stays_in_nightly(
    hooks: Callable[[Fault], Copies],
    buckets: tuple[Bucket, Bucket],
    tmp_path: Path,
    s3: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a first attempt that copied some files, and a file it had not copied then gone
    # from staging, so the set can no longer be verified...
    run, key, copied, missing = _first_attempt_copies_some(hooks, buckets, tmp_path, "gone-left")
    _remove_staged(run, s3, missing[0])
    left = sorted(
        k
        for name in copied
        for k in (f"{run.index}/{name}", f"{run.index}/{name}.metadata")
        if run.nightly.head(k) is not None
    )
    # When the message is delivered again...
    assert deliver(key) == {"batchItemFailures": []}
    # Then the run is rejected, and the record names the copies that stay in nightly...
    record = json.loads(run.staging.get(f"records/{run.run_id}.json")[0])  # type: ignore[index]
    assert (record["state"], record["reason"]) == ("rejected", "file-missing")
    assert f"{len(left)} object(s) an earlier attempt copied stay in nightly" in record["message"]
    assert record["sets"][0]["left_in_nightly"] == left
    # ...as does the status page, while no index page lists them...
    state = json.loads(run.staging.get("status/state.json")[0])  # type: ignore[index]
    (shown,) = [r for r in state["rejections"] if r["run_id"] == run.run_id]
    assert shown["left_in_nightly"] == left
    assert left[0] in run.staging.get("status/index.html")[0].decode()  # type: ignore[index]
    assert not listed_files(run) & set(copied)
    # ...and index rebuild finds them, and lists them no more than the promoter did.
    options = ["--staging-bucket", run.staging.name, "--nightly-bucket", run.nightly.name]
    rebuild = ["index", "rebuild", "--index", run.index, *options]
    capsys.readouterr()  # the promoter's logs so far
    assert main([*rebuild, "--dry-run"]) == EXIT_OK
    found = json.loads(capsys.readouterr().out)["left_in_nightly"]
    assert sorted(n["filename"] for n in found) == sorted(copied)
    assert {n["run_id"] for n in found} == {run.run_id}
    assert main(rebuild) == EXIT_OK
    assert not listed_files(run) & set(copied)
    archive = run.nightly.get(f"{run.index}/_archive/pkg0/index.json")
    assert archive is None or not set(copied) & {
        f["filename"] for f in json.loads(archive[0])["files"]
    }
