"""What every tier shares: how the suite splits across pytest-xdist workers, the check that
keeps the ``slow`` marking honest, and the tables infra tests print.

``make test`` and ``make quick`` run the tests on one worker per core with ``--dist
loadscope`` and the scopes ``worker_scope`` gives: a scope is the unit a worker takes whole.
Each test module is a scope of its own (its module-scoped fixtures are set up once), except
where tests share a session fixture that costs minutes: one worker takes all of them, so it is
built once (``SHARED_SCOPES``). (pytest-xdist's ``xdist_group`` mark would say the same, but
its ``loadgroup`` mode rewrites a private node id that pytest 9 no longer reads, so the groups
are given to its scheduler here.) Every worker is a process of its own, with its own
in-process local stack and ``wheelgate local`` on ports the kernel chose (port 0), its own
temporary directories and its own environment, so no two workers share a port, a bucket or a
file.

A test that is not marked ``slow`` runs in ``make quick``, which must stay under 90 s on two
cores. At the end of a run, the terminal summary names every test not marked ``slow`` whose
call took longer than ``SLOW_CALL_SECONDS``: mark it, or make it fast.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.infra.summary import SUMMARY_KEY

#: Where a worker hands its tables for the terminal summary to the controller.
_WORKER_SUMMARY = "wheelgate-summary"

#: Path prefixes (from the repository root) whose tests one worker runs: ``tests/infra`` reads
#: the syntheses of tests/infra/conftest.py (session fixtures, one to two minutes each), Ceph's
#: tests one Ceph RGW cluster.
SHARED_SCOPES = {
    "tests/infra/": "infra-syntheses",
    "tests/integration/test_ceph_immutability.py": "ceph",
}

#: Scopes that keep one worker busy for a minute or more, longest first: they are handed out
#: before any other, so that no worker starts one of them when the rest of the suite is done
#: and the others idle (xdist orders scopes by their number of tests, which put the example
#: workflows' four long tests last). The rest follow by their number of tests, as xdist has it.
LONG_SCOPES = (
    "tests/integration/test_example_workflow.py",
    "infra-syntheses",
    "tests/integration/test_concurrency.py",
    "tests/integration/test_bisect_end_to_end.py",
    "ceph",
    "tests/integration/test_actions.py",
    "tests/integration/test_decoy.py",
)

#: A test's call (not its fixtures' set-up, which the first test of a session pays for all)
#: above this many seconds belongs to ``make test`` alone: marked ``slow``.
SLOW_CALL_SECONDS = 3.0


def worker_scope(nodeid: str) -> str:
    """The scope a test belongs to: its module's path, or the shared scope holding it."""
    path = nodeid.split("::", 1)[0]
    for prefix, scope in SHARED_SCOPES.items():
        if path.startswith(prefix):
            return scope
    return path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class WorkerScopeScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return worker_scope(nodeid)

    # The workers collect in scheduled_order (pytest_collection_modifyitems): xdist keeps it
    # instead of sorting the scopes again. (It must be the workers' order: xdist hands a
    # worker its tests by their index in that worker's own collection.)
    config.option.loadscopereorder = False
    return WorkerScopeScheduling(config, log)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):
        return  # one process: the collection order, as always
    position = {nodeid: i for i, nodeid in enumerate(scheduled_order([i.nodeid for i in items]))}
    items.sort(key=lambda item: position[item.nodeid])


def scheduled_order(nodeids: list[str]) -> list[str]:
    """``nodeids`` grouped by scope: :data:`LONG_SCOPES` first, in their order, then the other
    scopes by their number of tests, most first; each scope's tests in collection order."""
    scopes: dict[str, list[str]] = {}
    for nodeid in nodeids:
        scopes.setdefault(worker_scope(nodeid), []).append(nodeid)

    def rank(item: tuple[str, list[str]]) -> tuple[int, int]:
        scope, tests = item
        first = LONG_SCOPES.index(scope) if scope in LONG_SCOPES else len(LONG_SCOPES)
        return first, -len(tests)

    return [nodeid for _, tests in sorted(scopes.items(), key=rank) for nodeid in tests]


class UnmarkedSlowCalls:
    """Collects the calls over ``SLOW_CALL_SECONDS`` of tests not marked ``slow``, where the
    reports arrive (in the controller under xdist, so it sees every worker's), and names them
    in the terminal summary."""

    def __init__(self) -> None:
        self.found: list[tuple[str, float]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" or "slow" in report.keywords:
            return
        if report.duration > SLOW_CALL_SECONDS:
            self.found.append((report.nodeid, report.duration))

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.found:
            return
        terminalreporter.write_sep(
            "-", f"not marked slow, yet a call over {SLOW_CALL_SECONDS:g} s: mark it or speed it up"
        )
        for nodeid, seconds in sorted(self.found, key=lambda found: -found[1]):
            terminalreporter.write_line(f"{seconds:6.1f} s  {nodeid}")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(UnmarkedSlowCalls(), "wheelgate-unmarked-slow-calls")


def pytest_sessionfinish(session: pytest.Session) -> None:
    # In an xdist worker: the tables its tests published (tests/infra/summary.py) go to the
    # controller, which prints the summary.
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output[_WORKER_SUMMARY] = dict(session.config.stash.get(SUMMARY_KEY, {}))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    tables = getattr(node, "workeroutput", {}).get(_WORKER_SUMMARY, {})
    node.config.stash.setdefault(SUMMARY_KEY, {}).update(tables)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    for title, text in config.stash.get(SUMMARY_KEY, {}).items():
        terminalreporter.write_sep("-", title)
        terminalreporter.write_line(text.rstrip())
