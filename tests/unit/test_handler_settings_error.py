"""The promoter fails closed, and says so: with a gate setting unset, the real handler fails
every message and fan-out step, logs at ERROR a line naming the variable, and counts the
failure in the metric the stack alarms on. The batch processor logs a message's exception
at debug only, so without these the dead-letter queue would fill in silence."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.emf import emitted
from tests.unit.samples import PROMOTER_ENV
from tests.unit.test_settings import GATE_SETTINGS
from wheelgate.core.fanout_steps import FANOUT_STEP_FIELD
from wheelgate.core.metrics import METRIC_SETTINGS_ERRORS, METRICS_NAMESPACE, SERVICE_NAME
from wheelgate.core.setting_values import SettingsError
from wheelgate.core.settings import PromoterSettings
from wheelgate.lambda_function import handler

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


class Context:
    function_name = "promoter-test"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:promoter-test"
    aws_request_id = "req"


def manifest_message(message_id: str) -> dict[str, Any]:
    """One SQS message as Lambda's event source delivers it: S3's event for a manifest."""
    record = {
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "awsRegion": "us-east-1",
        "eventTime": "2026-11-30T04:00:00.000Z",
        "eventName": "ObjectCreated:Put",
        "userIdentity": {"principalId": "AWS:AROAREPORTER:ci"},
        "requestParameters": {"sourceIPAddress": "127.0.0.1"},
        "responseElements": {"x-amz-request-id": "r", "x-amz-id-2": "i"},
        "s3": {
            "s3SchemaVersion": "1.0",
            "configurationId": "manifests",
            "bucket": {"name": "s", "ownerIdentity": {"principalId": "o"}, "arn": "arn:aws:s3:::s"},
            "object": {"key": "manifests/run-1.json", "size": 1, "eTag": "e"},
        },
    }
    return {
        "messageId": message_id,
        "receiptHandle": "h",
        "body": json.dumps({"Records": [record]}),
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": {},
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:q",
        "awsRegion": "us-east-1",
    }


class CurrentStdout:
    """Writes to ``sys.stdout`` as it is at each write."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()


def log_lines(output: str) -> list[dict[str, Any]]:
    """The Powertools log lines (JSON with a level) among the lines of ``output``."""
    lines = []
    for line in output.splitlines():
        try:
            document = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(document, dict) and "level" in document:
            lines.append(document)
    return lines


