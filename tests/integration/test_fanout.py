"""Fan-out promotion against the real S3 and SQS APIs (moto server): the promoter hands a large
set to an execution run in-process (local mode's engine) with the state machine's order and
retry numbers, and every fault converges on the single invocation's final state."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import boto3
import pytest

from tests.integration.test_promoter import Context, nightly_versions, sqs_event
from wheelgate.core.env_names import (
    ENV_BREAK_GLASS_ID,
    ENV_DEAD_LETTER_QUEUE_URL,
    ENV_FANOUT_MIN_FILES,
    ENV_FANOUT_STATE_MACHINE_ARN,
    ENV_MANIFEST_QUEUE_URL,
)
from wheelgate.core.errors import TransientError
from wheelgate.core.fanout_steps import FANOUT_STEP_FIELD
from wheelgate.core.layout import PAGE_NAMES, STAGING, VERDICT_KEYS_KEY, VERDICT_SUFFIX
from wheelgate.core.limits import (
    FANOUT_ITEM_RETRY_ATTEMPTS,
    FANOUT_ITEM_RETRY_BACKOFF,
    FANOUT_ITEM_RETRY_INTERVAL_SECONDS,
    FANOUT_LEASE_BUSY_RETRY_SECONDS,
    FANOUT_MAX_EXECUTIONS,
    LEASE_BUSY_RETRY_SECONDS,
)
from wheelgate.core.override import new_request_id
from wheelgate.core.settings import PromoterSettings
from wheelgate.lambda_function import handler
from wheelgate.lambda_function.handler import manifest_events
from wheelgate.local.executions import InProcessLauncher
from wheelgate.local.names import LOCAL_REPORTER_PRINCIPAL, NIGHTLY_BUCKET
from wheelgate.local.promoter_loop import sqs_lambda_event
from wheelgate.local.sample_wheels import build_wheel, manifest_for
from wheelgate.local.stack import LocalWheelGate
from wheelgate.promotion.compose import build_service
from wheelgate.promotion.decisions import Decision, DecisionStats
from wheelgate.promotion.fanout.job import FanoutIncomplete, fanout_job_id
from wheelgate.promotion.lease import IndexLeases
from wheelgate.staging.local_artifacts import inspect_files
from wheelgate.staging.stage import stage
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.limits import TransferLimits
from wheelgate.storage.signing import KmsSigner
from wheelgate.storage.workflow import SqsSender

# Fan-out executions of sets large enough to fan out, every file signed: seconds each; `make
# test` only (tests/unit/test_fanout.py keeps the steps and the engine in `make quick`).
pytestmark = pytest.mark.slow

COMMIT = "5" * 40
#: SQS's longest visibility timeout (12 hours).
SQS_MAX_VISIBILITY_SECONDS = 12 * 60 * 60
STATE_MACHINE = "arn:aws:states:us-east-1:000000000000:stateMachine:wheelgate-fanout"
Fault = Callable[[dict[str, Any], Callable[[], Any]], Any]


class Gate:
    """Holds executions back until opened (an execution that is still running)."""

    def __init__(self) -> None:
        self.opened = threading.Event()

    def open(self) -> None:
        self.opened.set()


class Decisions:
    """The metrics projection's view: (state, stats) per new decision on a run."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, DecisionStats]] = []

    def project(self, decision: Decision) -> None:
        if decision.new and not decision.noted:
            self.heard.append((decision.record.history[-1].state.value, decision.stats()))


