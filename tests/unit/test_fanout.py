"""Fan-out promotion's pure parts: the threshold, job and execution names, the settings, the
Step Functions adapter (botocore's Stubber), local mode's in-process engine (its order and
retries) and its handler, and the handler's dispatch of step events."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Sequence
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from tests.unit.samples import PROMOTER_ENV
from wheelgate.core.env_names import (
    ENV_DEAD_LETTER_QUEUE_URL,
    ENV_FANOUT_MIN_BYTES,
    ENV_FANOUT_MIN_FILES,
    ENV_FANOUT_STATE_MACHINE_ARN,
    ENV_MANIFEST_QUEUE_URL,
)
from wheelgate.core.errors import PromotionRejected, Reason, TransientError
from wheelgate.core.limits import (
    FANOUT_ITEM_RETRY_ATTEMPTS,
    FANOUT_ITEM_RETRY_BACKOFF,
    FANOUT_ITEM_RETRY_INTERVAL_SECONDS,
)
from wheelgate.core.manifest import ManifestFile
from wheelgate.core.planning import FileStep, SetPlan
from wheelgate.core.setting_values import SettingsError
from wheelgate.core.settings import (
    DEFAULT_FANOUT_MIN_BYTES,
    DEFAULT_FANOUT_MIN_FILES,
    PromoterSettings,
)
from wheelgate.local.executions import (
    MAP_FAILED_ERROR,
    InProcessLauncher,
    in_process_handler,
    in_process_parts,
)
from wheelgate.promotion.fanout.job import StepError, fanout_job_id, fanout_wanted
from wheelgate.storage.workflow import StepFunctionsLauncher, execution_arn

BASE_ENV = PROMOTER_ENV
MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:wheelgate-fanout"
DIGEST = "a" * 64


def plan(*sizes: int, copy: bool = True) -> SetPlan:
    steps = tuple(
        FileStep(
            index="v2/x",
            file=ManifestFile(filename=f"p{n}-1.0-py3-none-any.whl", sha256="b" * 64, size=size),
            source_key=f"runs/r/v2/x/p{n}-1.0-py3-none-any.whl",
            source_etag='"e"',
            target_key=f"v2/x/p{n}-1.0-py3-none-any.whl",
            copy=copy,
        )
        for n, size in enumerate(sizes)
    )
    return SetPlan(index="v2/x", steps=steps)


def test_either_threshold_sends_a_set_to_an_execution() -> None:
    assert fanout_wanted([plan(1, 1)], min_files=2, min_bytes=100)
    assert fanout_wanted([plan(60), plan(40)], min_files=10, min_bytes=100)
    assert not fanout_wanted([plan(1)], min_files=2, min_bytes=100)
    assert not fanout_wanted([plan(60), plan(39)], min_files=3, min_bytes=100)
    # Files nightly holds already are not copies: they count for neither threshold.
    assert not fanout_wanted([plan(500, 500, copy=False)], min_files=1, min_bytes=1)


@pytest.mark.parametrize(
    "run_id",
    ["nightly-123", "a.b", "a-b", "x" * 128, "0" + "." * 0 + "_leading-underscore-later_"],
)
def test_job_ids_are_valid_execution_names(run_id: str) -> None:
    job_id = fanout_job_id(run_id, DIGEST, 3)
    assert len(job_id) <= 80
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", job_id), job_id
    assert job_id == fanout_job_id(run_id, DIGEST, 3)
    assert job_id.endswith("-3")


def test_job_ids_differ_by_run_manifest_and_attempt() -> None:
    ids = {
        fanout_job_id("a.b", DIGEST, 1),
        fanout_job_id("a-b", DIGEST, 1),  # same once sanitized: told apart by the hash
        fanout_job_id("a.b", "c" * 64, 1),
        fanout_job_id("a.b", DIGEST, 2),
        fanout_job_id("x" * 128, DIGEST, 1),
        fanout_job_id("x" * 127 + "y", DIGEST, 1),  # same once truncated
    }
    assert len(ids) == 6


def test_fanout_settings_from_the_environment() -> None:
    default = PromoterSettings.from_env(BASE_ENV)
    assert default.fanout_state_machine_arn is None
    assert (default.fanout_min_files, default.fanout_min_bytes) == (
        DEFAULT_FANOUT_MIN_FILES,
        DEFAULT_FANOUT_MIN_BYTES,
    )
    settings = PromoterSettings.from_env(
        {
            **BASE_ENV,
            ENV_FANOUT_STATE_MACHINE_ARN: MACHINE,
            ENV_FANOUT_MIN_FILES: "0",
            ENV_FANOUT_MIN_BYTES: " 1024 ",
            ENV_MANIFEST_QUEUE_URL: "https://queue/q",
            ENV_DEAD_LETTER_QUEUE_URL: "https://queue/dlq",
        }
    )
    assert settings.fanout_state_machine_arn == MACHINE
    assert (settings.fanout_min_files, settings.fanout_min_bytes) == (0, 1024)
    assert (settings.manifest_queue_url, settings.dead_letter_queue_url) == (
        "https://queue/q",
        "https://queue/dlq",
    )


@pytest.mark.parametrize("raw", ["-1", "1e9", "ten", "1.5", "²"])
@pytest.mark.parametrize("name", [ENV_FANOUT_MIN_FILES, ENV_FANOUT_MIN_BYTES])
def test_a_threshold_must_be_a_non_negative_integer(name: str, raw: str) -> None:
    with pytest.raises(SettingsError, match=f"{name} must be a non-negative integer"):
        PromoterSettings.from_env({**BASE_ENV, name: raw})


def test_execution_arn_of_a_state_machine() -> None:
    assert execution_arn(MACHINE, "job-1") == (
        "arn:aws:states:us-east-1:123456789012:execution:wheelgate-fanout:job-1"
    )
    with pytest.raises(ValueError, match="not a Step Functions state machine ARN"):
        execution_arn("arn:aws:sqs:us-east-1:123456789012:queue", "job-1")


def stepfunctions() -> Any:
    return boto3.client(
        "stepfunctions",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )


def test_the_launcher_starts_the_execution_with_the_contract_input() -> None:
    client = stepfunctions()
    expected = {
        "stateMachineArn": MACHINE,
        "name": "job-1",
        "input": json.dumps(
            {
                "job_id": "job-1",
                "bucket": "staging",
                "items_key": "k",
                "hash_items_key": "h",
                "hash_items": 1,
            }
        ),
    }
    arn = execution_arn(MACHINE, "job-1")
    with Stubber(client) as stub:
        stub.add_response(
            "start_execution", {"executionArn": arn, "startDate": "2026-11-30"}, expected
        )
        assert StepFunctionsLauncher(client, MACHINE).start(
            job_id="job-1", bucket="staging", items_key="k", hash_items_key="h", hash_items=1
        ) == (arn)
        stub.assert_no_pending_responses()


def test_an_execution_of_the_same_name_counts_as_started() -> None:
    client = stepfunctions()
    launcher = StepFunctionsLauncher(client, MACHINE)
    with Stubber(client) as stub:
        stub.add_client_error("start_execution", "ExecutionAlreadyExists")
        stub.add_client_error("start_execution", "ThrottlingException")
        started = launcher.start(
            job_id="j", bucket="b", items_key="k", hash_items_key="h", hash_items=1
        )
        assert started == execution_arn(MACHINE, "j")
        with pytest.raises(
            TransientError, match=r"StartExecution execution j of .*: ThrottlingException"
        ):
            launcher.start(job_id="j", bucket="b", items_key="k", hash_items_key="h", hash_items=1)


class Items:
    """The staging bucket as the in-process engine reads it: the items and hash items arrays."""

    name = "staging"

    def __init__(self, count: int, hashed: Sequence[int]) -> None:
        self.bodies = {
            "items.json": json.dumps([{"item": n} for n in range(count)]).encode(),
            "hash_items.json": json.dumps([{"item": n} for n in hashed]).encode(),
        }

    def get(self, key: str) -> tuple[bytes, str]:
        return self.bodies[key], '"e"'


def start(launcher: InProcessLauncher, hash_items: int = 1) -> None:
    launcher.start(
        job_id="j",
        bucket="staging",
        items_key="items.json",
        hash_items_key="hash_items.json",
        hash_items=hash_items,
    )


def engine(
    run_step: Any, count: int, hashed: Sequence[int] = ()
) -> tuple[InProcessLauncher, list[float]]:
    waits: list[float] = []
    launcher = InProcessLauncher(
        staging=Items(count, hashed),  # type: ignore[arg-type]
        run_step=run_step,
        hash_concurrency=2,
        copy_concurrency=2,
        sleep=waits.append,
    )
    return launcher, waits


def test_the_engine_copies_every_item_then_publishes() -> None:
    steps: list[dict[str, Any]] = []
    launcher, waits = engine(steps.append, 5)
    start(launcher)
    launcher.wait("j")
    copies = [s for s in steps if s["fanout_step"] == "copy"]
    assert sorted(s["item"] for s in copies) == [0, 1, 2, 3, 4]
    assert steps[-1] == {"fanout_step": "publish", "job_id": "j"}
    assert len(steps) == 6
    assert waits == []


def test_the_engine_hashes_every_hash_item_before_the_first_copy() -> None:
    # Given a job of 4 items, 2 of which must be hashed
    steps: list[dict[str, Any]] = []
    launcher, _ = engine(steps.append, 4, hashed=[1, 3])
    # When its execution runs
    start(launcher)
    launcher.wait("j")
    # Then both hash steps ran, and ended, before any copy step started
    names = [s["fanout_step"] for s in steps]
    assert names == ["hash", "hash", "copy", "copy", "copy", "copy", "publish"]
    assert sorted(s["item"] for s in steps[:2]) == [1, 3]


def test_a_job_with_nothing_to_hash_skips_the_hash_map() -> None:
    # Given a job whose execution input counts no hash item (whatever its hash items file
    # holds: the count is what the state machine's choice reads)
    steps: list[dict[str, Any]] = []
    launcher, _ = engine(steps.append, 2, hashed=[0])
    # When its execution runs
    start(launcher, hash_items=0)
    launcher.wait("j")
    # Then no hash map runs: straight to the copies
    assert [s["fanout_step"] for s in steps] == ["copy", "copy", "publish"]


def test_a_refused_hash_concludes_without_any_copy() -> None:
    # Given a job whose item 0's bytes are not the manifest's
    steps: list[dict[str, Any]] = []

    def run_step(event: dict[str, Any]) -> None:
        steps.append(event)
        if event["fanout_step"] == "hash":
            raise PromotionRejected(Reason.CHECKSUM_MISMATCH, "other bytes")

    launcher, waits = engine(run_step, 3, hashed=[0])
    # When its execution runs
    start(launcher)
    launcher.wait("j")
    # Then the hash map fails at once (a refusal is not retried) and no copy starts
    assert [s["fanout_step"] for s in steps] == ["hash", "conclude"]
    assert steps[-1]["error"]["Error"] == MAP_FAILED_ERROR
    assert json.loads(steps[-1]["error"]["Cause"])["Error"] == "PromotionRejected"
    assert waits == []


def test_the_engine_retries_with_the_state_machine_numbers_then_concludes() -> None:
    steps: list[dict[str, Any]] = []

    def run_step(event: dict[str, Any]) -> None:
        steps.append(event)
        if event["fanout_step"] == "copy" and event["item"] == 0:
            raise TransientError("SlowDown")

    launcher, waits = engine(run_step, 1)
    start(launcher)
    launcher.wait("j")
    assert waits == [
        FANOUT_ITEM_RETRY_INTERVAL_SECONDS * FANOUT_ITEM_RETRY_BACKOFF**n
        for n in range(FANOUT_ITEM_RETRY_ATTEMPTS)
    ]
    assert len(steps) == 1 + FANOUT_ITEM_RETRY_ATTEMPTS + 1
    conclude = steps[-1]
    assert conclude["fanout_step"] == "conclude"
    assert conclude["error"]["Error"] == MAP_FAILED_ERROR
    assert json.loads(conclude["error"]["Cause"])["Error"] == "TransientError"


def test_the_engine_never_retries_a_refusal() -> None:
    steps: list[dict[str, Any]] = []

    def run_step(event: dict[str, Any]) -> None:
        steps.append(event)
        if event["fanout_step"] == "publish":
            raise PromotionRejected(Reason.NIGHTLY_CONFLICT, "other bytes")

    launcher, waits = engine(run_step, 1)
    start(launcher)
    launcher.wait("j")
    assert [s["fanout_step"] for s in steps] == ["copy", "publish", "conclude"]
    assert steps[-1]["error"]["Error"] == "PromotionRejected"
    assert waits == []


class Context:
    function_name = "promoter-test"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:promoter-test"
    aws_request_id = "req"


@pytest.fixture
def handler_env(monkeypatch: pytest.MonkeyPatch) -> Any:
    from wheelgate.lambda_function import handler

    for name, value in {**BASE_ENV, "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    handler.promoter.cache_clear()
    yield handler, monkeypatch
    handler.promoter.cache_clear()


def test_a_step_event_without_a_state_machine_is_refused(handler_env: Any) -> None:
    handler, monkeypatch = handler_env
    monkeypatch.delenv(ENV_FANOUT_STATE_MACHINE_ARN, raising=False)
    event = {"fanout_step": "publish", "job_id": "j"}
    with pytest.raises(ValueError, match=ENV_FANOUT_STATE_MACHINE_ARN):
        handler.lambda_handler(event, Context())


@pytest.mark.parametrize(
    ("event", "problem"),
    [
        (
            {"fanout_step": "paste", "job_id": "j"},
            "must be 'hash', 'copy', 'publish' or 'conclude'",
        ),
        ({"fanout_step": "hash", "job_id": "j", "item": None}, "hash step: item must be a non-"),
        ({"fanout_step": "copy", "job_id": "j", "item": -1}, "item must be a non-negative"),
        ({"fanout_step": "copy", "job_id": "j", "item": "1"}, "item must be a non-negative"),
        ({"fanout_step": "publish"}, "job_id must be a non-empty string"),
        ({"fanout_step": "conclude", "job_id": "j"}, "error must be an object"),
    ],
)
def test_the_handler_dispatches_step_events_and_names_what_is_wrong(
    handler_env: Any, event: dict[str, Any], problem: str
) -> None:
    handler, monkeypatch = handler_env
    monkeypatch.setenv(ENV_FANOUT_STATE_MACHINE_ARN, MACHINE)
    with pytest.raises(StepError, match=re.escape(problem)):
        handler.lambda_handler(event, Context())


def test_a_steps_log_keys_do_not_label_the_next_invocation(handler_env: Any) -> None:
    # Given a warm container that ran a fan-out step of job "j-earlier"
    handler, monkeypatch = handler_env
    monkeypatch.setenv(ENV_FANOUT_STATE_MACHINE_ARN, MACHINE)
    with pytest.raises(StepError):
        handler.lambda_handler({"fanout_step": "paste", "job_id": "j-earlier"}, Context())
    # When the next invocation is an SQS batch (a poison message, which logs an error)
    written = io.StringIO()
    captured = logging.StreamHandler(written)
    captured.setFormatter(handler.logger.registered_formatter)
    handler.logger.addHandler(captured)
    batch = {
        "Records": [
            {
                "messageId": "m1",
                "receiptHandle": "r",
                "body": "not json",
                "attributes": {},
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:q",
                "awsRegion": "us-east-1",
            }
        ]
    }
    try:
        result = handler.lambda_handler(batch, Context())
    finally:
        handler.logger.removeHandler(captured)
    # Then its log lines name no job of the earlier step
    logged = [json.loads(line) for line in written.getvalue().splitlines()]
    assert result["batchItemFailures"] == [{"itemIdentifier": "m1"}]
    assert any(entry["message"].startswith("poison message") for entry in logged)
    assert all("job_id" not in entry and "fanout_step" not in entry for entry in logged)


def test_local_mode_runs_executions_in_process_and_the_function_on_step_functions(
    handler_env: Any,
) -> None:
    # Given settings naming a state machine
    handler, monkeypatch = handler_env
    monkeypatch.setenv(ENV_FANOUT_STATE_MACHINE_ARN, MACHINE)
    # When local mode builds its service, and then the function builds its own
    local_service = in_process_parts(hash_concurrency=3, copy_concurrency=4)()
    service = handler.promoter()
    # Then local mode's executions run in this process and step through its own service...
    assert local_service is not service
    assert local_service.fanout is not None
    launcher = local_service.fanout.launcher
    assert isinstance(launcher, InProcessLauncher)
    assert launcher.concurrency == {"hash": 3, "copy": 4}
    heard: list[dict[str, Any]] = []
    monkeypatch.setattr(local_service, "step", lambda event: heard.append(event) or {})
    launcher.run_step({"fanout_step": "publish", "job_id": "j"})
    assert heard == [{"fanout_step": "publish", "job_id": "j"}]
    # ...while the function starts them on Step Functions, local mode built or not
    assert service.fanout is not None
    assert isinstance(service.fanout.launcher, StepFunctionsLauncher)


def test_local_modes_handler_dispatches_step_events_to_its_own_service(
    handler_env: Any,
) -> None:
    # Given local mode's handler, with a state machine named in the settings
    _, monkeypatch = handler_env
    monkeypatch.setenv(ENV_FANOUT_STATE_MACHINE_ARN, MACHINE)
    local_handler = in_process_handler()
    # When it is given a step event that is not the contract's, then its service refuses it
    with pytest.raises(StepError, match="must be 'hash', 'copy', 'publish' or 'conclude'"):
        local_handler({"fanout_step": "paste", "job_id": "j"}, Context())  # type: ignore[arg-type]
