"""A bisect's steps: probe the candidate the search names, install its run, run the command,
record the verdict; until the search ends. The state is saved after every step.

WheelGate never blames a run for its own trouble: whatever keeps the installer from
installing a run exactly (:class:`~wheelgate.bisect.run_installer.SkipRun`) skips the run, with its
reason; only the command's exit can make a run bad.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from wheelgate.bisect.command import CommandResult
from wheelgate.bisect.prefetch import Prefetch, next_possible
from wheelgate.bisect.run_installer import SKIP_BY_COMMAND, RunInstaller, SkipRun
from wheelgate.bisect.search import Outcome, Verdict
from wheelgate.bisect.session import Session, SessionStore, Step
from wheelgate.history.model import HistoryRun, RunInstall

#: Runs the command under test in a venv.
CommandRunner = Callable[[Path], CommandResult]


def run_bisect(
    session: Session,
    store: SessionStore,
    installer: RunInstaller,
    command: CommandRunner,
    *,
    on_step: Callable[[Step], None] = lambda step: None,
) -> tuple[Session, Outcome]:
    """Probe until the search ends, from where ``session`` stands (a resumed one retests no
    step); each finished step is saved to ``store`` and given to ``on_step``. Returns the
    session and the outcome. Raises :class:`~wheelgate.bisect.command.CommandAborted` when
    the command aborts the bisect (the steps before it are saved)."""
    bisection = session.bisection()
    while (probe := bisection.next_probe()) is not None:
        run = session.candidates[probe]
        upcoming = [session.candidates[i] for i in next_possible(bisection, probe)]
        started = time.monotonic()
        probed = _probe(installer, command, store.venv, run, upcoming, session.args.as_test)
        bisection = bisection.with_verdict(probe, probed.verdict)
        number = len(session.steps) + 1
        step = Step(
            number=number,
            estimated_total=number + bisection.probes_left(),
            candidate=probe,
            run_id=run.run_id,
            attempt=run.attempt,
            commit=run.commit,
            staged_at=run.staged_at,
            state=run.state,
            reasons=run.reasons,
            verdict=probed.verdict,
            reason=probed.reason,
            message=probed.message,
            exit_code=probed.exit_code,
            seconds=round(time.monotonic() - started, 3),
            downloaded=probed.downloaded,
            install=probed.install,
        )
        session = session.with_step(step)
        store.save(session)
        on_step(step)
    outcome = bisection.outcome()
    if outcome is None:  # pragma: no cover - next_probe is None only once the search ended
        raise RuntimeError("the search stopped without an outcome")
    return session, outcome


@dataclass(frozen=True)
class _Probed:
    verdict: Verdict
    reason: str | None = None
    message: str = ""
    exit_code: int | None = None
    downloaded: int | None = None
    install: RunInstall | None = None


def _probe(
    installer: RunInstaller,
    command: CommandRunner,
    venv: Path,
    run: HistoryRun,
    upcoming: Sequence[HistoryRun],
    as_test: str | None,
) -> _Probed:
    """Install ``run`` into ``venv`` (``as_test``: exactly that test's evidence) and run the
    command, fetching ``upcoming`` meanwhile."""
    downloaded: int | None = None
    install: RunInstall | None = None
    try:
        plan = installer.plan(run, as_test=as_test)
        install = RunInstall(route=plan.route, test=plan.test)
        downloaded = installer.fetch(plan)
        installer.install(plan, venv)
    except SkipRun as skip:
        return _Probed(Verdict.SKIP, skip.reason, skip.message, None, downloaded, install)
    prefetch = Prefetch(installer, upcoming, as_test=as_test)
    try:
        result = command(venv)
    finally:
        prefetch.wait()
    if result.verdict is Verdict.SKIP:
        said = "timed out" if result.timed_out else f"exited {result.exit_code}"
        return _Probed(
            Verdict.SKIP,
            SKIP_BY_COMMAND,
            f"the command {said}",
            result.exit_code,
            downloaded,
            install,
        )
    message = "the command timed out" if result.timed_out else ""
    return _Probed(result.verdict, None, message, result.exit_code, downloaded, install)
