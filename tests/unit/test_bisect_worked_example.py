"""docs/bisect.md's worked example is what ``wheelgate bisect run`` prints: its command is run
as written over the history it describes (promoted runs, a run whose only test failed, one
whose files expired, one never reported), planned by the real planner, and the lines printed
are the example's, but for the seconds and the number of files downloaded."""

from __future__ import annotations

import re
import shlex
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from packaging.tags import Tag

from tests.unit.bisect_world import SHELL_COMMAND, FakeInstaller, history_run, newest_first
from wheelgate.bisect.plan import Sources, plan_run
from wheelgate.bisect.run_installer import InstallPlan
from wheelgate.cli import bisect as cli_bisect
from wheelgate.cli.main import main
from wheelgate.core.manifest import InstalledFile
from wheelgate.core.timestamps import upload_time
from wheelgate.history.model import CommitTimeBy, HistoryRun, RunState, TestRecord

DOC = Path(__file__).resolve().parents[2] / "docs" / "bisect.md"
#: The day each run of the example was committed (and staged, half an hour later).
DAYS = {1230: 2, 1231: 3, 1232: 3, 1233: 3, 1234: 3, 1235: 4, 1236: 4, 1237: 5, 1238: 5}
REJECTED = {1234, 1236}
NEVER_REPORTED = 1235
EXPIRED = 1236
#: The runs whose build crashes on import.
BAD = {1235, 1236, 1237, 1238}
NOW = datetime(2026, 3, 30, tzinfo=UTC)
TAGS = frozenset({Tag("cp312", "cp312", "linux_x86_64")})


def example_blocks() -> tuple[list[str], list[str]]:
    """The worked example's command (its argv) and the lines it shows printed."""
    text = DOC.read_text()
    section = text[text.index("## A worked example") : text.index("## Naming runs")]
    command = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    printed = re.search(r"```text\n(.*?)```", section, re.DOTALL)
    assert command is not None
    assert printed is not None
    return shlex.split(command.group(1).replace("\\\n", " ")), printed.group(1).splitlines()


def example_run(number: int) -> HistoryRun:
    n = number - 1230
    day = datetime(2026, 3, DAYS[number], 9 + n, tzinfo=UTC)
    run = history_run(n, run_id=str(number), staged=day + timedelta(minutes=30), commit_time=day)
    file = run.files[0]
    if number == EXPIRED:
        file = file.model_copy(update={"expires_at": upload_time(NOW - timedelta(days=1))})
    smoke = TestRecord(
        name="smoke",
        result="failed" if number in REJECTED else "passed",
        installed=(InstalledFile(sha256=file.sha256, filename=file.filename),),
    )
    if number == NEVER_REPORTED:
        return run.model_copy(
            update={
                "state": RunState.STAGED,
                "commit_time_by": CommitTimeBy.BUILD,
                "reported_at": None,
                "decided_at": None,
                "files": (file,),
            }
        )
    return run.model_copy(
        update={
            "state": RunState.REJECTED if number in REJECTED else RunState.PROMOTED,
            "reasons": ("tests-failed",) if number in REJECTED else (),
            "tests": (smoke,),
            "files": (file,),
        }
    )


class PlanningInstaller(FakeInstaller):
    """The fake installer, planning each run with the real planner."""

    def plan(self, run: HistoryRun, *, as_test: str | None = None) -> InstallPlan:
        return plan_run(
            run,
            tags=TAGS,
            sources=Sources("http://staging.invalid/"),
            now=NOW,
            projects=("torch",),
            as_test=as_test,
        )


def masked(line: str) -> str:
    """``line`` but for the seconds a step took and the number of files it downloaded."""
    return re.sub(r"\d+ s →", "N s →", re.sub(r"downloaded \d+", "downloaded N", line))


def test_the_worked_example_is_what_bisect_run_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Given the history the example describes, and its command as written
    argv, printed = example_blocks()
    runs = newest_first([example_run(n) for n in DAYS])
    installer = PlanningInstaller(bad={str(n) for n in BAD})
    monkeypatch.setattr(cli_bisect, "read_runs", lambda args, index, url: runs)
    monkeypatch.setattr(cli_bisect, "build_installer", lambda chosen, **choice: installer)
    monkeypatch.setattr(cli_bisect, "pin_ends", lambda installer, ends, **how: None)
    monkeypatch.setenv("WHEELGATE_STAGING_BASE_URL", "http://staging.invalid/")
    monkeypatch.delenv("WHEELGATE_ALLOWED_INDEXES", raising=False)
    monkeypatch.chdir(tmp_path)
    assert argv[:3] == ["wheelgate", "bisect", "run"]
    command = argv.index("--")

    # When it runs, the crash check standing for python crash.py
    code = main([*argv[1:command], "--", *SHELL_COMMAND])

    # Then it prints the example's lines
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert [masked(line) for line in out] == [masked(line) for line in printed]
