"""A bisect as people read it: one line per step, then what it found. Pure."""

from __future__ import annotations

from wheelgate.bisect.commits import short
from wheelgate.bisect.result import BisectResult, ResultRun
from wheelgate.bisect.search import Verdict
from wheelgate.bisect.session import Step
from wheelgate.history.model import InstallRoute, RunInstall


def _state(state: str, reasons: tuple[str, ...]) -> str:
    return f"{state}({','.join(reasons)})" if reasons else state


def installed_as(install: RunInstall | None) -> str:
    """What a step installed, for a person: ``test 'smoke'`` (that test's evidence),
    ``offer``, or nothing (nothing was planned, or no test is known)."""
    if install is None:
        return ""
    if install.route is InstallRoute.OFFER:
        return "offer"
    return f"test {install.test!r}" if install.test else ""


def step_line(step: Step) -> str:
    """``[3/~6] run 1234 · 515115e · 2026-03-02 · rejected(tests-failed) · test 'smoke' ·
    cached · 41 s → bad``: the step of the estimated total, the run, its commit, the day it
    was staged, its state, what it installed (which test's evidence, or ``offer``), what was
    downloaded, the seconds taken and the verdict (or why it was skipped)."""
    if step.downloaded is None:
        fetched = "not fetched"
    elif step.downloaded == 0:
        fetched = "cached"
    else:
        fetched = f"downloaded {step.downloaded}"
    verdict = f"skip ({step.reason})" if step.verdict is Verdict.SKIP else step.verdict.value
    if step.exit_code == 124 and step.message:
        verdict += " (timed out)"
    attempt = f" attempt {step.attempt}" if step.attempt > 1 else ""
    route = installed_as(step.install)
    return (
        f"[{step.number}/~{step.estimated_total}] run {step.run_id}{attempt} · "
        f"{short(step.commit)} · {step.staged_at[:10]} · {_state(step.state, step.reasons)} · "
        + (f"{route} · " if route else "")
        + f"{fetched} · {step.seconds:.0f} s → {verdict}"
    )


def _run(run: ResultRun) -> str:
    return (
        f"run {run.run_id} · {short(run.commit)} · {run.staged_at[:10]} · "
        f"{_state(run.state, run.reasons)}"
    )


def summary(result: BisectResult) -> list[str]:
    """The lines that end a bisect: the conclusion, the first bad and last good run, the
    compare URL, the runs it could be, the skipped runs with their reasons."""
    lines = [result.message]
    if result.first_bad is not None and len(result.could_be) <= 1:
        lines.append(f"first bad: {_run(result.first_bad)} ({result.first_bad.commit})")
    elif result.could_be:
        lines.append("could be any of:")
        lines += [f"  {_run(run)} ({run.commit})" for run in result.could_be]
    if result.last_good is not None:
        lines.append(f"last good: {_run(result.last_good)} ({result.last_good.commit})")
    if result.compare_url:
        lines.append(f"compare: {result.compare_url}")
    if result.skipped:
        lines.append("skipped:")
        lines += [f"  {_run(run)}: {run.reason}: {run.message}" for run in result.skipped]
    return lines
