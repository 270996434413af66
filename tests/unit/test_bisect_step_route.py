"""Each step says what it installed, from the plan: which test's evidence, or the run's
offer, in the session, the step line and the JSON result."""

from __future__ import annotations

import json
from pathlib import Path

from tests.unit.bisect_world import FakeInstaller, linear_history
from tests.unit.test_bisect_runner import session_of, shell
from wheelgate.bisect.render import step_line
from wheelgate.bisect.result import bisect_result
from wheelgate.bisect.run_installer import InstallPlan
from wheelgate.bisect.runner import run_bisect
from wheelgate.bisect.session import SessionStore
from wheelgate.history.model import HistoryRun, InstallRoute, RunInstall

OFFERED = "1004"


class RoutedInstaller(FakeInstaller):
    """A fake installer whose plans name test ``smoke``, or the offer for :data:`OFFERED`."""

    def plan(self, run: HistoryRun, *, as_test: str | None = None) -> InstallPlan:
        plan = super().plan(run, as_test=as_test)
        if run.run_id == OFFERED:
            return InstallPlan(run=run, files=plan.files, route=InstallRoute.OFFER)
        return InstallPlan(run=run, files=plan.files, test=as_test or "smoke")


def test_each_step_records_and_shows_the_test_or_the_offer_it_installed(tmp_path: Path) -> None:
    runs = linear_history(8)
    installer = RoutedInstaller(bad={r.run_id for r in runs[5:]})

    session, outcome = run_bisect(session_of(runs), SessionStore(tmp_path), installer, shell)

    installs = {s.run_id: s.install for s in session.steps}
    assert installs[OFFERED] == RunInstall(route=InstallRoute.OFFER)
    assert installs["1000"] == RunInstall(route=InstallRoute.EVIDENCE, test="smoke")
    lines = {s.run_id: step_line(s) for s in session.steps}
    assert " · offer · " in lines[OFFERED]
    assert " · test 'smoke' · " in lines["1000"]
    document = json.loads(bisect_result(session, outcome).model_dump_json(by_alias=True))
    offered = next(s for s in document["steps"] if s["run_id"] == OFFERED)
    assert offered["install"] == {"route": "offer", "test": None, "reason": ""}
