"""The promoter's index-directory lease against the real S3 API (moto server)."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from tests.integration.test_promoter import (
    Context,
    Run,
    deliver,
    nightly_versions,
    sqs_event,
    wheel,
)
from wheelgate.cli import maintenance
from wheelgate.cli.main import EXIT_OK, EXIT_PENDING, main
from wheelgate.core.layout import STAGING
from wheelgate.index.yank import SCHEMA_YANK_V1, YankRequest, new_request_id
from wheelgate.lambda_function import handler
from wheelgate.local.names import LOCAL_REPORTER_PRINCIPAL
from wheelgate.promotion.lease import IndexLeases, LeaseBusy
from wheelgate.storage.bucket import Bucket

INDEX = "lease/dir"


def test_one_holder_at_a_time_and_the_lease_comes_back(buckets: tuple[Bucket, Bucket]) -> None:
    staging, _ = buckets
    leases = IndexLeases(staging)
    with leases.hold([INDEX], run_id="first"):
        # Another promotion into the directory is told to retry, naming who holds it.
        with pytest.raises(LeaseBusy, match="run first"), leases.hold([INDEX], run_id="second"):
            pass
        # A promotion into another directory is not held up.
        with leases.hold(["lease/other"], run_id="third"):
            pass
    with leases.hold([INDEX], run_id="second"):
        pass


def test_a_busy_directory_gives_back_what_was_taken_first(buckets: tuple[Bucket, Bucket]) -> None:
    staging, _ = buckets
    leases = IndexLeases(staging)
    with leases.hold(["lease/b"], run_id="holder"):
        with pytest.raises(LeaseBusy), leases.hold(["lease/a", "lease/b"], run_id="both"):
            pass
        # lease/a was taken before lease/b was found busy, and was given back.
        with leases.hold(["lease/a"], run_id="next"):
            pass


def test_an_expired_lease_is_taken_over(buckets: tuple[Bucket, Bucket]) -> None:
    staging, _ = buckets
    now = [1000.0]
    dead = IndexLeases(staging, clock=lambda: now[0], seconds=60)
    holding = dead.hold([INDEX + "-x"], run_id="killed")
    holding.__enter__()  # an invocation killed while holding: it never gives the lease back
    live = IndexLeases(staging, clock=lambda: now[0], seconds=60)
    with pytest.raises(LeaseBusy), live.hold([INDEX + "-x"], run_id="waiting"):
        pass
    now[0] += 61
    with live.hold([INDEX + "-x"], run_id="waiting"):
        lease = staging.get(STAGING.lease(INDEX + "-x"))
        assert lease is not None
        assert json.loads(lease[0])["run_id"] == "waiting"


#: How many promotions race for one lease.
TAKERS = 8


def test_racing_takers_get_it_once(buckets: tuple[Bucket, Bucket]) -> None:
    staging, _ = buckets
    # Every taker starts at once, and the winner holds the lease until every taker has tried.
    start, tried = threading.Barrier(TAKERS, timeout=30), threading.Barrier(TAKERS, timeout=30)

    def take(i: int) -> str:
        leases = IndexLeases(staging)
        try:
            start.wait()
            try:
                with leases.hold(["lease/race"], run_id=f"r{i}"):
                    tried.wait()
                    return "won"
            except LeaseBusy:
                tried.wait()
                return "busy"
        except BaseException:
            # Any other failure must not leave the others waiting: it breaks both barriers,
            # and future.result() below raises it.
            start.abort()
            tried.abort()
            raise

    with ThreadPoolExecutor(max_workers=TAKERS) as pool:
        futures = [pool.submit(take, i) for i in range(TAKERS)]
        _, running = wait(futures, timeout=60)
    assert not running, f"{len(running)} taker(s) still running after 60 s"
    # Every taker ended with a result (result() raises what a taker raised)...
    outcomes = sorted(f.result() for f in futures)
    # ...exactly one took the lease, and every other was told it was busy
    assert outcomes == ["busy"] * (TAKERS - 1) + ["won"]


def test_a_promotion_waits_while_its_directory_is_leased(
    buckets: tuple[Bucket, Bucket], tmp_path: Path, s3: Any
) -> None:
    # Given a directory another promotion holds...
    run = Run(buckets, tmp_path, "lease-run", "lease/promote")
    run.stage(wheel(tmp_path, "leased"))
    other = IndexLeases(run.staging)
    before = nightly_versions(s3)
    with other.hold([run.index], run_id="someone-else"):
        # ...the promotion fails transiently (its message is retried) with nothing written.
        key = f"manifests/{run.run_id}.json"
        run.staging.put(key, json.dumps(run.manifest()).encode(), content_type="application/json")
        assert deliver(key)["batchItemFailures"] == [{"itemIdentifier": "m-1"}]
        assert nightly_versions(s3) == before
        record = run.staging.get(f"records/{run.run_id}.json")
        assert record is not None
        assert json.loads(record[0])["state"] == "pending"
    # Once the lease is back, the redelivery promotes it.
    assert deliver(key) == {"batchItemFailures": []}
    record = run.staging.get(f"records/{run.run_id}.json")
    assert record is not None
    assert json.loads(record[0])["state"] == "promoted"


def test_a_busy_directory_is_retried_soon(
    buckets: tuple[Bucket, Bucket], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a run's manifest message, received from a queue whose visibility timeout is far
    # longer than this test waits, and its index directory leased by another promotion...
    run = Run(buckets, tmp_path, "busy-run", "lease/busy")
    run.stage(wheel(tmp_path, "busy"))
    key = f"manifests/{run.run_id}.json"
    run.staging.put(key, json.dumps(run.manifest()).encode(), content_type="application/json")
    sqs: Any = boto3.client("sqs")
    url = sqs.create_queue(QueueName="busy-retry", Attributes={"VisibilityTimeout": "900"})[
        "QueueUrl"
    ]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    (record,) = sqs_event(key, LOCAL_REPORTER_PRINCIPAL)["Records"]
    sqs.send_message(QueueUrl=url, MessageBody=record["body"])
    (message,) = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]
    event = {
        "Records": [
            {
                **record,
                "messageId": message["MessageId"],
                "receiptHandle": message["ReceiptHandle"],
                "eventSourceARN": arn,
            }
        ]
    }
    monkeypatch.setattr(handler, "LEASE_BUSY_RETRY_SECONDS", 1)
    with IndexLeases(run.staging).hold([run.index], run_id="holder"):
        # When the promoter handles it, Then the message fails...
        response = handler.lambda_handler(event, Context())  # type: ignore[arg-type]
    assert response == {"batchItemFailures": [{"itemIdentifier": message["MessageId"]}]}
    # ...and comes back after the short delay, not after the queue's visibility timeout.
    time.sleep(1.5)
    again = sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=1, MessageSystemAttributeNames=["All"]
    )
    (redelivered,) = again["Messages"]
    assert redelivered["MessageId"] == message["MessageId"]
    assert redelivered["Attributes"]["ApproximateReceiveCount"] == "2"


def test_a_yank_waits_while_its_directory_is_leased(
    buckets: tuple[Bucket, Bucket], tmp_path: Path, s3: Any
) -> None:
    # Given a released file and its directory leased by a promotion...
    run = Run(buckets, tmp_path, "lease-yank-run", "lease/yank")
    promoted = run.stage(wheel(tmp_path, "yankee")).report(run.manifest())
    assert promoted["state"] == "promoted"
    request = YankRequest(
        schema=SCHEMA_YANK_V1,
        run_id=new_request_id(),
        index=run.index,
        filename=run.files[0].name,
        yanked=True,
        reason="broken",
    )
    key = STAGING.manifest(request.run_id)
    run.staging.put(key, request.to_json().encode(), content_type="application/json")
    before = nightly_versions(s3)
    with IndexLeases(run.staging).hold([run.index], run_id="a-promotion"):
        # When the yank request arrives, Then it fails transiently and writes nothing...
        assert deliver(key)["batchItemFailures"] == [{"itemIdentifier": "m-1"}]
        assert nightly_versions(s3) == before
    # ...and its redelivery, once the lease is back, yanks the file.
    assert deliver(key) == {"batchItemFailures": []}
    page = run.nightly.get(f"{run.index}/yankee/index.json")
    assert page is not None
    assert [f["yanked"] for f in json.loads(page[0])["files"]] == ["broken"]


def test_a_rebuild_waits_for_the_lease_and_gives_up_with_a_message(
    buckets: tuple[Bucket, Bucket],
    tmp_path: Path,
    s3: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a promoted directory whose listing page was lost, and a promotion holding it...
    run = Run(buckets, tmp_path, "lease-rebuild-run", "lease/rebuild")
    assert run.stage(wheel(tmp_path, "rebuilt")).report(run.manifest())["state"] == "promoted"
    s3.delete_object(Bucket=run.nightly.name, Key=f"{run.index}/rebuilt/index.json")
    monkeypatch.setattr(maintenance, "LEASE_POLL_SECONDS", 0.2)
    options = ["--staging-bucket", run.staging.name, "--nightly-bucket", run.nightly.name]
    rebuild = ["index", "rebuild", "--index", run.index, *options]
    before = nightly_versions(s3)
    with IndexLeases(run.staging).hold([run.index], run_id="a-promotion"):
        # When the rebuild runs, Then it waits, then stops naming the holder, writing nothing.
        assert main([*rebuild, "--wait", "1"]) == EXIT_PENDING
        assert "run a-promotion" in capsys.readouterr().err
        assert nightly_versions(s3) == before
        # A dry run needs no lease.
        assert main([*rebuild, "--dry-run"]) == EXIT_OK
    # Once the lease is back the rebuild restores the page, and gives the lease back.
    assert main(rebuild) == EXIT_OK
    assert run.nightly.get(f"{run.index}/rebuilt/index.json") is not None
    assert IndexLeases(run.staging).holder(run.index) is None


def test_a_rebuild_refused_the_lease_by_s3_warns_and_still_repairs(
    buckets: tuple[Bucket, Bucket],
    tmp_path: Path,
    s3: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given credentials the staging bucket refuses a lease write (the deployed policy lets only
    # the promoter write records/, and the break-glass role runs rebuilds)...
    run = Run(buckets, tmp_path, "lease-refused-run", "lease/refused")
    assert run.stage(wheel(tmp_path, "refused")).report(run.manifest())["state"] == "promoted"
    s3.delete_object(Bucket=run.nightly.name, Key=f"{run.index}/refused/index.json")

    def refuse(model: Any, params: dict[str, Any], **_: Any) -> Any:
        if model.name == "PutObject" and "/_leases/" in str(params.get("url", "")):
            response = AWSResponse(url="", status_code=403, headers={}, raw=None)  # type: ignore[arg-type]
            return response, {"Error": {"Code": "AccessDenied", "Message": "Access Denied"}}
        return None

    session = boto3.DEFAULT_SESSION
    assert session is not None
    session.events.register("before-call.s3", refuse)
    try:
        code = main(
            ["index", "rebuild", "--index", run.index, "--staging-bucket", run.staging.name,
             "--nightly-bucket", run.nightly.name]
        )  # fmt: skip
    finally:
        session.events.unregister("before-call.s3", refuse)
    # Then it says so, rebuilds without the lease, and the page is back.
    assert code == EXIT_OK
    assert "cannot take the lease of lease/refused" in capsys.readouterr().err
    assert run.nightly.get(f"{run.index}/refused/index.json") is not None
