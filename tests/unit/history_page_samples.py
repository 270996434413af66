"""Runs of one index directory in every state the history page shows, for its unit tests and
its browser test: promoted (one file in nightly, one only staged), rejected, expired, staged and
never reported, and pending."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from wheelgate.core.layout import NIGHTLY, STAGING
from wheelgate.core.manifest import InstalledFile
from wheelgate.core.timestamps import upload_time
from wheelgate.history.model import (
    HistoryFile,
    HistoryRun,
    OfferedFile,
    RunState,
    TestRecord,
)

INDEX = "v2/gfx94X-dcgpu"
NIGHTLY_URL = "https://nightly.example/"
REPOSITORY_URL = "https://git.example/org/project"
NOW = datetime(2026, 3, 20, 12, 0, tzinfo=UTC)
#: A local label holding a commit hash, as real builds name them: ``+`` must be ``%2B`` in links.
VERSION = "2.7.0a0+rocm7.0.0.dev0"


def at(days_ago: float) -> str:
    return upload_time(NOW - timedelta(days=days_ago))


def sha(n: int) -> str:
    return f"{n:02x}" * 32


def staged_file(
    run_id: str, n: int, *, expires_in_days: float, promoted: bool = False, index: str = INDEX
) -> HistoryFile:
    python = f"cp3{10 + n}"
    filename = f"torch-{VERSION}.{run_id}-{python}-{python}-linux_x86_64.whl"
    return HistoryFile(
        filename=filename,
        project="torch",
        version=f"{VERSION}.{run_id}",
        sha256=sha(n),
        size=632_000_000 + n,
        staging_key=STAGING.artifact(run_id, index, filename),
        nightly_key=NIGHTLY.artifact(index, filename) if promoted else None,
        expires_at=at(-expires_in_days),
    )


def evidence_of(name: str, result: str, *files: HistoryFile) -> TestRecord:
    """Test ``name`` with ``result`` that installed ``files`` (its evidence)."""
    installed = tuple(InstalledFile(sha256=f.sha256, filename=f.filename) for f in files)
    return TestRecord(name=name, result=result, installed=installed)


def history_run(
    run_id: str,
    n: int,
    *,
    state: RunState,
    staged_days_ago: float,
    files: tuple[HistoryFile, ...],
    reasons: tuple[str, ...] = (),
    message: str = "",
    tests: tuple[TestRecord, ...] = (),
    index: str = INDEX,
    offer: tuple[OfferedFile, ...] = (),
) -> HistoryRun:
    decided = state in (RunState.PROMOTED, RunState.REJECTED)
    return HistoryRun(
        run_id=run_id,
        index=index,
        commit=f"{n:x}" * 40 if n < 16 else sha(n)[:40],
        commit_time=at(staged_days_ago + 0.1),
        staged_at=at(staged_days_ago),
        reported_at=at(staged_days_ago - 0.05) if state != RunState.STAGED else None,
        decided_at=at(staged_days_ago - 0.06) if decided else None,
        state=state,
        reasons=reasons,
        message=message,
        tests=tests,
        files=files,
        offer=offer,
    )


#: A test name with no place to break a line: the page must wrap it, not scroll sideways.
LONG_TEST_NAME = "test_" + "unbreakable_name_" * 8


def sample_runs(index: str = INDEX) -> dict[str, HistoryRun]:
    """One run of each kind the page shows, by kind, as of :data:`NOW`, in ``index``."""
    promoted = (
        staged_file("1001", 1, expires_in_days=12, promoted=True, index=index),
        # A staged copy that expired: nightly still holds the bytes.
        staged_file("1001", 2, expires_in_days=-1, promoted=True, index=index),
    )
    rejected = staged_file("1002", 3, expires_in_days=13, index=index)
    pending = staged_file("1004", 6, expires_in_days=13.8, index=index)
    dependency = OfferedFile(
        filename="rocm_sdk-7.0.0-py3-none-linux_x86_64.whl",
        project="rocm-sdk",
        sha256=sha(9),
        nightly_key=NIGHTLY.artifact(index, "rocm_sdk-7.0.0-py3-none-linux_x86_64.whl"),
    )
    return {
        "promoted": history_run(
            "1001",
            1,
            index=index,
            state=RunState.PROMOTED,
            staged_days_ago=2,
            files=promoted,
            tests=(evidence_of("smoke", "passed", promoted[0]),),
        ),
        "rejected": history_run(
            "1002",
            3,
            index=index,
            state=RunState.REJECTED,
            staged_days_ago=1,
            files=(rejected,),
            reasons=("tests-failed",),
            message="test smoke failed",
            # Its only test that recorded what it installed failed: that is its evidence.
            tests=(
                evidence_of("smoke", "failed", rejected),
                TestRecord(name=LONG_TEST_NAME, result="passed"),
            ),
        ),
        "expired": history_run(
            "0900",
            4,
            index=index,
            state=RunState.REJECTED,
            staged_days_ago=40,
            files=(staged_file("0900", 4, expires_in_days=-26, index=index),),
            reasons=("tests-failed",),
            tests=(TestRecord(name="smoke", result="failed"),),
        ),
        "staged": history_run(
            "1003",
            5,
            index=index,
            state=RunState.STAGED,
            staged_days_ago=0.5,
            files=(staged_file("1003", 5, expires_in_days=13.5, index=index),),
            offer=(dependency,),
        ),
        "pending": history_run(
            "1004",
            6,
            index=index,
            state=RunState.PENDING,
            staged_days_ago=0.2,
            files=(pending,),
            tests=(evidence_of("smoke", "passed", pending),),
        ),
    }


def nightly_runs(count: int, index: str = INDEX) -> list[HistoryRun]:
    """``count`` nightlies of ``index``, one every 12 hours back from :data:`NOW`, as a busy
    directory holds them: GitHub-sized run ids, three wheels each, two tests; every fifth
    rejected for a failed test, the rest promoted. Each installs as its smoke test's evidence
    but a rejected run older than staging's two weeks, whose files expired."""
    runs = []
    for n in range(count):
        run_id = str(13_900_000_000 + n * 137)
        days_ago = (count - n) / 2
        promoted = n % 5 != 0
        files = tuple(
            staged_file(run_id, n % 7 + k, expires_in_days=14 - days_ago, promoted=promoted,
                        index=index)
            for k in range(3)
        )  # fmt: skip
        result = "passed" if promoted else "failed"
        runs.append(
            history_run(
                run_id,
                n + 16,
                index=index,
                state=RunState.PROMOTED if promoted else RunState.REJECTED,
                staged_days_ago=days_ago,
                files=files,
                reasons=() if promoted else ("tests-failed",),
                message="" if promoted else "test smoke failed",
                tests=(
                    evidence_of("smoke", result, *files),
                    TestRecord(name="unit-gpu", result="passed"),
                ),
            )
        )
    return runs
