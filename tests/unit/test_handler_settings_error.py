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

from tests.emf import emitted, json_objects
from tests.lambda_events import Context, sqs_message
from tests.unit.samples import PROMOTER_ENV
from tests.unit.test_events_and_cli import s3_event
from tests.unit.test_settings import GATE_SETTINGS
from wheelgate.core.fanout_steps import FANOUT_STEP_FIELD
from wheelgate.core.metrics import (
    METRIC_PROMOTION_ERRORS,
    METRIC_SETTINGS_ERRORS,
    METRICS_NAMESPACE,
    SERVICE_NAME,
)
from wheelgate.core.setting_values import SettingsError
from wheelgate.core.settings import PromoterSettings
from wheelgate.lambda_function import handler

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

#: S3's event for a manifest written by the reporter, as the body of an SQS message.
MANIFEST_EVENT = s3_event("manifests/run-1.json", bucket="s", principal="AWS:AROAREPORTER:ci")


class CurrentStdout:
    """Writes to ``sys.stdout`` as it is at each write."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()


@pytest.fixture(autouse=True)
def _fresh_promoter(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # The logger keeps the stdout of its import: make it write to stdout as it now is, which
    # capsys holds, as the function's logs go to its stdout in Lambda.
    monkeypatch.setattr(handler.logger.registered_handler, "stream", CurrentStdout())
    # No variable of the promoter but those a test sets, and no parts built yet
    for name in PromoterSettings.env_names():
        monkeypatch.delenv(name, raising=False)
    handler.promoter.cache_clear()
    handler.metrics.clear_metrics()
    yield
    handler.promoter.cache_clear()
    handler.metrics.clear_metrics()


def set_env_without(monkeypatch: pytest.MonkeyPatch, *variables: str) -> None:
    for name, value in PROMOTER_ENV.items():
        if name not in variables:
            monkeypatch.setenv(name, value)


def deliver(
    capsys: pytest.CaptureFixture[str], *message_ids: str, to: Any = handler.lambda_handler
) -> tuple[dict[str, Any], str]:
    """Hand a batch of manifest messages to the handler ``to``: its response, and what the
    invocation printed (log lines and metrics)."""
    capsys.readouterr()
    event = {"Records": [sqs_message(MANIFEST_EVENT, m) for m in message_ids]}
    response = to(event, Context())
    return response, capsys.readouterr().out


def failed(*message_ids: str) -> dict[str, Any]:
    """The batch response that fails these messages (retried, then dead-lettered)."""
    return {"batchItemFailures": [{"itemIdentifier": m} for m in message_ids]}


def error_lines(output: str) -> list[dict[str, Any]]:
    return [line for line in json_objects(output) if line.get("level") == "ERROR"]


@pytest.mark.parametrize("variable", GATE_SETTINGS)
def test_a_missing_gate_setting_fails_each_message_with_an_error_line_naming_it(
    variable: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the promoter's environment less one gate setting
    set_env_without(monkeypatch, variable)
    # When a batch of two manifest messages reaches the function's entry point
    response, output = deliver(capsys, "m-1", "m-2")
    # Then both messages fail: nothing is released
    assert response == failed("m-1", "m-2")
    # And each logged, at ERROR, a line naming the variable and what to set, no traceback
    errors = error_lines(output)
    assert [line["variable"] for line in errors] == [variable, variable]
    for line in errors:
        assert f"environment variable {variable} is not set: set it to " in line["message"]
        assert "Traceback" not in json.dumps(line)
    # And each counted once in the alarmed metric, with the service dimension only
    counted = [m for m in emitted(output) if m.name == METRIC_SETTINGS_ERRORS]
    assert [(m.value, m.namespace, m.dimensions) for m in counted] == [
        (1.0, METRICS_NAMESPACE, {"service": SERVICE_NAME})
    ] * 2


def test_every_missing_gate_setting_is_named_in_a_line_of_its_own(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    set_env_without(monkeypatch, *GATE_SETTINGS)
    response, output = deliver(capsys, "m-1")
    assert response == failed("m-1")
    assert sorted(line["variable"] for line in error_lines(output)) == sorted(GATE_SETTINGS)


def test_a_settings_error_is_logged_again_on_the_next_invocation_not_cached_away(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a warm container whose first invocation found a gate setting missing
    set_env_without(monkeypatch, GATE_SETTINGS[0])
    deliver(capsys, "m-1")
    # When the next invocation comes, it says so again
    response, output = deliver(capsys, "m-2")
    assert response == failed("m-2")
    assert [line["variable"] for line in error_lines(output)] == [GATE_SETTINGS[0]]


@pytest.mark.parametrize("variable", GATE_SETTINGS)
def test_a_fanout_step_fails_with_an_error_line_naming_the_missing_setting(
    variable: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    set_env_without(monkeypatch, variable)
    capsys.readouterr()
    # When a fan-out step reaches the function's entry point, it fails (the step's error)
    step = {FANOUT_STEP_FIELD: "publish", "job_id": "j-1"}
    with pytest.raises(SettingsError, match=variable):
        handler.lambda_handler(step, Context())  # type: ignore[arg-type]
    # And it logged the variable at ERROR and counted the failure
    output = capsys.readouterr().out
    assert [line["variable"] for line in error_lines(output)] == [variable]
    assert [m.value for m in emitted(output) if m.name == METRIC_SETTINGS_ERRORS] == [1.0]


def test_a_settings_error_without_named_problems_is_still_logged_whole(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given parts whose build fails on a setting read by a parser of its own
    def parts() -> handler.Promoter:
        raise SettingsError("WHEELGATE_RUN_STAGE_WINDOW_DAYS must be a positive whole number")

    # When a message reaches an entry point over them
    response, output = deliver(capsys, "m-1", to=handler.entry_point(parts))
    # Then the message fails, and the error's own sentence is the ERROR line
    assert response == failed("m-1")
    [line] = error_lines(output)
    assert line["message"].endswith(
        "WHEELGATE_RUN_STAGE_WINDOW_DAYS must be a positive whole number"
    )
    assert [m.value for m in emitted(output) if m.name == METRIC_SETTINGS_ERRORS] == [1.0]


def test_a_build_failure_that_is_no_settings_error_is_logged_at_error_with_its_cause(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given parts whose build fails for a reason of its own (a client that cannot be made)
    def parts() -> handler.Promoter:
        raise RuntimeError("no region for the KMS client")

    # When a message reaches an entry point over them
    response, output = deliver(capsys, "m-1", to=handler.entry_point(parts))
    # Then the message fails, one ERROR line names the cause with its traceback, and it is
    # counted as a promotion error, not a settings error
    assert response == failed("m-1")
    [line] = error_lines(output)
    assert line["message"] == (
        "promoter could not be built, nothing released: RuntimeError: no region for the KMS client"
    )
    assert "RuntimeError" in line["exception"]
    assert [m.value for m in emitted(output) if m.name == METRIC_PROMOTION_ERRORS] == [1.0]
    assert not [m for m in emitted(output) if m.name == METRIC_SETTINGS_ERRORS]
