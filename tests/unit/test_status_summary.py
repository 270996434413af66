"""What `wheelgate status` and `wheelgate runs` print for people."""

from __future__ import annotations

from wheelgate.core.records import FileOutcome, PromotionRecord, SetOutcome, StagedFile, State
from wheelgate.status.state import (
    Decision,
    DirectoryStatus,
    PromotedRun,
    Rejection,
    StatusState,
    apply_record,
)
from wheelgate.status.summary import (
    MAX_FILES_SHOWN,
    NO_RUN_PROMOTED,
    recent_decisions,
    render_decisions,
    render_directories,
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
    rows_with_a_commit = [
        r.model_copy(update={"commit": "3" * 40}) if r.run_id == "3" else r
        for r in recent_decisions(STATE)
    ]
    header, *rows = render_decisions(rows_with_a_commit).splitlines()
    assert header.split() == ["decided", "state", "run", "index", "commit", "reason:", "message"]
    assert rows[0].split() == [
        "2026-11-30",
        "04:00",
        "UTC",
        "rejected",
        "4",
        "-",
        "-",
        "invalid-json:",
        "bad",
    ]
    assert rows[1].split()[3:] == ["rejected", "3", A, "3" * 12, "tests-failed:", "3", "said"]
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
    assert text.splitlines()[-1] == "record: none yet (not decided yet)"
    assert "s3://" not in text


def yank_record(run_id: str, at: str, state: State = State.PROMOTED) -> PromotionRecord:
    """A yank of a file of A, as the promoter records it: its pages are A's project page and
    A's archive page (``A/_archive/...``)."""
    return PromotionRecord(
        run_id=run_id,
        state=state,
        reason=None if state is State.PROMOTED else "not-released",
        message="yanked",
        decided_at=at,
        pages=[f"{A}/t/index.html", f"{A}/_archive/t/index.html"],
    )


def test_a_yank_is_listed_once_under_its_directory_never_under_its_archive() -> None:
    # Given a yank and a refused yank folded into the status site's state, as the promoter does
    state = apply_record(STATE, yank_record("yank-1", "2026-11-30T05:00:00Z"))
    state = apply_record(state, yank_record("yank-2", "2026-11-30T06:00:00Z", State.REJECTED))
    # When the recent decisions are listed
    rows = recent_decisions(state)
    # Then each yank is one row of A, and no row names an archive
    assert [(r.run_id, r.index) for r in rows[:2]] == [("yank-2", A), ("yank-1", A)]
    assert all("_archive" not in (r.index or "") for r in rows)
    assert [r.run_id for r in recent_decisions(state, index=A)][:2] == ["yank-2", "yank-1"]


def test_every_configured_directory_is_shown_with_its_latest_run_or_none() -> None:
    latest = PromotedRun(
        run_id="1", commit="c" * 40, decided_at="2026-11-30T01:00:00Z", file_count=2
    )
    state = STATE.model_copy(
        update={
            "directories": {
                **STATE.directories,
                A: STATE.directories[A].model_copy(update={"latest": latest}),
                f"{A}/_archive": DirectoryStatus(decisions=STATE.directories[A].decisions),
            }
        }
    )
    text = render_directories(state, [A, "v2/gfx1151"])
    assert text.splitlines() == [
        f"v2/gfx1151: {NO_RUN_PROMOTED}",
        f"{A}: run 1 promoted 2026-11-30 01:00 UTC, commit {'c' * 12}, 2 files",
        f"{B}: {NO_RUN_PROMOTED}",
    ]


def test_a_run_staged_and_never_reported_shows_what_is_staged() -> None:
    staged = {
        "index": A,
        "index_url": "https://staging.example/runs/7/v2/gfx94X-dcgpu/",
        "index_key": "runs/7/v2/gfx94X-dcgpu/",
        "commit": "d" * 40,
        "files": [{"filename": "t-1.0-py3-none-any.whl", "sha256": "e" * 64, "size": 2048}],
    }
    text = render_run(
        "7",
        None,
        record_url="s3://staging/records/7.json",
        pending_message="staged, not reported yet",
        staged=[staged],
    )
    lines = text.splitlines()
    assert lines[:2] == ["run 7: pending", "  staged, not reported yet"]
    assert f"{A}: staged, 1 file, commit {'d' * 40}" in lines
    assert "  index: https://staging.example/runs/7/v2/gfx94X-dcgpu/" in lines
    assert f"  file t-1.0-py3-none-any.whl  2.0 KiB  sha256 {'e' * 64}" in lines


def test_an_unknown_run_says_so() -> None:
    text = render_run(
        "8",
        None,
        record_url="s3://staging/records/8.json",
        pending_message="unknown run",
        pending_state="unknown",
    )
    assert text.splitlines()[:2] == ["run 8: unknown", "  unknown run"]
    assert text.splitlines()[-1] == "record: none (no such run)"
    assert "s3://" not in text


def test_a_promoted_yank_request_says_what_it_did_to_which_file() -> None:
    record = PromotionRecord(
        run_id="yank-20261130-abc",
        state=State.PROMOTED,
        message=f"yanked t-1.0-py3-none-any.whl in {A} (reason: broken)",
        decided_at="2026-11-30T05:00:00.000000Z",
    )
    lines = render_run(record.run_id, record, record_url="s3://staging/r.json").splitlines()
    assert lines[:2] == [
        f"yanked t-1.0-py3-none-any.whl in {A} (reason: broken)",
        "  request yank-20261130-abc: promoted",
    ]


def test_a_rejected_set_shows_the_files_it_staged() -> None:
    record = PromotionRecord(
        run_id="6",
        state=State.REJECTED,
        reason="tests-failed",
        sets=[
            SetOutcome(
                index=A,
                state=State.REJECTED,
                reason="tests-failed",
                staged=[StagedFile(filename="t-1-py3-none-any.whl", sha256="1" * 64, size=2048)],
            )
        ],
    )
    lines = render_run("6", record, record_url="s3://staging/records/6.json").splitlines()
    assert "  files: none released" in lines
    assert f"  staged t-1-py3-none-any.whl  2.0 KiB  sha256 {'1' * 64}" in lines
