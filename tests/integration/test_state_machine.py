"""The synthesized fan-out state machine, executed: moto's Step Functions runs the definition
from the template (tests.infra.synth), its Lambda tasks run the promoter's own handler in this
process (tests/integration/moto_sfn.py), and the production ``StepFunctionsLauncher`` starts
its executions. Each scenario ends as the single invocation's path leaves nightly and the record.

moto's Distributed Map applies no tolerated-failure threshold; the shim of
tests/integration/moto_tolerated_failure.py applies AWS's, and a canary here says when moto no
longer needs it. Local mode keeps its in-process engine (``InProcessLauncher``): the last tests
run it and the definition through the same scenarios and require the same steps, in the same
order, with the same retries.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
import pytest

from tests.infra.synth import REPO_ROOT, synthesize
from tests.integration.moto_sfn import (
    LambdaRoute,
    RetryWaits,
    StateMachineSpec,
    ended_execution,
    executing_state_machines,
    task_states,
)
from tests.integration.moto_tolerated_failure import EXCEEDED, tolerated_failure_applied
from tests.integration.test_fanout import (
    PART,
    Fault,
    Run,
    assert_promoted_alike,
    leases_free,
    make_run,
    multipart_run,
    nightly_objects,
    single_path,
)
from tests.integration.test_promoter import Context, nightly_versions, sqs_batch
from wheelgate.core.env_names import (
    ENV_DEAD_LETTER_QUEUE_URL,
    ENV_FANOUT_MIN_FILES,
    ENV_FANOUT_STATE_MACHINE_ARN,
    ENV_MANIFEST_QUEUE_URL,
)
from wheelgate.core.errors import PromotionRejected, Reason, TransientError
from wheelgate.core.fanout_steps import FANOUT_REJECTED_ERROR, FANOUT_STEP_FIELD
from wheelgate.core.layout import STAGING
from wheelgate.core.limits import FANOUT_ITEM_RETRY_ATTEMPTS, FANOUT_ITEM_RETRY_INTERVAL_SECONDS
from wheelgate.lambda_function import handler
from wheelgate.lambda_function.handler import manifest_events
from wheelgate.local.executions import InProcessLauncher
from wheelgate.local.stack import LocalWheelGate
from wheelgate.promotion.fanout.job import fanout_job_id
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.workflow import StepFunctionsLauncher, execution_arn

# A synthesis of the app (a minute or more): `make test` only.
pytestmark = pytest.mark.slow

#: The index HTML and JSON pages of nightly (what "no page written" looks for).
PAGE_SUFFIXES = ("index.html", "index.json")


@pytest.fixture(scope="module")
def sfn(stack: LocalWheelGate) -> Iterator[Any]:
    """A Step Functions client of the in-process moto server, which executes state machines."""
    port = urlsplit(stack.env["AWS_ENDPOINT_URL"]).port
    assert port is not None
    with executing_state_machines(port):
        yield boto3.client("stepfunctions")


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> StateMachineSpec:
    """The fan-out state machine of the synthesized stack (``cdk.json``'s context)."""
    if not (REPO_ROOT / "build" / "layer" / "python").is_dir():
        pytest.fail("build/layer is missing: run `make layer` before synthesizing the stack")
    return StateMachineSpec.from_template(synthesize(tmp_path_factory.mktemp("cdk.out")).template)


@dataclass(frozen=True)
class Machine:
    """The synthesized state machine created in moto, and the route of its Lambda tasks."""

    arn: str
    spec: StateMachineSpec
    route: LambdaRoute


@pytest.fixture(scope="module")
def machine(sfn: Any, spec: StateMachineSpec) -> Iterator[Machine]:
    route = LambdaRoute(spec.function_arn)
    with route.installed():
        yield Machine(arn=spec.create(sfn), spec=spec, route=route)


@pytest.fixture
def waits() -> Iterator[RetryWaits]:
    with RetryWaits().recorded() as recorded:
        yield recorded


@pytest.fixture
def shim() -> Iterator[None]:
    with tolerated_failure_applied():
        yield


@dataclass(frozen=True)
class Invocation:
    """One invocation of the promoter function by the state machine, and how it ended."""

    step: str
    job_id: str
    item: int | None
    #: The Lambda ``errorType`` it failed with (``None``: it succeeded).
    error: str | None
    #: A conclude step's: the error the Catch passed it (``Error``).
    caught: str | None = None


class ThroughStepFunctions:
    """The promoter Lambda's handler fanning out through the synthesized state machine in moto:
    what a ``test_fanout.Run`` is promoted by, the state machine's invocations of the function
    (``steps``) and faults to inject into them (as ``test_fanout.Fanout.faults``)."""

    def __init__(self, buckets: tuple[Bucket, Bucket], machine: Machine, sfn: Any) -> None:
        self.staging, self.nightly = buckets
        self.machine, self.sfn = machine, sfn
        self.steps: list[Invocation] = []
        self.faults: list[Fault] = []
        self.executions: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def invoke(self, event: dict[str, Any], context: Any) -> Any:
        """The function as the state machine's tasks invoke it: the real handler, unless a
        fault handles the event first."""

        def real() -> Any:
            return handler.lambda_handler(event, context)

        error = None
        try:
            for fault in self.faults:
                handled = fault(event, real)
                if handled is not None:
                    return handled
            return real()
        except Exception as exc:
            error = type(exc).__name__
            raise
        finally:
            with self._lock:
                caught = event.get("error", {}).get("Error")
                step = Invocation(
                    event[FANOUT_STEP_FIELD], event["job_id"], event.get("item"), error, caught
                )
                self.steps.append(step)

    def deliver(self, body: str) -> dict[str, Any]:
        """Hand one SQS message body to the handler, as Lambda's event source does; return the
        run's record."""
        response = handler.lambda_handler(sqs_batch(body), Context())  # type: ignore[arg-type]
        assert response == {"batchItemFailures": []}
        [event] = manifest_events(body, self.staging.name)
        return self.record(STAGING.run_id_from_manifest_key(event.key))

    def wait(self, run_id: str, digest: str, attempt: int = 1) -> dict[str, Any]:
        """The run's record once execution ``attempt`` has ended (kept in ``executions``)."""
        job_id = fanout_job_id(run_id, digest, attempt)
        arn = execution_arn(self.machine.arn, job_id)
        self.executions[job_id] = ended_execution(self.sfn, arn)
        return self.record(run_id)

    def record(self, run_id: str) -> dict[str, Any]:
        found = self.staging.get(STAGING.record(run_id))
        assert found is not None
        return dict(json.loads(found[0]))

    def of(self, run: Run) -> list[tuple[str, int | None, str | None]]:
        """(step, item, error) of each invocation for ``run``'s first execution, in order."""
        return [(s.step, s.item, s.error) for s in self.steps if s.job_id == run.job()]

    def entered(self, run: Run) -> list[str]:
        """The states ``run``'s first execution entered, in order (its history)."""
        events = self.sfn.get_execution_history(
            executionArn=execution_arn(self.machine.arn, run.job()), maxResults=1000
        )["events"]
        return [
            e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e
        ]


@pytest.fixture
def through(
    stack: LocalWheelGate,
    buckets: tuple[Bucket, Bucket],
    machine: Machine,
    sfn: Any,
    shim: None,
    waits: RetryWaits,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[ThroughStepFunctions]:
    """The handler configured as the stack configures it (state machine ARN, queues), fanning
    out from two files; the state machine's tasks routed to it."""
    sqs = boto3.client("sqs")
    name = uuid.uuid4().hex[:12]
    monkeypatch.setenv(ENV_FANOUT_STATE_MACHINE_ARN, machine.arn)
    monkeypatch.setenv(ENV_FANOUT_MIN_FILES, "2")
    monkeypatch.setenv(
        ENV_MANIFEST_QUEUE_URL, sqs.create_queue(QueueName=f"sfn-{name}")["QueueUrl"]
    )
    monkeypatch.setenv(
        ENV_DEAD_LETTER_QUEUE_URL, sqs.create_queue(QueueName=f"sfn-dlq-{name}")["QueueUrl"]
    )
    handler.promoter.cache_clear()
    harness = ThroughStepFunctions(buckets, machine, sfn)
    service = handler.promoter()
    # The production launcher, not local mode's in-process engine.
    assert service.fanout is not None
    assert isinstance(service.fanout.launcher, StepFunctionsLauncher)
    machine.route.handler = harness.invoke
    yield harness
    machine.route.handler = None
    handler.promoter.cache_clear()


def assert_rejected_alike(
    fanned: Run, record: dict[str, Any], single: Run, baseline: dict[str, Any]
) -> None:
    """``record``, ``fanned``'s rejection through an execution, is ``baseline``'s, ``single``'s
    in one invocation (its run id and directory aside), with the pending hand-over before it."""
    assert [h["state"] for h in record["history"]] == ["pending", "rejected"]
    assert [h["state"] for h in baseline["history"]] == ["rejected"]

    def named(record: dict[str, Any], run: Run) -> tuple[str, str]:
        message = record["message"].replace(run.index, "<index>").replace(run.run_id, "<run>")
        return record["reason"], message

    assert named(record, fanned) == named(baseline, single)


# --- the scenarios ------------------------------------------------------------------------


def test_a_large_run_is_promoted_by_the_state_machine_as_by_one_invocation(
    through: ThroughStepFunctions,
    buckets: tuple[Bucket, Bucket],
    s3: Any,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    # Given three wheels staged by a run, and again by a run promoted in one invocation...
    run = make_run(through, tmp_path, request)
    single = single_path(buckets, run)
    # When the handler receives the manifest's event...
    pending = run.report()
    assert (pending["state"], pending["reason"]) == ("pending", None)
    assert f"through execution {run.job()}" in pending["message"]
    record = run.done()
    # Then the execution the production launcher started skipped the hash map, copied each
    # file once, published and succeeded...
    assert through.executions[run.job()]["status"] == "SUCCEEDED"
    assert through.entered(run) == ["AnyToHash", "CopyFiles", "Publish", "Promoted"]
    steps = through.of(run)
    assert sorted(steps[:3]) == [("copy", 0, None), ("copy", 1, None), ("copy", 2, None)]
    assert steps[3:] == [("publish", None, None)]
    # And nightly and the record are the single invocation's.
    assert_promoted_alike(s3, run, record, single, single.report())
    assert leases_free(through.staging, run.index)


def test_a_multipart_staged_file_is_hashed_then_copied_then_published(
    through: ThroughStepFunctions,
    buckets: tuple[Bucket, Bucket],
    s3: Any,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    # Given a large run whose second wheel was staged as a multipart upload (S3 has no SHA-256
    # of its bytes), and the same wheels staged the same way for the single invocation...
    run = multipart_run(through, tmp_path, request, claim_other_bytes=False)
    single = single_path(buckets, run, part_size=PART)
    # When it is promoted through the state machine...
    run.report()
    record = run.done()
    # Then the hash map read that file before the copy map started, then publish...
    assert through.entered(run) == ["AnyToHash", "HashFiles", "CopyFiles", "Publish", "Promoted"]
    steps = through.of(run)
    assert steps[0] == ("hash", 1, None)
    assert sorted(steps[1:4]) == [("copy", 0, None), ("copy", 1, None), ("copy", 2, None)]
    assert steps[4:] == [("publish", None, None)]
    # And nightly and the record are the single invocation's.
    assert_promoted_alike(s3, run, record, single, single.report())


def test_a_tampered_multipart_file_starts_no_copy_and_leaves_nightly_byte_identical(
    through: ThroughStepFunctions,
    buckets: tuple[Bucket, Bucket],
    s3: Any,
    waits: RetryWaits,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    # Given a large run whose manifest gives its multipart-staged wheel another SHA-256 than
    # its bytes have (verification cannot compare it: S3 keeps only a composite checksum)...
    run = multipart_run(through, tmp_path, request, claim_other_bytes=True)
    claimed = {run.wheels[1].name: "0" * 64}
    single = single_path(buckets, run, part_size=PART, claimed_sha256=claimed)
    before = nightly_versions(s3)
    # When it is handed to the state machine...
    pending = run.report()
    assert (pending["state"], pending["reason"]) == ("pending", None)
    record = run.done()
    # Then its hash step refused it, once (a refusal is never retried); the failed item failed
    # the hash map (AWS's tolerated failures: none), whose catch concluded; no copy started.
    assert through.of(run) == [("hash", 1, FANOUT_REJECTED_ERROR), ("conclude", None, None)]
    assert waits.seconds == []
    assert [s.caught for s in through.steps if s.job_id == run.job()] == [None, EXCEEDED.to_name()]
    assert through.entered(run) == ["AnyToHash", "HashFiles", "Conclude", "Failed"]
    assert through.executions[run.job()]["status"] == "FAILED"
    # And the run is rejected as the single invocation rejects it, with nightly byte-identical
    # (every object version), the leases back and nothing re-queued.
    assert_rejected_alike(run, record, single, single.report())
    assert record["reason"] == "checksum-mismatch"
    assert nightly_versions(s3) == before
    assert leases_free(through.staging, run.index)


def test_a_transient_copy_failure_is_absorbed_by_the_retry(
    through: ThroughStepFunctions,
    buckets: tuple[Bucket, Bucket],
    s3: Any,
    waits: RetryWaits,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    # Given a large run whose first copy of item 0 fails before it starts (S3 SlowDown) and
    # whose first copy of item 2 times out after doing its work...
    seen: dict[int, int] = {}

    def faults(event: dict[str, Any], real: Callable[[], Any]) -> Any:
        if event[FANOUT_STEP_FIELD] != "copy":
            return None
        item = event["item"]
        seen[item] = seen.get(item, 0) + 1
        if seen[item] > 1:
            return None
        if item == 0:
            raise TransientError("SlowDown (injected)")
        if item == 2:
            real()
            raise TimeoutError("Task timed out (injected)")
        return None

    through.faults.append(faults)
    run = make_run(through, tmp_path, request)
    single = single_path(buckets, run)
    # When it is promoted through the state machine...
    run.report()
    record = run.done()
    # Then each fault was retried once, after the definition's first interval...
    copies = Counter(s for s in through.of(run) if s[0] == "copy")
    assert copies == Counter(
        [
            ("copy", 0, "TransientError"),
            ("copy", 0, None),
            ("copy", 1, None),
            ("copy", 2, "TimeoutError"),
            ("copy", 2, None),
        ]
    )
    assert waits.seconds == [FANOUT_ITEM_RETRY_INTERVAL_SECONDS] * 2
    assert through.executions[run.job()]["status"] == "SUCCEEDED"
    # And the run ends as the single invocation leaves it: every file once.
    assert_promoted_alike(s3, run, record, single, single.report())


def test_publish_waits_for_every_done_marker(
    through: ThroughStepFunctions,
    buckets: tuple[Bucket, Bucket],
    s3: Any,
    waits: RetryWaits,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    # Given a large run whose item 2's done marker is not there when publish first runs...
    pages_meanwhile: list[list[str]] = []

    def marker_late(event: dict[str, Any], real: Callable[[], Any]) -> Any:
        if event[FANOUT_STEP_FIELD] != "publish" or pages_meanwhile:
            return None
        marker = STAGING.job_done(event["job_id"], 2)
        found = through.staging.get(marker)
        assert found is not None
        through.staging.client.delete_object(Bucket=through.staging.name, Key=marker)
        try:
            return real()
        finally:
            pages_meanwhile.append(
                [k for k in nightly_objects(s3, run.index + "/") if k.endswith(PAGE_SUFFIXES)]
            )
            through.staging.put(marker, found[0], content_type="application/json")

    through.faults.append(marker_late)
    run = make_run(through, tmp_path, request)
    single = single_path(buckets, run)
    # When it is promoted through the state machine...
    run.report()
    record = run.done()
    # Then that publish refused (retryable) without writing a page, and the definition's retry
    # published once the marker was there.
    assert [s for s in through.of(run) if s[0] == "publish"] == [
        ("publish", None, "FanoutIncomplete"),
        ("publish", None, None),
    ]
    assert pages_meanwhile == [[]]
    assert waits.seconds == [FANOUT_ITEM_RETRY_INTERVAL_SECONDS]
    assert_promoted_alike(s3, run, record, single, single.report())


# --- moto's map-failure gap, and the shim ---------------------------------------------------


def item_map(**tolerance: float) -> dict[str, Any]:
    """A Distributed Map over ``$.items`` whose item fails (``ItemFailed``) when its ``fail``
    is true, with the ``ToleratedFailure...`` fields ``tolerance`` gives."""
    processor = {
        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
        "StartAt": "Check",
        "States": {
            "Check": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.fail", "BooleanEquals": True, "Next": "Fails"}],
                "Default": "Passes",
            },
            "Fails": {"Type": "Fail", "Error": "ItemFailed", "Cause": "this item fails"},
            "Passes": {"Type": "Succeed"},
        },
    }
    items = {"Type": "Map", "ItemsPath": "$.items", "ItemProcessor": processor, "End": True}
    return {"StartAt": "Items", "States": {"Items": {**items, **tolerance}}}


def run_item_map(sfn: Any, definition: dict[str, Any], failing: int, total: int) -> dict[str, Any]:
    """Execute ``definition`` over ``total`` items of which the first ``failing`` fail."""
    name = f"items-{uuid.uuid4().hex[:12]}"
    arn = sfn.create_state_machine(
        name=name,
        definition=json.dumps(definition),
        roleArn="arn:aws:iam::123456789012:role/items",
    )["stateMachineArn"]
    items = [{"fail": n < failing} for n in range(total)]
    started = sfn.start_execution(stateMachineArn=arn, input=json.dumps({"items": items}))
    return ended_execution(sfn, started["executionArn"])


def test_moto_still_ignores_a_failed_distributed_map_item(sfn: Any) -> None:
    # Given moto as it is, without the shim: a Distributed Map one of whose three items fails,
    # with no tolerated failures (on AWS the map, and so the execution, fails)...
    execution = run_item_map(sfn, item_map(), failing=1, total=3)
    # Then moto lets the map succeed. The canary: when this fails, moto applies the threshold.
    assert execution["status"] == "SUCCEEDED", (
        "moto now fails a Distributed Map whose item failed: it fixed its tolerated-failure gap; "
        "remove the shim (tests/integration/moto_tolerated_failure.py) and this canary"
    )


@pytest.mark.parametrize(
    ("tolerance", "failing", "status"),
    [
        ({}, 0, "SUCCEEDED"),
        ({}, 1, "FAILED"),
        ({"ToleratedFailureCount": 1}, 1, "SUCCEEDED"),
        ({"ToleratedFailureCount": 1}, 2, "FAILED"),
        # (moto's ASL grammar reads a percentage only with a decimal point; AWS takes 50 too.)
        ({"ToleratedFailurePercentage": 50.0}, 1, "SUCCEEDED"),
        ({"ToleratedFailurePercentage": 50.0}, 2, "FAILED"),
        # Both given: exceeding either fails the map.
        ({"ToleratedFailureCount": 0, "ToleratedFailurePercentage": 50.0}, 1, "FAILED"),
        ({"ToleratedFailureCount": 5, "ToleratedFailurePercentage": 50.0}, 2, "FAILED"),
    ],
)
def test_the_shim_applies_the_tolerated_failure_threshold_as_aws_documents_it(
    sfn: Any, shim: None, tolerance: dict[str, float], failing: int, status: str
) -> None:
    # Given a Distributed Map with these thresholds over three items, `failing` of which fail,
    # When it runs with the shim, Then it fails exactly when a threshold is exceeded.
    execution = run_item_map(sfn, item_map(**tolerance), failing=failing, total=3)
    assert execution["status"] == status
    if status == "FAILED":
        assert execution["error"] == EXCEEDED.to_name()


# --- local mode's engine and the definition agree -------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """The items of a job and the failures of its steps: (step, item) -> (the error class's
    name, how many attempts fail; ``None``: every attempt)."""

    hash_items: tuple[int, ...] = ()
    fails: tuple[tuple[tuple[str, int | None], tuple[str, int | None]], ...] = ()


ITEMS = (0, 1, 2)
ERRORS: dict[str, Callable[[], Exception]] = {
    "TransientError": lambda: TransientError("injected"),
    "PromotionRejected": lambda: PromotionRejected(Reason.CHECKSUM_MISMATCH, "injected"),
}
SCENARIOS = {
    "nothing-to-hash": Scenario(),
    "hash-then-copy": Scenario(hash_items=(1,)),
    "hash-refused": Scenario(hash_items=(1,), fails=((("hash", 1), ("PromotionRejected", 1)),)),
    "copy-keeps-failing": Scenario(fails=((("copy", 0), ("TransientError", None)),)),
    "publish-fails-once": Scenario(fails=((("publish", None), ("TransientError", 1)),)),
    "publish-refused": Scenario(fails=((("publish", None), ("PromotionRejected", 1)),)),
    "conclude-fails-once": Scenario(
        fails=(
            (("copy", 2), ("PromotionRejected", 1)),
            (("conclude", None), ("TransientError", 1)),
        )
    ),
}


class Script:
    """A fan-out function that runs no step, only records each one (step, item, the error it
    raised, the error a conclude step was given) and fails as its scenario says. A failing item
    first waits until every item of its map has started, so both engines see the same items."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.fails = dict(scenario.fails)
        self.calls: list[tuple[str, int | None, str | None, str | None]] = []
        self._started: dict[str, set[int]] = {}
        self._changed = threading.Condition()

    def run(self, event: dict[str, Any]) -> dict[str, Any]:
        step, item = event[FANOUT_STEP_FIELD], event.get("item")
        caught = event["error"]["Error"] if step == "conclude" else None
        with self._changed:
            attempt = sum(1 for c in self.calls if c[:2] == (step, item))
            if item is not None:
                self._started.setdefault(step, set()).add(item)
                self._changed.notify_all()
            error, times = self.fails.get((step, item), (None, 0))
            failing = error is not None and (times is None or attempt < times)
            self.calls.append((step, item, error if failing else None, caught))
            if failing and item is not None:
                everyone = set(self.scenario.hash_items if step == "hash" else ITEMS)
                self._changed.wait_for(lambda: self._started[step] >= everyone, timeout=30)
        if failing:
            assert error is not None
            raise ERRORS[error]()
        return {"step": step}

    def phases(self) -> list[tuple[str, list[tuple[int | None, str | None, str | None]]]]:
        """The calls grouped by consecutive step (a map's items, in any order, then the next
        step), each group sorted."""
        grouped: list[tuple[str, list[tuple[int | None, str | None, str | None]]]] = []
        for step, item, error, caught in self.calls:
            if not grouped or grouped[-1][0] != step:
                grouped.append((step, []))
            grouped[-1][1].append((item, error, caught))
        return [(step, sorted(calls, key=repr)) for step, calls in grouped]


def start_job(staging: Bucket, scenario: Scenario) -> dict[str, Any]:
    """The items of a new job written where the promoter writes them, and the launch arguments
    of its execution (one job for both engines)."""
    job_id = f"agree-{uuid.uuid4().hex[:16]}"
    items, hash_items = STAGING.job_items(job_id), STAGING.job_hash_items(job_id)
    for key, numbers in ((items, ITEMS), (hash_items, scenario.hash_items)):
        body = json.dumps([{"item": n} for n in numbers]).encode()
        staging.put(key, body, content_type="application/json")
    return {
        "job_id": job_id,
        "bucket": staging.name,
        "items_key": items,
        "hash_items_key": hash_items,
        "hash_items": len(scenario.hash_items),
    }


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_local_modes_engine_runs_the_definitions_steps_in_its_order_with_its_retries(
    machine: Machine,
    sfn: Any,
    buckets: tuple[Bucket, Bucket],
    shim: None,
    waits: RetryWaits,
    name: str,
) -> None:
    # Given one job and one scenario of failing steps...
    scenario = SCENARIOS[name]
    staging, _ = buckets
    launch = start_job(staging, scenario)
    # When the synthesized definition runs it in moto (started by the production launcher)...
    on_aws = Script(scenario)
    machine.route.handler = lambda event, _: on_aws.run(event)
    try:
        arn = StepFunctionsLauncher(sfn, machine.arn).start(**launch)
        ended_execution(sfn, arn)
    finally:
        machine.route.handler = None
    # ...and local mode's engine runs it with its own numbers...
    local = Script(scenario)
    engine_waits: list[float] = []
    engine = InProcessLauncher(staging=staging, run_step=local.run, sleep=engine_waits.append)
    engine.start(**launch)
    engine.wait(launch["job_id"])
    # Then both ran the same steps, in the same order, with the same retries and waits, and
    # concluded with the same error.
    assert local.phases() == on_aws.phases()
    assert sorted(engine_waits) == sorted(waits.seconds)
    if name == "copy-keeps-failing":
        # (Not vacuous: every retry of the definition ran.)
        assert len(waits.seconds) == FANOUT_ITEM_RETRY_ATTEMPTS


def test_local_modes_engine_has_the_definitions_steps_and_map_concurrency(
    spec: StateMachineSpec, buckets: tuple[Bucket, Bucket]
) -> None:
    # Given the steps the definition's tasks invoke, and the steps local mode's engine runs for
    # a job with a file to hash whose publish is refused (every step it has)...
    definition = spec.definition
    steps = {s["Parameters"]["Payload"][FANOUT_STEP_FIELD] for s in task_states(definition)}
    staging, _ = buckets
    scenario = Scenario(hash_items=(1,), fails=((("publish", None), ("PromotionRejected", 1)),))
    launch = start_job(staging, scenario)
    local = Script(scenario)
    engine = InProcessLauncher(staging=staging, run_step=local.run)
    engine.start(**launch)
    engine.wait(launch["job_id"])
    # Then they are the same four, and the engine runs each map at most as many items at once
    # as the definition's MaxConcurrency for it.
    assert steps == {step for step, _ in local.phases()} == {"hash", "copy", "publish", "conclude"}
    maps = {
        s["ItemProcessor"]["States"][s["ItemProcessor"]["StartAt"]]["Parameters"]["Payload"][
            FANOUT_STEP_FIELD
        ]: s["MaxConcurrency"]
        for s in definition["States"].values()
        if s["Type"] == "Map"
    }
    assert maps == engine.concurrency
