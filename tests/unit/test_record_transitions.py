"""A record's transitions: each decision on a run is a method of PromotionRecord."""

from __future__ import annotations

from datetime import UTC, datetime

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.records import (
    Progress,
    Promotion,
    PromotionRecord,
    RecordEntry,
    SetOutcome,
    State,
)
from wheelgate.index.store import PageWrites

AT = datetime(2026, 12, 6, 7, 0, 0, tzinfo=UTC)
STAMP = "2026-12-06T07:00:00.000000Z"
INDEX = "v2/unit"
DIGEST = "d" * 64


def promotion(run_id: str = "r1") -> Promotion:
    return Promotion(
        run_id=run_id,
        commit="c" * 40,
        manifest_sha256=DIGEST,
        actor="AWS:REPORTER:x",
        sets=[SetOutcome(index=INDEX, state=State.PROMOTED)],
        message="promoted 1 file(s) in 1 set(s) (1 copied)",
    )


def rejection(reason: Reason = Reason.TESTS_FAILED) -> PromotionRejected:
    return PromotionRejected(reason, "a test failed")


def test_a_run_never_recorded_starts_with_no_attempt_and_no_history() -> None:
    blank = PromotionRecord.of(None, "r1")
    assert (blank.run_id, blank.state, blank.attempts, blank.history) == (
        "r1",
        State.PENDING,
        0,
        [],
    )


def test_a_promotion_states_its_pages_and_what_each_directory_delisted_at_the_given_time() -> None:
    # When a run never recorded is promoted
    written = PageWrites(keys=[f"{INDEX}/pkg/index.html"], delisted={INDEX: ["old.whl"]})
    record = PromotionRecord.of(None, "r1").promoted(promotion(), written, ["inv-1"], at=AT)
    # Then it is promoted, once attempted, at the decision's time, with its pages and delistings
    assert (record.state, record.attempts, record.decided_at) == (State.PROMOTED, 1, STAMP)
    assert record.pages == [f"{INDEX}/pkg/index.html"]
    assert record.sets[0].delisted == ["old.whl"]
    assert record.history[-1].manifest_sha256 == DIGEST


def test_a_rejection_after_a_rejection_counts_a_second_attempt() -> None:
    first = PromotionRecord.of(None, "r1").rejected(
        rejection(), at=AT, manifest_sha256=DIGEST, actor=None
    )
    second = first.rejected(rejection(), at=AT, manifest_sha256="e" * 64, actor=None)
    assert (second.state, second.reason, second.attempts) == (State.REJECTED, "tests-failed", 2)
    assert len(second.history) == 2


def test_a_replay_refused_on_a_promoted_run_stays_promoted_with_the_refusal_in_its_history() -> (
    None
):
    promoted = PromotionRecord.of(None, "r1").promoted(promotion(), PageWrites(), [], at=AT)
    replay = promoted.rejected(
        rejection(Reason.REPLAY_CONFLICT), at=AT, manifest_sha256="e" * 64, actor=None
    )
    assert (replay.state, replay.attempts) == (State.PROMOTED, 1)
    assert replay.history[-1].reason == "replay-conflict"


def test_a_failure_keeps_the_run_pending_and_names_its_attempt() -> None:
    failed = PromotionRecord.of(None, "r1").failed(at=AT, failure="Boom: no", then="retried")
    assert (failed.state, failed.reason) == (State.PENDING, "transient-error")
    assert failed.message == "attempt 1 failed: Boom: no; retried"


def test_a_pending_entry_keeps_the_progress_the_record_showed() -> None:
    progress = Progress(phase="gathering", done=1, total=3)
    gathering = PromotionRecord(run_id="import-1", state=State.PENDING, progress=progress)
    entry = RecordEntry(at=STAMP, state=State.PENDING, message="still going")
    assert gathering.following(entry).progress == progress


def test_an_untrusted_write_on_a_decided_run_leaves_its_state_and_attempts() -> None:
    promoted = PromotionRecord.of(None, "r1").promoted(promotion(), PageWrites(), [], at=AT)
    untrusted = PromotionRejected(Reason.UNTRUSTED_WRITER, "not the reporter")
    noted = promoted.noted(untrusted, at=AT, manifest_sha256=DIGEST, actor="AWS:X:y")
    assert (noted.state, noted.attempts) == (State.PROMOTED, 1)
    assert noted.history[-1].message == "ignored: not the reporter"
    # ...while on an undecided run the note is its pending decision
    fresh = PromotionRecord.of(None, "r2").noted(
        untrusted, at=AT, manifest_sha256=DIGEST, actor=None
    )
    assert (fresh.state, fresh.reason, fresh.attempts) == (State.PENDING, "untrusted-writer", 1)


def test_an_override_request_takes_its_targets_state_and_names_the_target() -> None:
    target = PromotionRecord.of(None, "r1").promoted(promotion(), PageWrites(), [], at=AT)
    request = PromotionRecord.of(None, "override-1").overridden(
        target,
        override={"by": "oncall", "reason": "flaky", "request": "override-1"},
        at=AT,
        manifest_sha256=DIGEST,
        actor="oncall",
    )
    assert request.state is State.PROMOTED
    assert request.override == {
        "by": "oncall",
        "reason": "flaky",
        "request": "override-1",
        "target": "r1",
    }
    assert request.message == "override applied: run r1 promoted"
    assert request.commit == target.commit
