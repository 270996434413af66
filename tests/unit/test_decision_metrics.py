"""Decision stats and the metrics a decision emits (EMF, as Powertools prints it)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from aws_lambda_powertools import Metrics

from tests.emf import emitted, values
from wheelgate.core.errors import TransientError
from wheelgate.core.metrics import (
    METRIC_BYTES_COPIED,
    METRIC_FILES_COPIED,
    METRIC_INTEGRITY_REJECTIONS,
    METRIC_PROMOTION_LATENCY,
    METRIC_PROMOTIONS_REJECTED,
    METRIC_PROMOTIONS_SUCCEEDED,
    METRIC_REASON_DIMENSION,
    METRIC_REJECTIONS_BY_REASON,
    METRIC_STATUS_PAGE_ERRORS,
    METRICS_NAMESPACE,
    SERVICE_NAME,
)
from wheelgate.core.records import FileOutcome, PromotionRecord, RecordEntry, SetOutcome, State
from wheelgate.core.timestamps import parse_upload_time
from wheelgate.lambda_function.status_site import StatusSite
from wheelgate.lambda_function.telemetry import DecisionMetrics
from wheelgate.promotion.decisions import Decision, DecisionStats, latest_decision

WRITTEN = datetime(2026, 11, 30, 4, 0, 0, tzinfo=UTC)
PUBLISHED = "2026-11-30T04:01:30.250000Z"
INDEX = "v2/gfx94X-dcgpu"


def decision_stats(
    record: PromotionRecord, *, manifest_written_at: datetime | None
) -> DecisionStats:
    """The stats of ``record``'s decision, taken at its latest entry's time."""
    at = parse_upload_time(record.history[-1].at)
    return Decision(record, at, written_at=manifest_written_at).stats()


def outcome(name: str, size: int, action: str) -> FileOutcome:
    return FileOutcome(filename=name, sha256="0" * 64, size=size, action=action)  # type: ignore[arg-type]


def promoted_record(*files: FileOutcome, pages: list[str] | None = None) -> PromotionRecord:
    return PromotionRecord(
        run_id="r1",
        state=State.PROMOTED,
        sets=[SetOutcome(index=INDEX, state=State.PROMOTED, files=list(files))],
        pages=[f"{INDEX}/pkg/index.html"] if pages is None else pages,
        history=[RecordEntry(at=PUBLISHED, state=State.PROMOTED, manifest_sha256="1" * 64)],
    )


def rejected_entry(reason: str = "checksum-mismatch") -> RecordEntry:
    return RecordEntry(
        at=PUBLISHED, state=State.REJECTED, reason=reason, message="no", manifest_sha256="2" * 64
    )


def test_copies_count_only_files_this_promotion_copied() -> None:
    # Given a promotion that copied two files and found one already released
    record = promoted_record(
        outcome("a.whl", 1000, "copied"),
        outcome("b.whl", 24, "copied"),
        outcome("old.whl", 5_000_000, "already-released"),
    )
    # When its stats are read
    stats = decision_stats(record, manifest_written_at=WRITTEN)
    # Then the released file is in neither count, and the latency runs to the decision time
    assert (stats.files_copied, stats.bytes_copied) == (2, 1024)
    assert stats.latency_seconds == 90.25


def test_a_replay_refused_on_a_promoted_run_copies_nothing_and_publishes_nothing() -> None:
    # Given a promoted run (its sets show copies) that gains a replay-conflict rejection
    record = promoted_record(outcome("a.whl", 1000, "copied")).with_entry(
        rejected_entry("replay-conflict")
    )
    stats = decision_stats(record, manifest_written_at=WRITTEN)
    # Then the earlier promotion's copies are not this decision's
    assert stats == DecisionStats(manifest_written_at=WRITTEN)
    assert stats.latency_seconds is None


def test_a_promotion_without_pages_has_no_latency() -> None:
    stats = decision_stats(promoted_record(pages=[]), manifest_written_at=WRITTEN)
    assert stats.published_at is None
    assert stats.latency_seconds is None


def test_an_unknown_write_time_has_no_latency() -> None:
    stats = decision_stats(promoted_record(), manifest_written_at=None)
    assert stats.latency_seconds is None


def test_clock_skew_never_makes_a_negative_latency() -> None:
    stats = DecisionStats(manifest_written_at=WRITTEN, published_at=WRITTEN - timedelta(seconds=2))
    assert stats.latency_seconds == 0.0


def test_stats_refuse_nonsense() -> None:
    with pytest.raises(ValueError, match="copies cannot be negative"):
        DecisionStats(files_copied=-1)
    with pytest.raises(ValueError, match="manifest_written_at must be timezone-aware"):
        DecisionStats(manifest_written_at=datetime(2026, 11, 30))


def test_a_record_without_history_has_no_decision() -> None:
    with pytest.raises(ValueError, match="run r0 has no decision"):
        latest_decision(PromotionRecord(run_id="r0", state=State.PENDING))


@pytest.fixture
def metrics() -> Iterator[Metrics]:
    # Powertools keeps one metric set per process: start and end each test with it empty.
    metrics = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE_NAME)
    metrics.clear_metrics()
    yield metrics
    metrics.clear_metrics()


def emit(metrics: Metrics, record: PromotionRecord, stats: DecisionStats) -> None:
    DecisionMetrics(metrics, namespace=METRICS_NAMESPACE).decided(record, stats)
    metrics.flush_metrics(raise_on_empty_metrics=False)


def test_a_promotion_emits_its_counts_and_latency_with_the_service_dimension_only(
    metrics: Metrics, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a promotion that copied one file of 1000 bytes and published 90.25 s after the write
    record = promoted_record(
        outcome("a.whl", 1000, "copied"), outcome("b.whl", 7, "already-released")
    )
    # When its metrics are emitted
    emit(metrics, record, decision_stats(record, manifest_written_at=WRITTEN))
    out = capsys.readouterr().out
    # Then each metric has its value, and every one carries exactly the service dimension
    assert values(out, METRIC_PROMOTIONS_SUCCEEDED) == [1]
    assert values(out, METRIC_FILES_COPIED) == [1]
    assert values(out, METRIC_BYTES_COPIED) == [1000]
    assert values(out, METRIC_PROMOTION_LATENCY) == [90.25]
    assert values(out, METRIC_PROMOTIONS_REJECTED) == []
    assert values(out, METRIC_REJECTIONS_BY_REASON) == []
    units = {m.name: m.unit for m in emitted(out)}
    assert units[METRIC_BYTES_COPIED] == "Bytes"
    assert units[METRIC_PROMOTION_LATENCY] == "Seconds"
    for metric in emitted(out):
        assert metric.namespace == METRICS_NAMESPACE
        assert metric.dimensions == {"service": SERVICE_NAME}, metric


def test_a_rejection_counts_once_with_its_reason_kept_off_the_other_metrics(
    metrics: Metrics, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a rejected decision
    record = PromotionRecord(run_id="r2", state=State.REJECTED, history=[rejected_entry()])
    # When its metrics are emitted
    emit(metrics, record, decision_stats(record, manifest_written_at=WRITTEN))
    out = capsys.readouterr().out
    # Then it counts once in PromotionsRejected, with the service dimension only...
    [rejected] = [m for m in emitted(out) if m.name == METRIC_PROMOTIONS_REJECTED]
    assert (rejected.value, rejected.dimensions) == (1, {"service": SERVICE_NAME})
    # ...and once by reason, in a document of its own that carries the reason
    [by_reason] = [m for m in emitted(out) if m.name == METRIC_REJECTIONS_BY_REASON]
    assert by_reason.value == 1
    assert by_reason.namespace == METRICS_NAMESPACE
    assert by_reason.dimensions == {
        "service": SERVICE_NAME,
        METRIC_REASON_DIMENSION: "checksum-mismatch",
    }
    # A checksum mismatch is an integrity reason: it counts for the alarm too
    assert values(out, METRIC_INTEGRITY_REJECTIONS) == [1]
    # Nothing of a promotion is counted
    assert {m.name for m in emitted(out)} == {
        METRIC_PROMOTIONS_REJECTED,
        METRIC_REJECTIONS_BY_REASON,
        METRIC_INTEGRITY_REJECTIONS,
    }


@pytest.mark.parametrize(
    ("reason", "integrity"),
    [
        ("tests-failed", False),
        ("tests-missing", False),
        ("invalid-manifest", False),
        ("untested-file", True),
        ("metadata-mismatch", True),
        ("release-conflict", True),
        ("nightly-conflict", True),
    ],
)
def test_only_an_integrity_reason_counts_for_the_alarm(
    reason: str, integrity: bool, metrics: Metrics, capsys: pytest.CaptureFixture[str]
) -> None:
    record = PromotionRecord(run_id="r4", state=State.REJECTED, history=[rejected_entry(reason)])
    emit(metrics, record, decision_stats(record, manifest_written_at=WRITTEN))
    out = capsys.readouterr().out
    assert values(out, METRIC_PROMOTIONS_REJECTED) == [1]
    assert values(out, METRIC_INTEGRITY_REJECTIONS) == ([1] if integrity else [])


def untrusted_note(run_id: str) -> PromotionRecord:
    """The record of a run whose only entry notes an untrusted write."""
    return PromotionRecord(
        run_id=run_id,
        state=State.PENDING,
        history=[RecordEntry(at=PUBLISHED, state=State.PENDING, reason="untrusted-writer")],
    )


def test_an_untrusted_write_counts_one_integrity_rejection(
    metrics: Metrics, capsys: pytest.CaptureFixture[str]
) -> None:
    record = untrusted_note("r5")
    DecisionMetrics(metrics, namespace=METRICS_NAMESPACE).ignored(record)
    metrics.flush_metrics()
    out = capsys.readouterr().out
    assert values(out, METRIC_INTEGRITY_REJECTIONS) == [1]
    assert values(out, METRIC_PROMOTIONS_REJECTED) == []


@pytest.mark.filterwarnings("ignore:No application metrics to publish")
def test_a_pending_entry_emits_nothing(
    metrics: Metrics, capsys: pytest.CaptureFixture[str]
) -> None:
    record = untrusted_note("r3")
    emit(metrics, record, DecisionStats())
    assert emitted(capsys.readouterr().out) == []


def test_the_metrics_projection_counts_a_new_decision_once_and_a_redelivery_not_at_all(
    metrics: Metrics, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a promotion, handed to the metrics projection new and then as a redelivery
    record = promoted_record(outcome("a.whl", 1000, "copied"))
    at = parse_upload_time(PUBLISHED)
    projection = DecisionMetrics(metrics, namespace=METRICS_NAMESPACE)
    projection.project(Decision(record, at, written_at=WRITTEN))
    projection.project(Decision(record, at, new=False, written_at=WRITTEN))
    metrics.flush_metrics(raise_on_empty_metrics=False)
    # Then one promotion is counted, with its latency to the decision's time
    out = capsys.readouterr().out
    assert values(out, METRIC_PROMOTIONS_SUCCEEDED) == [1]
    assert values(out, METRIC_PROMOTION_LATENCY) == [90.25]


def test_the_status_site_projection_counts_a_failure_and_raises_it(
    metrics: Metrics, capsys: pytest.CaptureFixture[str]
) -> None:
    class Down:
        def update(self, record: PromotionRecord, *, run: PromotionRecord | None = None) -> None:
            raise TransientError("status state keeps changing")

    site = StatusSite(Down(), metrics)  # type: ignore[arg-type]
    with pytest.raises(TransientError):
        site.project(Decision(promoted_record(), parse_upload_time(PUBLISHED)))
    metrics.flush_metrics(raise_on_empty_metrics=False)
    assert values(capsys.readouterr().out, METRIC_STATUS_PAGE_ERRORS) == [1]
