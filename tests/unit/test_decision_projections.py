"""A decision is a value: the service returns it and hands it to its projections in one order
(metrics, run history, status site), which read nothing back."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from tests.unit.promotion_world import INDEX, REPORTER, Promoter
from wheelgate.core.layout import STAGING
from wheelgate.promotion.decisions import Decision
from wheelgate.promotion.event import ManifestEvent

SERVICE = "wheelgate.promotion.service"


@dataclass
class Seen:
    """What the projections saw, in the order they ran: (name, run history written yet)."""

    order: list[tuple[str, bool]] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)


class Watching:
    """A projection that notes when it ran and whether the run history held the run then."""

    def __init__(self, name: str, seen: Seen, promoter: list[Promoter], fails: bool = False):
        self.name, self.seen, self.promoter, self.fails = name, seen, promoter, fails

    def project(self, decision: Decision) -> None:
        history = list(self.promoter[0].staging.list(STAGING.history_dir(INDEX)))
        self.seen.order.append((self.name, bool(history)))
        self.seen.decisions.append(decision)
        if self.fails:
            raise RuntimeError(f"{self.name} is down")


def watched(tmp: Path, *, metrics_fail: bool = False) -> tuple[Promoter, Seen]:
    seen, holder = Seen(), []
    promoter = Promoter(
        tmp,
        metrics=Watching("metrics", seen, holder, fails=metrics_fail),
        status_site=Watching("status", seen, holder),
    )
    holder.append(promoter)
    return promoter, seen


def test_metrics_then_the_run_history_then_the_status_site_see_each_decision(
    tmp_path: Path,
) -> None:
    promoter, seen = watched(tmp_path)
    # When a run is promoted
    record = promoter.report("run-1", promoter.stage("run-1", promoter.wheel()))
    # Then metrics ran before the run history held the run, and the status site after
    assert record.state.value == "promoted", record.message
    assert seen.order == [("metrics", False), ("status", True)]
    # ...and both were handed the one decision, with what the flow held
    first, second = seen.decisions
    assert first is second
    assert first.record == record
    assert first.manifest is not None
    assert first.manifest.run_id == "run-1"
    assert [plan.index for plan in first.plans] == [INDEX]
    assert (INDEX, "pkg") in first.pages


def test_a_projection_that_fails_stops_neither_the_record_nor_the_next_projection(
    tmp_path: Path,
) -> None:
    promoter, seen = watched(tmp_path, metrics_fail=True)
    # When a run is promoted and the metrics projection raises
    decision = promoter.service.handle(
        ManifestEvent(promoter.write("run-1", promoter.stage("run-1", promoter.wheel())), REPORTER)
    )
    # Then the decision stands: it is returned, its record is stored, and the run history
    # and the status site still hear of it
    assert decision is not None
    assert decision.record.state.value == "promoted"
    assert promoter.service.load_record("run-1") == decision.record
    assert seen.order == [("metrics", False), ("status", True)]


def test_a_redelivered_manifest_is_a_decision_that_is_not_new(tmp_path: Path) -> None:
    promoter, _ = watched(tmp_path)
    key = promoter.write("run-1", promoter.stage("run-1", promoter.wheel()))
    first = promoter.service.handle(ManifestEvent(key, REPORTER))
    # When the same manifest's event comes again
    again = promoter.service.handle(ManifestEvent(key, REPORTER))
    # Then it is the recorded decision, marked as nothing new (metrics count it once)
    assert first is not None
    assert again is not None
    assert (first.new, again.new) == (True, False)
    assert again.record == first.record


def test_the_run_history_reads_back_neither_the_manifest_nor_a_page_the_flow_held(
    tmp_path: Path,
) -> None:
    # Given a promoter whose every read is noted, and whose run history projection is marked
    promoter, _ = watched(tmp_path)
    key = promoter.write("run-1", promoter.stage("run-1", promoter.wheel()))
    read: list[str] = []
    for bucket in (promoter.staging, promoter.nightly):
        bucket.get = spy(bucket.get, read)  # type: ignore[method-assign]
    metrics, history, status = promoter.service.projections
    promoter.service.projections = (metrics, Marked(history, read), status)
    # When the run is promoted
    promoter.service.handle(ManifestEvent(key, REPORTER))
    # Then the run history read only its own objects, none the flow had read before it
    start, end = read.index("<history>"), read.index("</history>")
    before, during = read[:start], read[start + 1 : end]
    assert key in before
    assert [k for k in during if k in before] == []
    assert all(k.startswith(STAGING.history_dir(INDEX)) for k in during), during


class Marked:
    def __init__(self, inner: Any, read: list[str]) -> None:
        self.inner, self.read = inner, read

    def project(self, decision: Decision) -> None:
        self.read.append("<history>")
        self.inner.project(decision)
        self.read.append("</history>")


def spy(get: Callable[..., Any], read: list[str]) -> Callable[..., Any]:
    def counted(key: str, **kwargs: Any) -> Any:
        read.append(key)
        return get(key, **kwargs)

    return counted


def test_a_manifest_event_enters_each_module_of_its_path_once_in_the_documented_order(
    tmp_path: Path,
) -> None:
    # Given a promoter, and a profile of the calls the service itself makes
    promoter, _ = watched(tmp_path)
    key = promoter.write("run-1", promoter.stage("run-1", promoter.wheel()))
    entered: list[str] = []

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        caller = frame.f_back
        if event == "call" and caller is not None and caller.f_globals["__name__"] == SERVICE:
            entered.append(frame.f_globals["__name__"])

    # When the service handles the manifest's event
    sys.setprofile(profile)
    try:
        promoter.service.handle(ManifestEvent(key, REPORTER))
    finally:
        sys.setprofile(None)
    # Then it goes down its path once: the request, the writer check, the route, the flow,
    # then each projection (metrics, run history, status site), never back into a module
    path = [m for m in entered if m.startswith("wheelgate.") and m != SERVICE]
    assert path == [
        "wheelgate.promotion.event",
        "wheelgate.promotion.writers",
        "wheelgate.promotion.routes.run",
        "wheelgate.promotion.flow",
        "wheelgate.promotion.run_history",
    ]
    projections = [m for m in entered if m == __name__]
    assert len(projections) == 2  # metrics before the run history, the status site after