class Fanout:
    """A promoter whose fan-out threshold is two files, its in-process executions, and queues
    of its own for re-queued and dead-lettered manifest events."""

    def __init__(self, buckets: tuple[Bucket, Bucket], min_files: int = 2, **env: str) -> None:
        self.staging, self.nightly = buckets
        sqs = boto3.client("sqs")
        self.sqs = sqs
        name = uuid.uuid4().hex[:12]
        self.queue_url = sqs.create_queue(QueueName=f"fanout-{name}")["QueueUrl"]
        self.dlq_url = sqs.create_queue(QueueName=f"fanout-dlq-{name}")["QueueUrl"]
        settings = PromoterSettings.from_env(
            {
                **os.environ,
                ENV_FANOUT_STATE_MACHINE_ARN: STATE_MACHINE,
                ENV_FANOUT_MIN_FILES: str(min_files),
                ENV_MANIFEST_QUEUE_URL: self.queue_url,
                ENV_DEAD_LETTER_QUEUE_URL: self.dlq_url,
                **env,
            }
        )
        #: Step events in the order they ran (each attempt), and the retry waits.
        self.steps: list[dict[str, Any]] = []
        self.waits: list[float] = []
        self.faults: list[Fault] = []
        self.gate: Gate | None = None
        self._lock = threading.Lock()
        self.launcher = InProcessLauncher(
            staging=self.staging,
            run_step=self._run_step,
            hash_concurrency=4,
            copy_concurrency=4,
            sleep=self.waits.append,
        )
        self.decisions = Decisions()
        self.promoter = build_service(
            settings=settings,
            staging=self.staging,
            nightly=self.nightly,
            launcher=self.launcher,
            queue=SqsSender(sqs),
            metrics=self.decisions,
            # The local stack's verdict key, as the promoter function signs with it.
            signer=KmsSigner(boto3.client("kms"), settings.verdict_key_arn or ""),
        )

    def _run_step(self, event: dict[str, Any]) -> Any:
        if self.gate is not None:
            self.gate.opened.wait(30)
        with self._lock:
            self.steps.append(dict(event))
        assert self.promoter.fanout is not None

        def real() -> Any:
            assert self.promoter.steps is not None
            return self.promoter.step(event)

        for fault in self.faults:
            handled = fault(event, real)
            if handled is not None:
                return handled
        return real()

    def deliver(self, body: str) -> dict[str, Any]:
        """Hand one SQS message body to the promoter, as the handler does."""
        [event] = manifest_events(body, self.staging.name)
        decision = self.promoter.handle(event)
        record = None if decision is None else decision.record
        assert record is not None
        return record.model_dump(mode="json", by_alias=True)

    def wait(self, run_id: str, digest: str, attempt: int = 1) -> dict[str, Any]:
        """The run's record once execution ``attempt`` has ended."""
        self.launcher.wait(fanout_job_id(run_id, digest, attempt))
        found = self.staging.get(STAGING.record(run_id))
        assert found is not None
        return dict(json.loads(found[0]))

    def received(self, queue_url: str) -> list[str]:
        """The bodies of the messages in a queue, taken off it."""
        messages = self.sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get(
            "Messages", []
        )
        for m in messages:
            self.sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])
        return [m["Body"] for m in messages]


@pytest.fixture
def fanout(stack: LocalWheelGate, buckets: tuple[Bucket, Bucket]) -> Iterator[Fanout]:
    fixture = Fanout(buckets)
    yield fixture
    if fixture.gate is not None:
        fixture.gate.open()


class Promotions(Protocol):
    """What promotes a :class:`Run`: its buckets, the delivery of its manifest's message and the
    wait for its execution (an in-process engine here, moto's Step Functions in
    ``test_state_machine.py``)."""

    staging: Bucket
    nightly: Bucket

    def deliver(self, body: str) -> dict[str, Any]:
        """Hand one SQS message body to the promoter; return the run's record."""
        ...

    def wait(self, run_id: str, digest: str, attempt: int = 1) -> dict[str, Any]:
        """The run's record once execution ``attempt`` has ended."""
        ...


class Run:
    """A run of ``wheels`` staged through the same code as ``wheelgate stage``.

    With ``part_size``, a file larger than it is staged as a multipart upload (S3 then has no
    SHA-256 of its bytes); ``claimed_sha256`` is what the manifest says of some files instead
    of their real SHA-256."""

    def __init__(
        self,
        fanout: Promotions,
        run_id: str,
        index: str,
        wheels: list[Path],
        result: str = "passed",
        *,
        part_size: int | None = None,
        claimed_sha256: Mapping[str, str] | None = None,
    ) -> None:
        self.fanout, self.run_id, self.index, self.wheels = fanout, run_id, index, wheels
        staging = fanout.staging
        if part_size is not None:
            small = TransferLimits(single_request_limit=part_size, upload_part_size=part_size)
            staging = Bucket(staging.client, staging.name, limits=small)
        stage(
            staging=staging,
            nightly=fanout.nightly,
            nightly_base_url="http://nightly/",
            run_id=run_id,
            index=index,
            commit=COMMIT,
            artifacts=inspect_files(self.wheels),
        )
        self.key = STAGING.manifest(run_id)
        manifest = manifest_for(run_id, COMMIT, index, wheels, result=result)
        [listed] = manifest["sets"]
        # What the tests installed is what the manifest lists: both say the claimed bytes.
        for f in [*listed["files"], *listed["tests"][0]["installed"]]:
            f["sha256"] = (claimed_sha256 or {}).get(f["filename"], f["sha256"])
        raw = json.dumps(manifest).encode()
        fanout.staging.put(self.key, raw, content_type="application/json")
        self.digest = hashlib.sha256(raw).hexdigest()

    def body(self) -> str:
        """The SQS message body S3 sends for the manifest's write (its real ETag)."""
        return str(sqs_event(self.key, LOCAL_REPORTER_PRINCIPAL)["Records"][0]["body"])

    def report(self) -> dict[str, Any]:
        return self.fanout.deliver(self.body())

    def done(self, attempt: int = 1) -> dict[str, Any]:
        return self.fanout.wait(self.run_id, self.digest, attempt)

    def job(self, attempt: int = 1) -> str:
        return fanout_job_id(self.run_id, self.digest, attempt)


