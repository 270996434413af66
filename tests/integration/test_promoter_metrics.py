"""The promoter's decision metrics, as the Lambda handler prints them (EMF), for events
delivered to it against the real S3 API (moto server)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.emf import emitted, values
from tests.integration.test_promoter import Run, deliver, wheel
from wheelgate.core.metrics import (
    METRIC_BYTES_COPIED,
    METRIC_FILES_COPIED,
    METRIC_INTEGRITY_REJECTIONS,
    METRIC_PROMOTION_LATENCY,
    METRIC_PROMOTIONS_REJECTED,
    METRIC_PROMOTIONS_SUCCEEDED,
    METRIC_REASON_DIMENSION,
    METRIC_REJECTIONS_BY_REASON,
    SERVICE_NAME,
)
from wheelgate.lambda_function import handler
from wheelgate.local.stack import LocalWheelGate
from wheelgate.promotion import compose
from wheelgate.storage.bucket import Bucket

#: The event time ``sqs_event`` gives every manifest write.
WRITTEN = datetime(2026, 11, 30, 4, 0, 0, tzinfo=UTC)
#: The promoter's clock in these tests: 42.5 s after the write.
NOW = datetime(2026, 11, 30, 4, 0, 42, 500_000, tzinfo=UTC)
DECISION_METRICS = {
    METRIC_PROMOTIONS_SUCCEEDED,
    METRIC_PROMOTIONS_REJECTED,
    METRIC_FILES_COPIED,
    METRIC_BYTES_COPIED,
    METRIC_PROMOTION_LATENCY,
    METRIC_REJECTIONS_BY_REASON,
    METRIC_INTEGRITY_REJECTIONS,
}


pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


@pytest.fixture(autouse=True)
def _fixed_clock(stack: LocalWheelGate, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # The handler's promoter reads the in-process stack's settings on first use, and its
    # parts share the composition root's clock.
    handler.promoter.cache_clear()
    handler.metrics.clear_metrics()
    monkeypatch.setattr(compose, "_now", lambda: NOW)
    handler.promoter()
    yield
    handler.promoter.cache_clear()
    handler.metrics.clear_metrics()


@pytest.fixture
def run(buckets: tuple[Bucket, Bucket], tmp_path: Path, request: pytest.FixtureRequest) -> Run:
    name = "m-" + request.node.name.replace("_", "-")[-50:].strip("-")
    return Run(buckets, tmp_path, name, f"m/{name}")


def report(
    run: Run,
    capsys: pytest.CaptureFixture[str],
    manifest: dict[str, Any],
    principal: str | None = None,
) -> tuple[dict[str, Any], str]:
    """Write ``manifest`` and deliver its event; the record and what the handler printed."""
    capsys.readouterr()
    record = run.report(manifest) if principal is None else run.report(manifest, principal)
    return record, capsys.readouterr().out


def redeliver(run: Run, capsys: pytest.CaptureFixture[str]) -> str:
    """Deliver the manifest's event once more (at-least-once delivery); what was printed."""
    capsys.readouterr()
    assert deliver(f"manifests/{run.run_id}.json") == {"batchItemFailures": []}
    return capsys.readouterr().out


def decision_metrics(out: str) -> list[str]:
    return sorted(m.name for m in emitted(out) if m.name in DECISION_METRICS)


