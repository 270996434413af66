"""A run a break-glass override promoted is its directory's latest promoted run, its promotion
listed as an override; the override request's own record adds no directory of its own."""

from __future__ import annotations

from tests.unit.test_status_page import INDEX, fold, promoted, rejected
from wheelgate.core.records import PromotionRecord, State
from wheelgate.status.summary import recent_decisions, render_decisions

BY = {"by": "AWS:AROABREAKGLASS:oncall", "reason": "GPU runners down", "request": "override-r-x"}


def overridden(run_id: str, n: int) -> PromotionRecord:
    """``run_id``'s record once an override promoted it (after its rejection at ``n - 1``)."""
    record = promoted(run_id, n)
    history = [*rejected(run_id, n - 1).history, *record.history]
    return record.model_copy(update={"override": BY, "history": history})


def request_record(n: int) -> PromotionRecord:
    record = PromotionRecord(
        run_id="override-r-x", state=State.PROMOTED, message="override applied: run r promoted",
        decided_at=f"2026-11-30T04:00:{n:02d}.000000Z", override={**BY, "target": "r"},
    )  # fmt: skip
    return record.with_decision(
        at=record.decided_at or "", state=State.PROMOTED, reason=None, message=record.message,
        manifest_sha256=None, actor=None,
    )  # fmt: skip


def test_an_overridden_run_is_the_latest_and_its_promotion_an_override() -> None:
    state = fold(rejected("r", 1), overridden("r", 2), request_record(3))
    latest = state.directories[INDEX].latest
    assert latest is not None
    assert latest.run_id == "r"
    rows = recent_decisions(state)
    assert [(r.run_id, r.kind, r.state.value) for r in rows] == [
        ("r", "override", "promoted"),
        ("r", "run", "rejected"),
    ]
    assert "r (override)" in render_decisions(rows)
    assert list(state.directories) == [INDEX]


def test_a_replay_refused_after_an_override_is_a_run_rejection() -> None:
    replay = overridden("r", 2).with_decision(
        at="2026-11-30T04:00:09.000000Z", state=State.REJECTED, reason="replay-conflict",
        message="already promoted", manifest_sha256=None, actor=None,
    )  # fmt: skip
    state = fold(overridden("r", 2), replay)
    assert [(r.kind, r.reason) for r in state.rejections] == [("run", "replay-conflict")]