def make_run(fanout: Promotions, tmp: Path, request: pytest.FixtureRequest, count: int = 3) -> Run:
    name = request.node.name.replace("_", "-")[-50:].strip("-")
    wheels = [build_wheel(tmp, f"fan{n}", "1.0") for n in range(count)]
    return Run(fanout, name, f"f/{name}", wheels)


def nightly_objects(s3: Any, prefix: str) -> dict[str, bytes]:
    """Every nightly object under ``prefix`` (keys relative to it) with its bytes."""
    found = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=NIGHTLY_BUCKET, Prefix=prefix):
        for obj in page.get("Contents", []):
            body = s3.get_object(Bucket=NIGHTLY_BUCKET, Key=obj["Key"])["Body"].read()
            found[obj["Key"][len(prefix) :]] = body
    return found


def without_times(page: bytes) -> Any:
    """A page with its upload times left out (they say when, not what); a verdict as its
    subject (its run, time and signature differ between two runs of the same bytes)."""
    if b'"payloadType"' in page:
        statement = json.loads(base64.b64decode(json.loads(page)["payload"]))
        return statement["subject"]
    if not page.lstrip().startswith(b"{"):
        return re.sub(rb' data-upload-time="[^"]*"', b"", page)
    doc = json.loads(page)
    for f in doc.get("files", []):
        f.pop("upload-time", None)
    return doc


def leases_free(staging: Bucket, index: str) -> bool:
    return IndexLeases(staging).holder(index) is None


def single_path(buckets: tuple[Bucket, Bucket], run: Run, **options: Any) -> Run:
    """``run``'s wheels staged again (with ``options``) by a run of its own into a directory of
    its own, for a promoter that never fans out: the single invocation's path."""
    promotions = Fanout(buckets, min_files=1_000_000)
    return Run(promotions, run.run_id + "-one", run.index + "-one", run.wheels, **options)


