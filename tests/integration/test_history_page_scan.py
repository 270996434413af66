"""The run history page of a busy directory as a person scans it in headless Chromium: 200
nightlies, over 20 of them on the first desktop screen as one line each (and a short block each
at phone width), every install line one click from its line; and the links between the status
pages and the history pages, followed over HTTP on the local stack."""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.integration.layout_probe import measured, probe_page
from tests.integration.test_promoter import Run, wheel
from tests.integration.test_status_page import Dom
from tests.unit.history_page_samples import NOW, REPOSITORY_URL, nightly_runs
from wheelgate.core.layout import STAGING
from wheelgate.history.page import install_line
from wheelgate.history.page_writer import HistoryPageWriter
from wheelgate.local.stack import LocalWheelGate
from wheelgate.storage.bucket import Bucket

INDEX = "hp/scan-gfx94X"
#: The first screen of a desktop: 1280 px wide, 800 px high; and a phone's width.
SCREEN = (1280, 800)
PHONE = 390
#: What the probe reads in the frame: how many of the table's lines lie wholly on the first
#: screen, then, for each line in turn, where its run's install line is after its link is
#: clicked (an anchor: the frame scrolls to the run's card, no script of the page's own).
SCANNED = """(() => {
  const height = HEIGHT;
  const seen = (e) => {
    const box = e.getBoundingClientRect();
    return box.height > 0 && box.top >= 0 && box.bottom <= height;
  };
  const rows = [...page.querySelectorAll("table.runs tbody tr")];
  const first = rows.filter(seen).map((r) => r.querySelector("th").innerText);
  const clicked = rows.map((row) => {
    const link = row.querySelector("th a");
    link.click();
    const card = page.getElementById(decodeURIComponent(link.hash.slice(1)));
    const line = card && card.querySelector("pre.install");
    return {run: row.querySelector("th").innerText, card: card ? card.id : null,
            line: line ? line.innerText : null, shown: line ? seen(line) : false};
  });
  const caption = page.querySelector("table.runs caption").getBoundingClientRect();
  return {rows: rows.length, first: first, clicked: clicked, caption: caption.height};
})()""".replace("HEIGHT", str(SCREEN[1]))


@pytest.fixture(scope="module")
def scanned(
    stack: LocalWheelGate,
    buckets: tuple[Bucket, Bucket],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    """Given the history page of 200 nightlies written by its writer into local staging, when
    Chromium lays it out in a 1280 x 800 frame (and a 390 px wide one) and clicks each line's
    link."""
    staging, _ = buckets
    runs = nightly_runs(200, INDEX)
    HistoryPageWriter(
        staging, nightly_base_url=stack.nightly_url, repository_url=REPOSITORY_URL,
        clock=lambda: NOW,
    )(INDEX, runs)  # fmt: skip
    page_url = f"{stack.staging_url}{STAGING.history_dir(INDEX)}"
    probe = f"{STAGING.history_dir(INDEX)}probe.html"
    staging.put(
        probe,
        probe_page(page_url, SCANNED, widths=(SCREEN[0], PHONE), height=SCREEN[1]),
        content_type="text/html",
    )
    found = measured(f"{stack.staging_url}{probe}", tmp_path_factory.mktemp("chromium") / "p")
    return {"runs": runs, "at": found[str(SCREEN[0])], "phone": found[str(PHONE)]}


@pytest.mark.slow
def test_the_first_desktop_screen_shows_at_least_twenty_runs_newest_first(
    scanned: dict[str, Any],
) -> None:
    at, runs = scanned["at"], scanned["runs"]
    assert at["rows"] == 200
    assert at["scrollWidth"] <= at["clientWidth"]
    assert len(at["first"]) >= 20, at["first"]
    newest = sorted(runs, key=lambda r: r.staged_at, reverse=True)
    assert at["first"] == [r.run_id for r in newest[: len(at["first"])]]


@pytest.mark.slow
def test_at_phone_width_each_line_is_a_short_block_within_the_screen(
    scanned: dict[str, Any],
) -> None:
    phone = scanned["phone"]
    assert phone["scrollWidth"] <= phone["clientWidth"] <= PHONE
    assert phone["caption"] < 60, phone["caption"]
    assert len(phone["first"]) >= 6, phone["first"]


@pytest.mark.slow
@pytest.mark.parametrize("frame", ["at", "phone"])
def test_each_install_line_is_on_screen_one_click_from_its_runs_line(
    scanned: dict[str, Any], frame: str
) -> None:
    by_id = {r.run_id: r for r in scanned["runs"]}
    clicked = scanned[frame]["clicked"]
    installable = [c for c in clicked if not by_id[c["run"]].expired(NOW)]
    assert len(installable) > 150
    for click in clicked:
        run = by_id[click["run"]]
        assert click["card"] == f"run-{run.run_id}-1", click
        if run.expired(NOW):
            assert click["line"] is None, click  # nothing installs an expired run
            continue
        assert click["shown"], click
        assert click["line"] == install_line(run.run_id, INDEX, "smoke"), click


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return int(response.status), response.read().decode("utf-8")


def _links(html: str, text: str) -> list[str]:
    """The hrefs of the page's links whose href holds ``text``."""
    return [href for href in Dom(html).hrefs() if text in href]


def test_the_status_pages_and_the_history_page_link_each_other_on_the_local_stack(
    buckets: tuple[Bucket, Bucket], stack: LocalWheelGate, tmp_path: Path
) -> None:
    # Given a run staged and promoted through the promoter, which writes both sites
    run = Run(buckets, tmp_path, "scan-links-1", "hp/scan-links")
    run.stage(wheel(tmp_path, "scanlinks", "1.0"))
    assert run.report(run.manifest())["state"] == "promoted"
    status_url = f"{stack.nightly_url}status/{run.index}/"
    history_url = f"{stack.staging_url}history/{run.index}/"
    # When the directory's status page and the overview are read where nightly serves them
    status, directory_page = _get(status_url)
    _, overview = _get(f"{stack.nightly_url}status/")
    # Then each links the directory's history on the staging index, which serves it
    assert status == 200
    assert _links(directory_page, "history/") == [history_url]
    assert history_url in _links(overview, "history/")
    status, history_page = _get(history_url)
    assert status == 200
    assert "Run history of" in history_page
    assert "scan-links-1" in history_page
    # And the history page links the directory's status page back, which nightly serves
    assert _links(history_page, "status/") == [status_url]
    assert _get(status_url)[1] == directory_page
