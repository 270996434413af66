"""What `wheelgate status` and `wheelgate runs` print for people."""

from __future__ import annotations

from wheelgate.core.records import FileOutcome, PromotionRecord, SetOutcome, State
from wheelgate.status.state import Decision, DirectoryStatus, Rejection, StatusState
from wheelgate.status.summary import (
    MAX_FILES_SHOWN,
    recent_decisions,
    render_decisions,
    render_run,
)

A, B = "v2/gfx94X-dcgpu", "v2/gfx950-dcgpu"


def decision(run_id: str, at: str, state: State, reason: str | None = None) -> Decision:
    return Decision(run_id=run_id, state=state, reason=reason, message=f"{run_id} said", at=at)


STATE = StatusState(
    directories={
        A: DirectoryStatus(
            decisions=[
                decision("3", "2026-11-30T03:00:00Z", State.REJECTED, "tests-failed"),
                decision("1", "2026-11-30T01:00:00Z", State.PROMOTED),
            ]
        ),
        B: DirectoryStatus(decisions=[decision("2", "2026-11-30T02:00:00Z", State.PROMOTED)]),
    },
    rejections=[
        # The same rejection as directory A's (kept once), and one of a whole manifest
        Rejection(run_id="3", index=A, reason="tests-failed", at="2026-11-30T03:00:00Z"),
        Rejection(run_id="4", reason="invalid-json", message="bad", at="2026-11-30T04:00:00Z"),
    ],
)


def test_recent_decisions_are_newest_first_once_each() -> None:
    rows = recent_decisions(STATE)
    assert [(r.run_id, r.index) for r in rows] == [("4", None), ("3", A), ("2", B), ("1", A)]


def test_recent_decisions_filter_by_directory_state_and_count() -> None:
    assert [r.run_id for r in recent_decisions(STATE, index=A)] == ["3", "1"]
    assert [r.run_id for r in recent_decisions(STATE, decided=State.PROMOTED)] == ["2", "1"]
    assert [r.run_id for r in recent_decisions(STATE, limit=2)] == ["4", "3"]
    assert recent_decisions(STATE, decided=State.PENDING) == []


def test_the_table_has_one_row_per_decision_under_a_header() -> None:
    header, *rows = render_decisions(recent_decisions(STATE)).splitlines()
    assert header.split() == ["decided", "state", "run", "index", "reason:", "message"]
    assert rows[0].split() == [
        "2026-11-30",
        "04:00",
        "UTC",
        "rejected",
        "4",
        "-",
        "invalid-json:",
        "bad",
    ]
    assert rows[1].split()[3:] == ["rejected", "3", A, "tests-failed:", "3", "said"]
    assert render_decisions([]) == "no decisions recorded (yet) that match"


def test_a_run_summary_shows_each_set_with_its_tests_and_files() -> None:
    files = [
        FileOutcome(filename=f"t-{n}-py3-none-any.whl", sha256="0" * 64, size=2048,
                    action="copied", evidence=["smoke"])
        for n in range(MAX_FILES_SHOWN + 3)
    ]  # fmt: skip
    record = PromotionRecord(
        run_id="5",
        state=State.PROMOTED,
        commit="c" * 40,
        manifest_sha256="ab" * 32,
        decided_at="2026-11-30T05:00:00Z",
        sets=[
            SetOutcome(
                index=A,
                state=State.PROMOTED,
                files=files,
                tests=[{"name": "smoke", "result": "passed", "url": "https://ci/1"}],
            )
        ],
    )
    text = render_run("5", record, record_url="s3://staging/records/5.json")
    lines = text.splitlines()
    assert lines[0] == "run 5: promoted"
    assert (
        lines[1] == f"  decided 2026-11-30 05:00 UTC; commit {'c' * 40}; manifest sha256 {'ab' * 8}"
    )
    assert f"{A}: promoted" in lines
    assert "  test smoke: passed  https://ci/1" in lines
    assert "  file t-0-py3-none-any.whl  2.0 KiB  copied, shipped on smoke" in lines
    assert "  ... and 3 more files (--json)" in lines
    assert lines[-1] == "record: s3://staging/records/5.json"


def test_a_pending_run_and_the_manifest_asked_about() -> None:
    text = render_run(
        "6",
        None,
        record_url="s3://staging/records/6.json",
        pending_message="manifest written; waiting for the promoter",
        manifest_decision={"manifest_sha256": "cd" * 32, "state": "pending", "reason": None,
                           "message": "no decision about this manifest yet"},
    )  # fmt: skip
    assert text.splitlines()[:3] == [
        "run 6: pending",
        "  manifest written; waiting for the promoter",
        f"  manifest {'cd' * 8} (asked about): pending: no decision about this manifest yet",
    ]