def assert_promoted_alike(
    s3: Any, fanned: Run, record: dict[str, Any], single: Run, baseline: dict[str, Any]
) -> None:
    """``record``, ``fanned``'s promotion through an execution, and ``baseline``, ``single``'s in
    one invocation (:func:`single_path`), leave nightly with the same bytes and pages (upload
    times aside) and are records of the same shape; the first has its pending hand-over in its
    history."""
    assert record["state"] == "promoted", record["message"]
    assert [h["state"] for h in record["history"]] == ["pending", "promoted"]
    assert baseline["state"] == "promoted", baseline["message"]
    assert [h["state"] for h in baseline["history"]] == ["promoted"]
    # Each file has its verdict beside it, through either path.
    files = [f for s in record["sets"] for f in s["files"]]
    assert files
    assert all(f["verdict"] == f"{fanned.index}/{f['filename']}.verdict.json" for f in files)
    assert not list(single.fanout.staging.list(STAGING.job_prefix(single.job())))
    fanned_objects = nightly_objects(s3, fanned.index + "/")
    single_objects = nightly_objects(s3, single.index + "/")
    assert sorted(fanned_objects) == sorted(single_objects)
    assert {k: without_times(v) for k, v in fanned_objects.items()} == {
        k: without_times(v) for k, v in single_objects.items()
    }
    for field in ("message", "commit", "invalidations", "override", "actor"):
        assert record[field] == baseline[field], field
    strip = len(fanned.index), len(single.index)
    assert [p[strip[0] :] for p in record["pages"]] == [p[strip[1] :] for p in baseline["pages"]]

    def shape(sets: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The sets with their index directory (also in each verdict's key) left out."""
        return [
            dict(
                s,
                index="",
                files=[dict(f, verdict=f["verdict"].rsplit("/", 1)[1]) for f in s["files"]],
            )
            for s in sets
        ]

    assert shape(record["sets"]) == shape(baseline["sets"])


def test_a_large_set_ends_as_a_single_invocation_would_leave_it(
    fanout: Fanout,
    buckets: tuple[Bucket, Bucket],
    s3: Any,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    # Given the same three wheels staged by two runs into two index directories...
    large = make_run(fanout, tmp_path, request)
    small = single_path(buckets, large)
    puts: list[tuple[str, str]] = []

    def spy(params: dict[str, Any], **_: Any) -> None:
        puts.append((params["Bucket"], params["Key"]))

    fanout.staging.client.meta.events.register("provide-client-params.s3.PutObject", spy)
    try:
        # When one crosses the fan-out threshold and the other does not...
        pending = large.report()
        record = large.done()
    finally:
        fanout.staging.client.meta.events.unregister("provide-client-params.s3.PutObject", spy)
    baseline = small.report()
    # Then the first was handed to an execution, which promoted it, while the second took the
    # single invocation's path (no job written); both leave nightly with the same bytes and
    # the same pages, and records of the same shape.
    assert (pending["state"], pending["reason"]) == ("pending", None)
    assert f"through execution {large.job()}" in pending["message"]
    assert_promoted_alike(s3, large, record, small, baseline)
    # And no page was written before the last item's done marker.
    done = [n for n, (_, key) in enumerate(puts) if "/done/" in key]
    pages = [
        n
        for n, (bucket, key) in enumerate(puts)
        if bucket == NIGHTLY_BUCKET
        and key.endswith(("index.html", "index.json"))
        and key != VERDICT_KEYS_KEY  # the public keys, written before the first verdict
    ]
    assert len(done) == 3
    assert pages
    assert max(done) < min(pages)
    # And no verdict was signed before the last copy was done (the publish step signs them).
    verdicts = [n for n, (_, key) in enumerate(puts) if key.endswith(VERDICT_SUFFIX)]
    assert len(verdicts) == 3
    assert max(done) < min(verdicts) < max(verdicts) < min(pages)
    assert leases_free(fanout.staging, large.index)


def test_every_check_runs_before_the_first_copy(
    fanout: Fanout, s3: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # Given a large set one of whose staged files was changed after its tests ran...
    run = make_run(fanout, tmp_path, request)
    key = STAGING.artifact(run.run_id, run.index, run.wheels[1].name)
    tampered = bytearray(run.wheels[1].read_bytes())
    tampered[len(tampered) // 2] ^= 0xFF
    s3.put_object(
        Bucket=fanout.staging.name,
        Key=key,
        Body=bytes(tampered),
        ChecksumAlgorithm="SHA256",
        Metadata={"wheelgate-commit": COMMIT},
    )
    before = nightly_versions(s3)
    # When it is reported, Then it is rejected by verification: no job, no copy, no execution.
    record = run.report()
    assert (record["state"], record["reason"]) == ("rejected", "checksum-mismatch")
    assert not list(fanout.staging.list(STAGING.job_prefix(run.job())))
    assert fanout.steps == []
    assert nightly_versions(s3) == before
    assert leases_free(fanout.staging, run.index)


def test_item_faults_converge(
    fanout: Fanout, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # Given a transient error on item 0's first copy, a timeout after item 1's copy did its
    # work, and item 2 delivered twice...
    seen: dict[int, int] = {}

    def faults(event: dict[str, Any], real: Callable[[], Any]) -> Any:
        if event["fanout_step"] != "copy":
            return None
        item = event["item"]
        seen[item] = seen.get(item, 0) + 1
        if item == 0 and seen[item] == 1:
            raise TransientError("SlowDown (injected)")
        if item == 1 and seen[item] == 1:
            real()
            raise TimeoutError("Task timed out (injected)")
        if item == 2 and seen[item] == 1:
            real()
            return real()
        return None

    fanout.faults.append(faults)
    run = make_run(fanout, tmp_path, request)
    # When it is promoted through an execution...
    run.report()
    record = run.done()
    # Then each fault was retried after the state machine's first interval, and the run is
    # promoted with every file once.
    assert record["state"] == "promoted", record["message"]
    assert seen == {0: 2, 1: 2, 2: 1}
    assert fanout.waits == [FANOUT_ITEM_RETRY_INTERVAL_SECONDS] * 2
    [promoted] = record["sets"]
    assert sorted(f["filename"] for f in promoted["files"]) == sorted(w.name for w in run.wheels)
    page = json.loads(fanout.nightly.get(f"{run.index}/fan1/index.json")[0])  # type: ignore[index]
    assert [f["filename"] for f in page["files"]] == [run.wheels[1].name]


def test_a_redelivered_manifest_does_not_start_a_second_promotion(
    fanout: Fanout, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # Given a large set whose execution is still running...
    fanout.gate = Gate()
    run = make_run(fanout, tmp_path, request)
    first = run.report()
    # When its manifest's message is delivered again...
    again = run.report()
    # Then no new decision is taken, no second job written, and nothing raised (no DLQ).
    assert again["history"] == first["history"]
    assert fanout.staging.get(STAGING.job_plan(run.job(2))) is None
    # And once the execution goes on, the run is promoted once.
    fanout.gate.open()
    record = run.done()
    assert [h["state"] for h in record["history"]] == ["pending", "promoted"]
    # And the metrics hear of one promotion (the pending hand-over and the redelivery are
    # not decisions), with every file copied and a latency from the manifest's event time.
    promoted = [stats for state, stats in fanout.decisions.heard if state == "promoted"]
    assert len(promoted) == 1
    assert promoted[0].files_copied == len(run.wheels)
    assert promoted[0].bytes_copied == sum(w.stat().st_size for w in run.wheels)
    assert promoted[0].manifest_written_at is not None
    assert promoted[0].latency_seconds is not None
    assert [state for state, _ in fanout.decisions.heard if state != "pending"] == ["promoted"]


def test_a_refused_copy_rejects_the_run_and_leaves_the_pages(
    fanout: Fanout, s3: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # Given a large set handed to an execution, and then (behind the promoter's back) other
    # bytes written to nightly under one of its wheels' core metadata key...
    fanout.gate = Gate()
    run = make_run(fanout, tmp_path, request)
    run.report()
    s3.put_object(
        Bucket=NIGHTLY_BUCKET,
        Key=f"{run.index}/{run.wheels[2].name}.metadata",
        Body=b"Metadata-Version: 2.1\nName: other\n",
        ChecksumAlgorithm="SHA256",
    )
    # When the execution runs...
    fanout.gate.open()
    record = run.done()
    # Then that copy is refused, not retried; the run is REJECTED with the refusal's reason;
    # no page is written; and the leases are given back.
    assert (record["state"], record["reason"]) == ("rejected", "nightly-conflict")
    assert run.wheels[2].name in record["message"]
    item2 = [s for s in fanout.steps if s.get("item") == 2]
    assert len(item2) == 1
    assert [s["fanout_step"] for s in fanout.steps if "item" not in s] == ["conclude"]
    pages = [k for k in nightly_objects(s3, run.index + "/") if k.endswith(tuple(PAGE_NAMES))]
    assert pages == []
    assert leases_free(fanout.staging, run.index)
    assert fanout.received(fanout.queue_url) == []
    # And the metrics hear of one rejection.
    assert [state for state, _ in fanout.decisions.heard if state != "pending"] == ["rejected"]


def failing_copy(attempts: set[str]) -> Fault:
    """Item 0's copy fails (transiently) in the executions of these jobs."""

    def fault(event: dict[str, Any], real: Callable[[], Any]) -> Any:
        if event["fanout_step"] == "copy" and event["item"] == 0 and event["job_id"] in attempts:
            raise TransientError("SlowDown (injected)")
        return None

    return fault


def test_a_failed_execution_is_requeued_and_the_next_one_promotes(
    buckets: tuple[Bucket, Bucket],
    stack: LocalWheelGate,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    # Given a promoter that fans out from one copy, and an execution whose first item keeps
    # failing...
    fanout = Fanout(buckets, min_files=1)
    run = make_run(fanout, tmp_path, request)
    fanout.faults.append(failing_copy({run.job(1)}))
    body = run.body()
    fanout.deliver(body)
    failed = run.done()
    # Then the item was retried with the state machine's numbers, then the execution was
    # concluded: the run is pending with the failure, leases given back, its event re-queued.
    assert fanout.waits == [
        FANOUT_ITEM_RETRY_INTERVAL_SECONDS * FANOUT_ITEM_RETRY_BACKOFF**n
        for n in range(FANOUT_ITEM_RETRY_ATTEMPTS)
    ]
    assert failed["state"] == "pending"
    assert (
        f"execution {run.job()} failed: States.ExceedToleratedFailureThreshold"
        in (failed["message"])
    )
    assert "attempt 2" in failed["message"]
    assert leases_free(fanout.staging, run.index)
    assert fanout.staging.get(STAGING.job_rejection(run.job())) is None
    [requeued] = fanout.received(fanout.queue_url)
    assert requeued == body
    # When the re-queued event is delivered...
    second = fanout.deliver(requeued)
    record = run.done(attempt=2)
    # Then a second execution (after a new verification) copies what is left and promotes.
    # (The failed Map stopped items that had not started: those are copied now.)
    ran = {s["item"] for s in fanout.steps if s["job_id"] == run.job(1) and s.get("item")}
    left = 3 - len(ran)
    assert f"copying {left} of 3 file(s) through execution {run.job(2)}" in second["message"]
    assert record["state"] == "promoted", record["message"]
    assert [h["state"] for h in record["history"]] == ["pending", "pending", "pending", "promoted"]
    actions = {f["filename"]: f["action"] for f in record["sets"][0]["files"]}
    assert actions == {
        w.name: "already-released" if n in ran else "copied" for n, w in enumerate(run.wheels)
    }


class NeverRuns:
    """A launcher whose executions start and never run a step (until they time out)."""

    def start(self, **_: Any) -> str:
        return "stuck"


def test_a_timed_out_execution_is_concluded_from_its_status_change(
    buckets: tuple[Bucket, Bucket],
    stack: LocalWheelGate,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    # Given a large set whose execution started and then timed out (no step ran, so no
    # catch and no Conclude: the leases stay held)...
    fanout = Fanout(buckets, min_files=1)
    run = make_run(fanout, tmp_path, request)
    assert fanout.promoter.fanout is not None
    real = fanout.promoter.fanout.launcher
    fanout.promoter.fanout.launcher = NeverRuns()
    body = run.body()
    fanout.deliver(body)
    assert not leases_free(fanout.staging, run.index)
    # When EventBridge hands its status change to the promoter as the stack's rule shapes it
    # (the job id is the execution's name)...
    fanout.promoter.step(
        {
            FANOUT_STEP_FIELD: "conclude",
            "job_id": run.job(),
            "error": {
                "Error": "TIMED_OUT",
                "Cause": "the execution ended without its conclude step",
            },
        }
    )
    # Then the run is pending with the timeout, the leases are given back and the event is
    # re-queued...
    found = fanout.staging.get(STAGING.record(run.run_id))
    assert found is not None
    record = json.loads(found[0])
    assert record["state"] == "pending"
    assert f"execution {run.job()} failed: TIMED_OUT" in record["message"]
    assert leases_free(fanout.staging, run.index)
    [requeued] = fanout.received(fanout.queue_url)
    assert requeued == body
    # And its delivery starts the next execution, which promotes the run.
    fanout.promoter.fanout.launcher = real
    fanout.deliver(requeued)
    assert run.done(attempt=2)["state"] == "promoted"


def test_after_the_last_failed_execution_the_event_goes_to_the_dead_letter_queue(
    buckets: tuple[Bucket, Bucket],
    stack: LocalWheelGate,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    # Given executions that always fail...
    fanout = Fanout(buckets, min_files=1)
    run = make_run(fanout, tmp_path, request)
    fanout.faults.append(failing_copy({run.job(n) for n in range(1, FANOUT_MAX_EXECUTIONS + 1)}))
    body = run.body()
    # When each re-queued event is delivered again...
    for attempt in range(1, FANOUT_MAX_EXECUTIONS + 1):
        fanout.deliver(body)
        record = run.done(attempt)
        if attempt < FANOUT_MAX_EXECUTIONS:
            assert fanout.received(fanout.queue_url) == [body]
    # Then after the last one the event is in the dead-letter queue, not back in the queue.
    assert fanout.received(fanout.queue_url) == []
    assert fanout.received(fanout.dlq_url) == [body]
    assert record["state"] == "pending"
    assert "dead-letter queue" in record["message"]
    assert leases_free(fanout.staging, run.index)


def test_a_small_set_keeps_the_single_invocation(
    fanout: Fanout, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # Given a set of one file, under the threshold of two...
    run = make_run(fanout, tmp_path, request, count=1)
    # When it is reported, Then it is promoted at once, with no job and no execution.
    record = run.report()
    assert record["state"] == "promoted"
    assert not list(fanout.staging.list(STAGING.job_prefix(run.job())))
    assert fanout.steps == []


def test_publish_refuses_while_an_item_is_not_done(
    fanout: Fanout, s3: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # Given a job whose execution has not copied anything yet...
    fanout.gate = Gate()
    run = make_run(fanout, tmp_path, request)
    run.report()
    assert fanout.promoter.fanout is not None
    # When its publish step is run out of turn, Then it refuses (to be retried) and no page
    # is written.
    with pytest.raises(FanoutIncomplete, match="3 of 3 item"):
        fanout.promoter.step({"fanout_step": "publish", "job_id": run.job()})
    assert nightly_objects(s3, run.index + "/") == {}
    # And the execution, once it runs, still promotes the run.
    fanout.gate.open()
    assert run.done()["state"] == "promoted"


class QueueClock:
    """The clock of moto's SQS (its server runs in this process), moved on by hand: a
    message's visibility timeout passes without the test waiting for it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import moto.sqs.models

        real = moto.sqs.models.unix_time_millis
        self.ahead = 0.0
        monkeypatch.setattr(
            moto.sqs.models, "unix_time_millis", lambda *a: real(*a) + self.ahead * 1000
        )

    def advance(self, seconds: float) -> None:
        self.ahead += seconds


def test_a_run_waiting_on_a_fan_out_job_comes_back_less_often(
    fanout: Fanout, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a job holding its index directory's lease, and another run into that directory
    # whose manifest event waits in a queue that would hold a failed message back for hours...
    fanout.gate = Gate()
    run = make_run(fanout, tmp_path, request)
    run.report()
    other = Run(fanout, run.run_id + "-b", run.index, [build_wheel(tmp_path / "b", "fanb", "1.0")])
    sqs: Any = boto3.client("sqs")
    url = sqs.create_queue(
        QueueName=f"fanout-busy-{uuid.uuid4().hex[:12]}",
        Attributes={"VisibilityTimeout": str(SQS_MAX_VISIBILITY_SECONDS)},
    )["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    sqs.send_message(QueueUrl=url, MessageBody=other.body())
    clock = QueueClock(monkeypatch)

    def receive() -> list[dict[str, Any]]:
        got = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=1, MessageSystemAttributeNames=["All"]
        )
        return list(got.get("Messages", []))

    # When the handler gets the message from the queue...
    [message] = receive()
    response = handler.lambda_handler(sqs_lambda_event([message], arn), Context())  # type: ignore[arg-type]
    # Then it fails as busy, and the record says it will be retried
    assert response == {"batchItemFailures": [{"itemIdentifier": message["MessageId"]}]}
    record = json.loads(fanout.staging.get(STAGING.record(other.run_id))[0])  # type: ignore[index]
    assert "(a fan-out execution); will retry" in record["message"]
    # And the queue holds it back past the minute a promotion's lease takes...
    clock.advance(LEASE_BUSY_RETRY_SECONDS + 1)
    assert receive() == []
    # ...and delivers it again once the fan-out delay has passed (the receives before the
    # dead-letter queue must outlast the job's lease), long before its visibility timeout
    clock.advance(FANOUT_LEASE_BUSY_RETRY_SECONDS - LEASE_BUSY_RETRY_SECONDS)
    [again] = receive()
    assert again["MessageId"] == message["MessageId"]
    assert again["Attributes"]["ApproximateReceiveCount"] == "2"
    # And once the job is done, that redelivery promotes the other run
    fanout.gate.open()
    assert run.done()["state"] == "promoted"
    response = handler.lambda_handler(sqs_lambda_event([again], arn), Context())  # type: ignore[arg-type]
    assert response == {"batchItemFailures": []}
    record = json.loads(fanout.staging.get(STAGING.record(other.run_id))[0])  # type: ignore[index]
    assert record["state"] == "promoted"


def test_a_break_glass_override_of_a_large_run_goes_through_an_execution(
    buckets: tuple[Bucket, Bucket],
    stack: LocalWheelGate,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    # Given a large run rejected for its tests, and the break-glass role's override of it...
    role_id = "AROABREAKGLASS000001"
    fanout = Fanout(buckets, **{ENV_BREAK_GLASS_ID: role_id})
    wheels = [build_wheel(tmp_path, f"ovf{n}", "1.0") for n in range(3)]
    name = request.node.name.replace("_", "-")[-40:].strip("-")
    run = Run(fanout, name, f"f/{name}", wheels, result="failed")
    assert run.report()["reason"] == "tests-failed"
    request_id = new_request_id(run.run_id)
    key = STAGING.manifest(request_id)
    body = {
        "schema": "wheelgate/override/v1",
        "run_id": request_id,
        "target_run_id": run.run_id,
        "reason": "GPU runners down; verified by hand",
    }
    fanout.staging.put(key, json.dumps(body).encode(), content_type="application/json")
    fanout.gate = Gate()
    message = str(sqs_event(key, f"AWS:{role_id}:oncall")["Records"][0]["body"])
    # When the request is delivered, and delivered again while the execution runs...
    first = fanout.deliver(message)
    again = fanout.deliver(message)
    # Then both apply it (the second changes nothing), and the execution promotes the run with
    # the override on its record.
    assert first["message"] == f"override applied: run {run.run_id} pending"
    assert (again["state"], again["message"]) == ("pending", first["message"])
    assert fanout.staging.get(STAGING.job_plan(run.job(2))) is None
    fanout.gate.open()
    record = run.done()
    assert record["state"] == "promoted", record["message"]
    assert record["override"]["by"] == f"AWS:{role_id}:oncall"
    assert "tests overridden by" in record["message"]
    # And each file's verdict says who overrode the tests and why, and names no test.
    envelope = fanout.nightly.get(f"{run.index}/{wheels[0].name}.verdict.json")
    assert envelope is not None
    statement = json.loads(base64.b64decode(json.loads(envelope[0])["payload"]))
    facts = statement["predicate"]["https://wheelgate.dev/verdict/v1"]
    assert (facts["kind"], facts["actor"], facts["tests"]) == (
        "override",
        f"AWS:{role_id}:oncall",
        [],
    )
    assert facts["reason"] == "GPU runners down; verified by hand"


MB = 1024 * 1024
#: S3's smallest part: a file above it is staged as a multipart upload by these tests, so S3
#: has no SHA-256 of its bytes (only a composite checksum), as for a file above 5 GiB.
PART = 5 * MB


def multipart_run(
    fanout: Promotions, tmp: Path, request: pytest.FixtureRequest, *, claim_other_bytes: bool
) -> Run:
    """Three wheels, the second one multipart-staged; with ``claim_other_bytes`` the manifest
    gives it another SHA-256 than its bytes have."""
    name = request.node.name.replace("_", "-")[-50:].strip("-")
    wheels = [
        build_wheel(tmp, f"mp{n}", "1.0", payload_bytes=6 * MB if n == 1 else 0) for n in range(3)
    ]
    claimed = {wheels[1].name: "0" * 64} if claim_other_bytes else None
    return Run(fanout, name, f"f/{name}", wheels, part_size=PART, claimed_sha256=claimed)


def full_reads(staging: Bucket, keys: set[str]) -> tuple[list[str], Callable[[], None]]:
    """Count GetObject requests of whole objects (no Range) for ``keys``; returns the list
    they are appended to and the function that stops counting."""
    reads: list[str] = []

    def spy(params: dict[str, Any], **_: Any) -> None:
        if params["Bucket"] == staging.name and params["Key"] in keys and "Range" not in params:
            reads.append(params["Key"])

    event = "provide-client-params.s3.GetObject"
    staging.client.meta.events.register(event, spy)
    return reads, lambda: staging.client.meta.events.unregister(event, spy)


def test_the_promoters_invocation_reads_no_staged_file_in_full_when_it_fans_out(
    fanout: Fanout, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # Given a large set with a multipart-staged file (S3 has no SHA-256 of its bytes), whose
    # execution is held back...
    fanout.gate = Gate()
    run = multipart_run(fanout, tmp_path, request, claim_other_bytes=False)
    files = {STAGING.artifact(run.run_id, run.index, w.name) for w in run.wheels}
    multipart = STAGING.artifact(run.run_id, run.index, run.wheels[1].name)
    reads, stop = full_reads(fanout.staging, files)
    try:
        # When the promoter's invocation handles its manifest...
        pending = run.report()
        during_invocation = list(reads)
        # ...and then the execution runs.
        fanout.gate.open()
        record = run.done()
    finally:
        stop()
    # Then the invocation verified and handed over without reading any file's bytes in full
    assert (pending["state"], pending["reason"]) == ("pending", None)
    assert during_invocation == []
    # And the job lists that one file's item to be hashed, which the execution read once.
    found = fanout.staging.get(STAGING.job_hash_items(run.job()))
    assert found is not None
    assert json.loads(found[0]) == [{"item": 1}]
    assert reads == [multipart]
    assert record["state"] == "promoted", record["message"]


def test_a_multipart_file_is_hashed_by_its_step_before_any_copy_then_promoted(
    fanout: Fanout, s3: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # Given a large set with a multipart-staged file whose bytes are the manifest's...
    run = multipart_run(fanout, tmp_path, request, claim_other_bytes=False)
    # When it is promoted through an execution...
    run.report()
    record = run.done()
    # Then its hash step ran before the first copy, and the run is promoted with its bytes.
    steps = [(s["fanout_step"], s.get("item")) for s in fanout.steps]
    assert steps[0] == ("hash", 1)
    assert sorted(steps[1:4]) == [("copy", 0), ("copy", 1), ("copy", 2)]
    assert steps[4:] == [("publish", None)]
    assert record["state"] == "promoted", record["message"]
    key = f"{run.index}/{run.wheels[1].name}"
    body = s3.get_object(Bucket=NIGHTLY_BUCKET, Key=key)["Body"].read()
    assert body == run.wheels[1].read_bytes()
    page = json.loads(fanout.nightly.get(f"{run.index}/mp1/index.json")[0])  # type: ignore[index]
    sha = hashlib.sha256(body).hexdigest()
    assert page["files"][0]["hashes"]["sha256"] == sha


def test_a_multipart_file_with_other_bytes_is_refused_by_its_hash_step_before_any_copy(
    fanout: Fanout, s3: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # Given a large set whose manifest gives a multipart-staged file another SHA-256 than its
    # staged bytes have (S3 has none of its own to compare at verification)...
    run = multipart_run(fanout, tmp_path, request, claim_other_bytes=True)
    before = nightly_versions(s3)
    # When it is reported, it is handed to an execution (verification reads no file in full)...
    pending = run.report()
    assert (pending["state"], pending["reason"]) == ("pending", None)
    record = run.done()
    # Then the hash step refuses it (once: a refusal is not retried) and no copy step ran
    assert [(s["fanout_step"], s.get("item")) for s in fanout.steps] == [
        ("hash", 1),
        ("conclude", None),
    ]
    assert fanout.waits == []
    # And the run is REJECTED with the plan's own reason and wording
    real = hashlib.sha256(run.wheels[1].read_bytes()).hexdigest()
    assert (record["state"], record["reason"]) == ("rejected", "checksum-mismatch")
    assert (
        f"{run.wheels[1].name}: manifest sha256 {'0' * 64} but staged object has {real}"
        in (record["message"])
    )
    # And nightly is byte for byte what it was, the leases are back, nothing is re-queued.
    assert nightly_versions(s3) == before
    assert leases_free(fanout.staging, run.index)
    assert fanout.received(fanout.queue_url) == []
    assert [state for state, _ in fanout.decisions.heard if state != "pending"] == ["rejected"]
