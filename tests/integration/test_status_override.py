"""After a break-glass override, the status site and `wheelgate runs` show the run as promoted
by the override (through the promoter handler, on the real S3 API)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.layout_probe import SCREEN_HEIGHT, WIDTHS, measured, probe_page
from tests.integration.test_override import (
    BREAK_GLASS,
    BREAK_GLASS_ID,
    _break_glass_configured,  # noqa: F401 (the break-glass role's id, for the promoter)
    override,
    rejected_run,
)
from tests.integration.test_promoter import Run
from tests.integration.test_status_page import Dom, chromium
from wheelgate.cli import status as status_command
from wheelgate.cli.main import main
from wheelgate.core.layout import STAGING
from wheelgate.local.stack import LocalWheelGate
from wheelgate.status.state import STATE_KEY, page_key, parse_state
from wheelgate.status.summary import recent_decisions
from wheelgate.storage.bucket import Bucket


@pytest.fixture
def run(buckets: tuple[Bucket, Bucket], tmp_path: Path, request: pytest.FixtureRequest) -> Run:
    name = "so-" + request.node.name.replace("_", "-")[-40:].strip("-")
    return Run(buckets, tmp_path, name, f"so/{name[-30:]}")


def test_an_override_shows_as_the_directorys_promotion_on_the_page_and_in_runs(
    run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a run rejected for its tests, then promoted by a break-glass override
    rejected_run(run)
    request = override(run, BREAK_GLASS, reason="GPU runners down; smoke-tested by hand")
    assert request["state"] == "promoted", request
    found = run.staging.get(STATE_KEY)
    assert found is not None
    state = parse_state(found[0])
    # Then the run is the directory's latest promoted run
    latest = state.directories[run.index].latest
    assert latest is not None
    assert latest.run_id == run.run_id
    # And its decisions list the override's promotion above the rejection it overrode
    rows = recent_decisions(state, index=run.index)
    assert [(r.run_id, r.kind, r.state.value) for r in rows[:2]] == [
        (run.run_id, "override", "promoted"),
        (run.run_id, "run", "rejected"),
    ]
    assert "tests overridden by" in rows[0].message
    assert "smoke-tested by hand" in rows[0].message
    # And the directory's page shows it, never "No run promoted yet"
    page = run.staging.get(page_key(run.index))
    assert page is not None
    html = page[0].decode()
    assert "No run promoted yet" not in html
    assert run.run_id in html
    assert ">override<" in html
    # And `wheelgate runs` lists it as the override's promotion
    bucket = ["--staging-bucket", run.staging.name]
    capsys.readouterr()  # the handler's log lines
    assert main(["runs", "--index", run.index, "--json", *bucket]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert (listed[0]["run_id"], listed[0]["kind"]) == (run.run_id, "override")
    # And the request's own record names its target and the target's commit
    target = json.loads(run.staging.get(STAGING.record(run.run_id))[0])  # type: ignore[index]
    assert request["override"]["target"] == run.run_id
    assert request["commit"] == target["commit"]


@pytest.mark.slow
def test_the_overridden_runs_directory_page_in_headless_chromium(
    run: Run, stack: LocalWheelGate, tmp_path: Path
) -> None:
    # Given a run rejected for its tests, then promoted by a break-glass override
    rejected_run(run)
    assert override(run, BREAK_GLASS)["state"] == "promoted"
    # When Chromium loads the directory's served status page
    dom = Dom(chromium(f"{stack.nightly_url}status/{run.index}/", tmp_path / "p", "--dump-dom"))
    text = " ".join(" ".join(dom.text).split())
    # Then the run is its latest promoted run, and its promotion an override decision
    assert "No run promoted yet" not in text
    assert f"Run {run.run_id}" in text
    assert f"promoted override run {run.run_id}" in text
    assert "tests overridden by" in text


#: How every output shows the break-glass principal: its role's id, the session name masked.
SHOWN_PRINCIPAL = f"AWS:{BREAK_GLASS_ID}:****"


def test_every_output_masks_the_break_glass_principal_by_the_one_rule(
    run: Run, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a run rejected for its tests, then promoted by a break-glass override
    rejected_run(run)
    assert override(run, BREAK_GLASS)["state"] == "promoted"
    # When the operator reads its record, the decisions (on a terminal and as JSON) and the page
    monkeypatch.setattr(status_command, "for_people", lambda args: not args.json)
    bucket = ["--staging-bucket", run.staging.name]
    outputs: dict[str, str] = {}
    capsys.readouterr()  # the handler's log lines
    for name, argv in {
        "status": ["status", run.run_id],
        "status --json": ["status", run.run_id, "--json"],
        "runs": ["runs", "--index", run.index],
        "runs --json": ["runs", "--index", run.index, "--json"],
    }.items():
        assert main([*argv, *bucket]) in (0, 1), name
        outputs[name] = capsys.readouterr().out
    page = run.staging.get(page_key(run.index))
    assert page is not None
    outputs["page"] = page[0].decode()
    # Then each names the principal the same way, and none names the session
    for name, text in outputs.items():
        assert SHOWN_PRINCIPAL in text, (name, text)
        assert ":oncall" not in text, name


#: What the probe reads of the latest card's override mark in each frame.
OVERRIDE_MARK = """(() => {
  const mark = page.querySelector("section.card .override");
  const box = mark && mark.getBoundingClientRect();
  return {text: mark ? mark.innerText : null,
          badge: mark ? mark.querySelector(".badge").innerText : null,
          right: box ? box.right : null, bottom: box ? box.bottom : null,
          height: box ? box.height : null};
})()"""


@pytest.mark.slow
def test_the_latest_card_marks_the_override_at_phone_and_desktop_width(
    run: Run, stack: LocalWheelGate, tmp_path: Path
) -> None:
    # Given a run rejected for its tests, then promoted by a break-glass override
    rejected_run(run)
    request = override(run, BREAK_GLASS, reason="GPU runners down; smoke-tested by hand")
    assert request["state"] == "promoted"
    # When Chromium lays its directory's served status page out at 390 and 1280 px
    probe = f"status/{run.index}/probe.html"
    page_url = f"{stack.nightly_url}status/{run.index}/"
    run.staging.put(probe, probe_page(page_url, OVERRIDE_MARK), content_type="text/html")
    found = measured(f"{stack.nightly_url}{probe}", tmp_path / "p")
    # Then at each width the latest card marks the override, who, when and why, on the first
    # screen and within its width
    for width in WIDTHS:
        at = found[str(width)]
        text = " ".join(str(at["text"]).split())
        assert at["badge"] == "override", at
        assert f"by {SHOWN_PRINCIPAL}" in text, text
        assert "GPU runners down; smoke-tested by hand" in text, text
        assert "UTC" in text, text
        assert at["right"] <= at["clientWidth"], at
        assert at["scrollWidth"] <= at["clientWidth"], at
        assert at["height"] > 0, at
        assert at["bottom"] <= SCREEN_HEIGHT, at
