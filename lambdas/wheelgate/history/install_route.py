"""How a run installs exactly (:class:`~wheelgate.history.model.RunInstall`): the one rule the
run history, its page and ``wheelgate bisect`` share. Pure.

- A run with a test that recorded what it installed installs that evidence: a passed test's
  first, else a failed one's (exactly the environment that failed), in the run's order.
- A run never reported installs its offer: its staged files and the nightly files its own
  index offered beside them when staged (:mod:`wheelgate.history.offer`), unless its offer
  could not be checked when its entry was folded (that reason is kept).
- Any other run cannot be installed exactly, and says why.
"""

from __future__ import annotations

from typing import Final

from wheelgate.core.manifest import Outcome
from wheelgate.history.model import HistoryRun, InstallRoute, RunInstall, RunState, TestRecord

#: The results whose evidence installs a run, in the order they are tried.
EVIDENCE_RESULTS: Final = (Outcome.PASSED, Outcome.FAILED)


def evidence_tests(run: HistoryRun) -> list[TestRecord]:
    """The tests of ``run`` whose evidence can install it, in the order they are tried: those
    that passed, then those that failed, each in the run's order; only tests that recorded
    the files they installed."""
    return [
        test
        for result in EVIDENCE_RESULTS
        for test in run.tests
        if test.result == result and test.installed
    ]


def run_install(run: HistoryRun) -> RunInstall:
    """How ``run`` installs (module docstring): ``evidence`` with the test tried first,
    ``offer``, or ``none`` with the reason."""
    tests = evidence_tests(run)
    if tests:
        return RunInstall(route=InstallRoute.EVIDENCE, test=tests[0].name)
    if run.state is not RunState.STAGED:
        tested = ", ".join(f"{t.name} ({t.result})" for t in run.tests) or "none"
        return RunInstall(
            route=InstallRoute.NONE,
            reason=f"reported, but no passed or failed test recorded what it installed "
            f"(its tests: {tested})",
        )
    kept = run.install
    if kept is not None and kept.route is InstallRoute.NONE and kept.reason:
        return kept
    return RunInstall(route=InstallRoute.OFFER)


def with_install(run: HistoryRun) -> HistoryRun:
    """``run`` saying how it installs (:func:`run_install`)."""
    install = run_install(run)
    return run if run.install == install else run.model_copy(update={"install": install})
