"""Histories and a fake installer for the bisect unit tests.

A history is a list of :class:`HistoryRun` built in commit order; :class:`FakeInstaller`
plays the installer seam (plan, fetch, install) with a cache that counts downloads, refuses
the runs it is told to skip, and writes into the venv the exit code the run's build gives the
command under test (``EXIT_FILE``), which :data:`SHELL_COMMAND` exits with.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from wheelgate.bisect.run_installer import (
    SKIP_EXPIRED,
    SKIP_HASH_MISMATCH,
    SKIP_INSTALL_FAILED,
    SKIP_MISSING_FILE,
    SKIP_MISSING_PROJECT,
    InstallPlan,
    PlannedFile,
    SkipRun,
)
from wheelgate.core.timestamps import upload_time
from wheelgate.history.model import CommitTimeBy, HistoryFile, HistoryRun, RunState

INDEX = "v2/gfx94X-dcgpu"
START = datetime(2026, 3, 1, 2, 0, tzinfo=UTC)
#: The file in the venv holding the exit the planted build gives the command.
EXIT_FILE = "exit-code"
#: A real command: exit with what the installed build says.
SHELL_COMMAND = ("sh", "-c", f'exit "$(cat "$VIRTUAL_ENV/{EXIT_FILE}")"')
#: Skips the planner, the fetch and the install each report.
PLAN_SKIPS = {SKIP_MISSING_PROJECT, SKIP_EXPIRED}
FETCH_SKIPS = {SKIP_MISSING_FILE, SKIP_HASH_MISMATCH}
INSTALL_SKIPS = {SKIP_INSTALL_FAILED}


def commit_of(n: int) -> str:
    """A commit whose hash does not follow ``n``'s order."""
    return hashlib.sha1(f"commit {n}".encode()).hexdigest()  # noqa: S324 - a name, not a seal


def history_run(
    n: int,
    *,
    run_id: str | None = None,
    commit: str | None = None,
    attempt: int = 1,
    state: RunState = RunState.PROMOTED,
    reasons: tuple[str, ...] = (),
    staged: datetime | None = None,
    commit_time: datetime | None = None,
    version: str | None = None,
) -> HistoryRun:
    """The run of the ``n``-th commit, staged ``n`` hours after :data:`START`, its wheel's
    version a local label holding the commit's hash (out of order on purpose)."""
    sha = commit or commit_of(n)
    staged = staged or START + timedelta(hours=n)
    version = version or f"2.7.0a0+rocm7.0.0.dev0.{sha[:8]}"
    wheel = f"torch-{version}-cp312-cp312-linux_x86_64.whl"
    rid = run_id or str(1000 + n)
    return HistoryRun(
        run_id=rid,
        attempt=attempt,
        index=INDEX,
        commit=sha,
        commit_time=upload_time(commit_time or staged - timedelta(minutes=30)),
        commit_time_by=CommitTimeBy.REPORTER,
        staged_at=upload_time(staged),
        reported_at=upload_time(staged + timedelta(minutes=20)),
        decided_at=None if state is RunState.STAGED else upload_time(staged + timedelta(hours=1)),
        state=state,
        reasons=reasons,
        files=(
            HistoryFile(
                filename=wheel,
                project="torch",
                version=version,
                sha256=hashlib.sha256(wheel.encode()).hexdigest(),
                size=1000,
                staging_key=f"runs/{rid}/{INDEX}/{wheel}",
            ),
        ),
    )


def linear_history(count: int) -> list[HistoryRun]:
    """``count`` runs of ``count`` commits, oldest first."""
    return [history_run(n) for n in range(count)]


def newest_first(runs: list[HistoryRun]) -> list[HistoryRun]:
    return sorted(runs, key=lambda r: r.staged_at, reverse=True)


class FakeInstaller:
    """The installer seam over nothing: ``skips`` (run id -> reason) refuse a run at the step
    that reason belongs to; ``bad_from`` runs (ids) make the command fail; ``exits`` give a
    run's build another exit. Counts plans, fetches, downloads (a cache keyed by SHA-256) and
    installs, per run id."""

    def __init__(
        self,
        *,
        skips: dict[str, str] | None = None,
        bad: set[str] | None = None,
        exits: dict[str, int] | None = None,
    ) -> None:
        self.skips = skips or {}
        self.bad = bad or set()
        self.exits = exits or {}
        self.cache: set[str] = set()
        self.fetches: Counter[str] = Counter()
        self.downloads: Counter[str] = Counter()
        self.installs: Counter[str] = Counter()
        #: The ``as_test`` of every plan asked for.
        self.as_tests: list[str | None] = []
        self._lock = threading.Lock()

    def _refuse(self, run: HistoryRun, reasons: set[str]) -> None:
        reason = self.skips.get(run.run_id)
        if reason in reasons:
            raise SkipRun(reason, f"run {run.run_id}: planted {reason}")

    def plan(self, run: HistoryRun, *, as_test: str | None = None) -> InstallPlan:
        with self._lock:
            self.as_tests.append(as_test)
        self._refuse(run, PLAN_SKIPS)
        files = tuple(PlannedFile(f.filename, f.sha256, f.size, f.staging_key) for f in run.files)
        return InstallPlan(run=run, files=files, test=as_test)

    def fetch(self, plan: InstallPlan) -> int:
        self._refuse(plan.run, FETCH_SKIPS)
        with self._lock:
            self.fetches[plan.run.run_id] += 1
            new = [f.sha256 for f in plan.files if f.sha256 not in self.cache]
            self.cache.update(new)
            self.downloads[plan.run.run_id] += len(new)
        return len(new)

    def install(self, plan: InstallPlan, venv: Path) -> None:
        with self._lock:
            self.installs[plan.run.run_id] += 1
        self._refuse(plan.run, INSTALL_SKIPS)
        venv.mkdir(parents=True, exist_ok=True)
        code = self.exits.get(plan.run.run_id, 1 if plan.run.run_id in self.bad else 0)
        (venv / EXIT_FILE).write_text(str(code))