@pytest.fixture(autouse=True)
def _fresh_promoter(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[None]:
    # The logger keeps the stdout of its import: make it write to stdout as it now is, which
    # capsys holds, as the function's logs go to its stdout in Lambda.
    monkeypatch.setattr(handler.logger.registered_handler, "stream", CurrentStdout())
    # Given the promoter's environment exactly as the test sets it, and no parts built yet
    for name in PromoterSettings.env_names():
        monkeypatch.delenv(name, raising=False)
    handler.promoter.cache_clear()
    handler.metrics.clear_metrics()
    yield
    handler.promoter.cache_clear()
    handler.metrics.clear_metrics()


def set_env_without(monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    for name, value in PROMOTER_ENV.items():
        if name != variable:
            monkeypatch.setenv(name, value)


@pytest.mark.parametrize("variable", GATE_SETTINGS)
def test_a_missing_gate_setting_fails_each_message_with_an_error_line_naming_it(
    variable: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the promoter's environment less one gate setting
    set_env_without(monkeypatch, variable)
    capsys.readouterr()
    # When a batch of two manifest messages reaches the function's entry point
    event = {"Records": [manifest_message("m-1"), manifest_message("m-2")]}
    response = handler.lambda_handler(event, Context())  # type: ignore[arg-type]
    # Then both messages fail (retried, then dead-lettered): nothing is released
    assert response == {"batchItemFailures": [{"itemIdentifier": "m-1"}, {"itemIdentifier": "m-2"}]}
    # And each message logged, at ERROR, a line naming the variable and what to set
    output = capsys.readouterr().out
    errors = [line for line in log_lines(output) if line["level"] == "ERROR"]
    assert [line["variable"] for line in errors] == [variable, variable]
    for line in errors:
        assert f"environment variable {variable} is not set: set it to " in line["message"]
        assert "Traceback" not in json.dumps(line)
    # And each failed message counted once in the alarmed metric, with the service dimension only
    counted = [m for m in emitted(output) if m.name == METRIC_SETTINGS_ERRORS]
    assert [(m.value, m.namespace, m.dimensions) for m in counted] == [
        (1.0, METRICS_NAMESPACE, {"service": SERVICE_NAME})
    ] * 2


def test_every_missing_gate_setting_is_named_in_a_line_of_its_own(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an environment with none of the gate settings
    for name, value in PROMOTER_ENV.items():
        if name not in GATE_SETTINGS:
            monkeypatch.setenv(name, value)
    capsys.readouterr()
    # When one message arrives
    response = handler.lambda_handler({"Records": [manifest_message("m-1")]}, Context())  # type: ignore[arg-type]
    # Then each missing variable has its ERROR line, not only the first
    assert response == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
    errors = [line for line in log_lines(capsys.readouterr().out) if line["level"] == "ERROR"]
    assert sorted(line["variable"] for line in errors) == sorted(GATE_SETTINGS)


def test_a_settings_error_is_logged_again_on_the_next_invocation_not_cached_away(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a warm container whose first invocation found a gate setting missing
    set_env_without(monkeypatch, GATE_SETTINGS[0])
    handler.lambda_handler({"Records": [manifest_message("m-1")]}, Context())  # type: ignore[arg-type]
    capsys.readouterr()
    # When the next invocation comes
    handler.lambda_handler({"Records": [manifest_message("m-2")]}, Context())  # type: ignore[arg-type]
    # Then it says so again
    errors = [line for line in log_lines(capsys.readouterr().out) if line["level"] == "ERROR"]
    assert [line["variable"] for line in errors] == [GATE_SETTINGS[0]]


@pytest.mark.parametrize("variable", GATE_SETTINGS)
def test_a_fanout_step_fails_with_an_error_line_naming_the_missing_setting(
    variable: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the promoter's environment less one gate setting
    set_env_without(monkeypatch, variable)
    capsys.readouterr()
    # When a fan-out step reaches the function's entry point, it fails (the step's error)
    step = {FANOUT_STEP_FIELD: "publish", "job_id": "j-1"}
    with pytest.raises(SettingsError, match=variable):
        handler.lambda_handler(step, Context())  # type: ignore[arg-type]
    # And it logged the variable at ERROR and counted the failure
    output = capsys.readouterr().out
    errors = [line for line in log_lines(output) if line["level"] == "ERROR"]
    assert [line["variable"] for line in errors] == [variable]
    assert [m.value for m in emitted(output) if m.name == METRIC_SETTINGS_ERRORS] == [1.0]


def test_a_settings_error_without_named_problems_is_still_logged_whole(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given parts whose build fails on a setting read by a parser of its own
    def parts() -> handler.Parts:
        raise SettingsError("WHEELGATE_RUN_STAGE_WINDOW_DAYS must be a positive whole number")

    capsys.readouterr()
    # When a message reaches an entry point over them
    response = handler.entry_point(parts)({"Records": [manifest_message("m-1")]}, Context())  # type: ignore[arg-type]
    # Then the message fails, and the error's own sentence is the ERROR line
    assert response == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
    output = capsys.readouterr().out
    [line] = [line for line in log_lines(output) if line["level"] == "ERROR"]
    assert line["message"].endswith(
        "WHEELGATE_RUN_STAGE_WINDOW_DAYS must be a positive whole number"
    )
    assert [m.value for m in emitted(output) if m.name == METRIC_SETTINGS_ERRORS] == [1.0]
