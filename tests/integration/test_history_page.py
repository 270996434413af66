"""The run history page as a person sees it: written by its writer into local mode's staging,
served beside the runs by the staging server, and laid out by headless Chromium at phone
(390 px) and desktop (1280 px) width, with a rejected, an expired and a promoted run."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import pytest

from tests.integration.test_status_page import ARTIFACTS, PNG_SIGNATURE, Dom, chromium
from tests.unit.history_page_samples import LONG_TEST_NAME, NOW, REPOSITORY_URL, sample_runs
from wheelgate.core.layout import STAGING
from wheelgate.history.page_writer import HistoryPageWriter
from wheelgate.local.names import STAGING_BUCKET
from wheelgate.local.stack import LocalWheelGate
from wheelgate.storage.bucket import Bucket

# Headless Chromium: `make test` only.
pytestmark = pytest.mark.slow

INDEX = "hp/gfx94X-dcgpu"
WIDTHS = (390, 1280)
#: A page of the staging server's own origin that lays the history page out in a frame of each
#: width and writes what it measured into its DOM: the history page itself has no script, and
#: Chromium's --dump-dom prints the DOM after the load event, frames included.
PROBE = """<!DOCTYPE html>
<html><body style="margin:0">
{frames}
<pre id="measured"></pre>
<script>
window.addEventListener("load", () => {{
  const measured = {{}};
  for (const frame of document.querySelectorAll("iframe")) {{
    const page = frame.contentDocument;
    const width = page.documentElement.clientWidth;
    measured[frame.width] = {{
      clientWidth: width,
      scrollWidth: page.documentElement.scrollWidth,
      outside: [...page.body.querySelectorAll("*")]
        .filter((e) => e.getBoundingClientRect().right > width + 0.5)
        .map((e) => e.tagName + "." + e.className),
      runs: Object.fromEntries([...page.querySelectorAll("article")].map((a) => [
        a.id, {{state: a.dataset.state, text: a.innerText,
               links: [...a.querySelectorAll("a")].map((l) => l.href)}}])),
    }};
  }}
  document.getElementById("measured").textContent = JSON.stringify(measured);
}});
</script>
</body></html>
"""


MEASURED = '<pre id="measured">'


@pytest.fixture(scope="module")
def served(stack: LocalWheelGate, buckets: tuple[Bucket, Bucket]) -> dict[str, Any]:
    """Given a rejected, an expired and a promoted run of INDEX, the files that still exist in
    staging and nightly, and their history page written by the writer."""
    staging, nightly = buckets
    runs = sample_runs(INDEX)
    shown = [runs["rejected"], runs["expired"], runs["promoted"]]
    for file in runs["rejected"].files:
        staging.put(file.staging_key, b"staged bytes", content_type="application/zip")
    for file in runs["promoted"].files:
        assert file.nightly_key is not None
        nightly.put(file.nightly_key, b"released bytes", content_type="application/zip")
    writer = HistoryPageWriter(
        staging,
        nightly_base_url=stack.nightly_url,
        repository_url=REPOSITORY_URL,
        clock=lambda: NOW,
    )
    writer(INDEX, shown)
    page_url = f"{stack.staging_url}{STAGING.history_dir(INDEX)}"
    frames = "\n".join(
        f'<iframe width="{w}" height="844" src="{page_url}" style="border:0"></iframe>'
        for w in WIDTHS
    )
    probe_key = f"{STAGING.history_dir(INDEX)}probe.html"
    staging.put(probe_key, PROBE.format(frames=frames).encode(), content_type="text/html")
    return {"runs": runs, "page_url": page_url, "probe_url": stack.staging_url + probe_key}


@pytest.fixture(scope="module")
def measured(served: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """When Chromium lays the page out at each width."""
    profile = tmp_path_factory.mktemp("chromium") / "profile"
    html = chromium(served["probe_url"], profile, "--dump-dom", "--window-size=1800,1000")
    start = html.index(MEASURED) + len(MEASURED)
    found: dict[str, Any] = json.loads(unescape(html[start : html.index("</pre>", start)]))
    return found


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_the_page_is_served_beside_the_runs_as_short_lived_html(
    served: dict[str, Any], s3: Any
) -> None:
    head = s3.head_object(Bucket=STAGING_BUCKET, Key=STAGING.history_page(INDEX))
    assert head["ContentType"] == "text/html; charset=utf-8"
    assert head["CacheControl"] == "public, max-age=60, must-revalidate"
    with urllib.request.urlopen(served["page_url"], timeout=10) as response:
        assert response.headers["Content-Type"] == "text/html; charset=utf-8"


@pytest.mark.parametrize("width", WIDTHS)
def test_nothing_reaches_past_the_screen_at_phone_or_desktop_width(
    measured: dict[str, Any], width: int
) -> None:
    at = measured[str(width)]
    assert at["clientWidth"] <= width
    assert at["scrollWidth"] <= at["clientWidth"], at["outside"]
    assert at["outside"] == []


@pytest.mark.parametrize("width", WIDTHS)
def test_each_run_shows_its_state_where_a_person_reads_it(
    measured: dict[str, Any], width: int
) -> None:
    runs = measured[str(width)]["runs"]
    # Newest first: the rejected run of yesterday, the promoted one, the expired one of 40 days ago
    assert list(runs) == ["run-1002-1", "run-1001-1", "run-0900-1"]
    rejected, promoted, expired = (runs[k]["text"] for k in runs)
    assert "not promoted" in rejected
    assert "tests-failed" in rejected
    assert LONG_TEST_NAME in rejected.replace("\n", "")
    assert "Promoted to nightly." in promoted
    assert "not promoted" not in promoted
    assert "expired" in expired
    assert "Every file of this run has expired" in expired
    assert "wheelgate bisect install 0900" not in expired
    assert f"wheelgate bisect install run:1002 --index {INDEX} --as-test smoke" in rejected.replace(
        "\n", " "
    )


def test_every_file_link_leads_to_its_bytes_and_an_expired_run_links_none(
    measured: dict[str, Any], served: dict[str, Any]
) -> None:
    runs = measured["390"]["runs"]
    files = {k: [h for h in run["links"] if ".whl" in h] for k, run in runs.items()}
    # The rejected run's file from staging (a relative link, resolved by the browser), the
    # promoted run's two from nightly (one of them no longer in staging), the expired run's none
    assert files["run-0900-1"] == []
    assert len(files["run-1002-1"]) == 1
    assert files["run-1002-1"][0].startswith(served["page_url"].split("history/")[0] + "runs/")
    assert len(files["run-1001-1"]) == 2
    for href in files["run-1002-1"] + files["run-1001-1"]:
        assert "%2B" in href
        assert _status(href) == 200, href
    assert (
        f"{REPOSITORY_URL}/commit/{served['runs']['rejected'].commit}"
        in runs["run-1002-1"]["links"]
    )


def test_the_json_beside_the_page_is_linked(served: dict[str, Any], tmp_path: Path) -> None:
    dom = Dom(chromium(served["page_url"], tmp_path / "profile", "--dump-dom"))
    hrefs = dom.hrefs()
    assert "index.json" in hrefs
    assert {"2026-03.json", "2026-02.json"} <= set(hrefs)
    assert urljoin(served["page_url"], "index.json") == served["page_url"] + "index.json"
    assert "script" not in {t for t, _ in dom.tags}


@pytest.mark.parametrize("width", WIDTHS)
def test_a_screenshot_at_each_width_is_kept(
    served: dict[str, Any], tmp_path: Path, width: int
) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / f"history-page-{width}.png"
    shot.unlink(missing_ok=True)
    chromium(
        served["page_url"],
        tmp_path / "profile",
        "--hide-scrollbars",
        f"--screenshot={shot}",
        f"--window-size={width},1600",
    )
    assert shot.read_bytes()[:8] == PNG_SIGNATURE