def test_a_promotion_counts_once_and_its_redelivery_adds_nothing(
    run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a staged run of one wheel, promoted through the handler with a fixed clock
    w = wheel(run.tmp, "counted")
    run.stage(w)
    record, out = report(run, capsys, run.manifest())
    assert record["state"] == "promoted", record["message"]
    # Then it counts one promotion, the wheel it copied, and the time from write to publish
    assert values(out, METRIC_PROMOTIONS_SUCCEEDED) == [1]
    assert values(out, METRIC_FILES_COPIED) == [1]
    assert values(out, METRIC_BYTES_COPIED) == [w.stat().st_size]
    assert values(out, METRIC_PROMOTION_LATENCY) == [(NOW - WRITTEN).total_seconds()]
    for metric in emitted(out):
        assert metric.dimensions == {"service": SERVICE_NAME}, metric
    # When S3's event for the same manifest is delivered again
    again = redeliver(run, capsys)
    # Then nothing is counted a second time
    assert decision_metrics(again) == []


def test_an_untrusted_write_counts_one_integrity_rejection_and_no_decision(
    run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a manifest written by a principal the promoter does not trust
    run.stage(wheel(run.tmp, "untrusted"))
    record, out = report(run, capsys, run.manifest(), principal="AWS:AROAINTRUDER:session")
    # Then the write is noted as pending; no decision is counted, but the integrity alarm's
    # metric is, once
    assert (record["state"], record["reason"]) == ("pending", "untrusted-writer")
    assert decision_metrics(out) == [METRIC_INTEGRITY_REJECTIONS]
    assert values(out, METRIC_INTEGRITY_REJECTIONS) == [1]
    # When the same event is delivered again, Then nothing more is counted
    capsys.readouterr()
    assert deliver(f"manifests/{run.run_id}.json", "AWS:AROAINTRUDER:session") == {
        "batchItemFailures": []
    }
    assert decision_metrics(capsys.readouterr().out) == []


def test_a_rejection_counts_once_with_its_reason(
    run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a manifest whose required test failed
    run.stage(wheel(run.tmp, "failing"))
    record, out = report(run, capsys, run.manifest(result="failed"))
    assert record["state"] == "rejected"
    reason = record["reason"]
    # Then one rejection is counted with the service dimension only...
    [rejected] = [m for m in emitted(out) if m.name == METRIC_PROMOTIONS_REJECTED]
    assert (rejected.value, rejected.dimensions) == (1, {"service": SERVICE_NAME})
    # ...and one by its reason, in its own document
    [by_reason] = [m for m in emitted(out) if m.name == METRIC_REJECTIONS_BY_REASON]
    assert by_reason.value == 1
    assert by_reason.dimensions == {"service": SERVICE_NAME, METRIC_REASON_DIMENSION: reason}
    others = [m for m in emitted(out) if m.name != METRIC_REJECTIONS_BY_REASON]
    assert others
    assert all(METRIC_REASON_DIMENSION not in m.dimensions for m in others)
    # A failed test is routine: nothing for the integrity alarm
    assert reason == "tests-failed"
    assert decision_metrics(out) == [METRIC_PROMOTIONS_REJECTED, METRIC_REJECTIONS_BY_REASON]
    # When the same rejected manifest is delivered again, Then nothing more is counted
    assert decision_metrics(redeliver(run, capsys)) == []


def test_files_already_released_are_not_counted_as_copied(
    buckets: tuple[Bucket, Bucket], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a wheel released by a first run into a directory...
    shared = wheel(tmp_path / "shared", "shared")
    first = Run(buckets, tmp_path, "m-released-first", "m/released").stage(shared)
    assert report(first, capsys, first.manifest())[0]["state"] == "promoted"
    # ...and a second run that ships the same wheel (same bytes) and a new one
    new = wheel(tmp_path / "new", "fresh")
    second = Run(buckets, tmp_path, "m-released-second", "m/released").stage(shared, new)
    record, out = report(second, capsys, second.manifest())
    assert record["state"] == "promoted", record["message"]
    actions = {f["filename"]: f["action"] for f in record["sets"][0]["files"]}
    assert actions == {shared.name: "already-released", new.name: "copied"}
    # Then only the new wheel counts as copied
    assert values(out, METRIC_FILES_COPIED) == [1]
    assert values(out, METRIC_BYTES_COPIED) == [new.stat().st_size]


def test_a_replay_refused_on_a_promoted_run_counts_a_rejection(
    run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a promoted run whose manifest is then replaced by one with another file
    first = wheel(run.tmp, "replayed")
    run.stage(first)
    assert report(run, capsys, run.manifest())[0]["state"] == "promoted"
    later = wheel(run.tmp, "later")
    run.stage(later)
    record, out = report(run, capsys, run.manifest(files=[first, later]))
    # Then the run stays promoted, and the refused replay counts as a rejection, not a promotion
    assert record["state"] == "promoted"
    assert values(out, METRIC_PROMOTIONS_SUCCEEDED) == []
    assert values(out, METRIC_FILES_COPIED) == []
    [by_reason] = [m for m in emitted(out) if m.name == METRIC_REJECTIONS_BY_REASON]
    assert by_reason.dimensions[METRIC_REASON_DIMENSION] == "replay-conflict"
    # ...for an integrity reason, which pages
    assert values(out, METRIC_INTEGRITY_REJECTIONS) == [1]


def test_the_event_time_reaches_the_promoter() -> None:
    # An S3 event's eventTime is the manifest's write time the latency starts from.
    from tests.integration.test_promoter import sqs_event

    notification = json.loads(sqs_event("manifests/t.json", None)["Records"][0]["body"])
    [s3_record] = notification["Records"]
    s3_record["s3"]["object"]["eTag"] = "0123"
    [event] = handler.manifest_events(json.dumps(notification), s3_record["s3"]["bucket"]["name"])
    assert event.event_time == WRITTEN
    # A time without a zone is S3's UTC all the same.
    s3_record["eventTime"] = "2026-11-30T04:00:00"
    [event] = handler.manifest_events(json.dumps(notification), s3_record["s3"]["bucket"]["name"])
    assert event.event_time == WRITTEN


def test_an_override_counts_one_promotion_with_its_target_runs_copies(
    run: Run, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.integration.test_override import BREAK_GLASS, BREAK_GLASS_ID, override
    from wheelgate.core.env_names import ENV_BREAK_GLASS_ID

    # Given a break-glass role, and a run rejected for a failed test
    monkeypatch.setenv(ENV_BREAK_GLASS_ID, BREAK_GLASS_ID)
    handler.promoter.cache_clear()
    handler.promoter().clock = lambda: NOW
    w = wheel(run.tmp, "overridden")
    run.stage(w)
    assert report(run, capsys, run.manifest(result="failed"))[0]["state"] == "rejected"
    # When the break-glass role's override request is delivered
    request = override(run, BREAK_GLASS)
    out = capsys.readouterr().out
    assert request["state"] == "promoted", request["message"]
    # Then one promotion is counted (the request's; the target's promotion is not a second),
    # with the wheel the target's promotion copied, and no rejection
    assert values(out, METRIC_PROMOTIONS_SUCCEEDED) == [1]
    assert values(out, METRIC_FILES_COPIED) == [1]
    assert values(out, METRIC_BYTES_COPIED) == [w.stat().st_size]
    assert values(out, METRIC_PROMOTION_LATENCY) == [(NOW - WRITTEN).total_seconds()]
    assert values(out, METRIC_PROMOTIONS_REJECTED) == []
