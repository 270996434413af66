"""The status site after real promotions through the promoter handler, served by local mode's
nightly server and rendered by headless Chromium at phone size."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import boto3
import pytest

from tests.integration.test_promoter import Run, wheel
from tests.tools import require_tool
from wheelgate.core.env_names import ENV_DASHBOARD_URL
from wheelgate.core.records import PromotionRecord
from wheelgate.lambda_function import handler
from wheelgate.local.names import NIGHTLY_BUCKET, STAGING_BUCKET
from wheelgate.local.snapshot import version_snapshot
from wheelgate.local.stack import LocalWheelGate
from wheelgate.status.state import STATE_KEY, parse_state
from wheelgate.status.store import StatusStore
from wheelgate.storage.bucket import Bucket

# Headless Chromium: `make test` only.
pytestmark = pytest.mark.slow

INDEX = "st/gfx94X-dcgpu"
REPO_URL = "https://github.com/example/project"
TEST_URL = f"{REPO_URL}/actions/runs/4242/job/7?attempt=1&job=smoke"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DASHBOARD_URL = (
    "https://us-east-1.console.aws.amazon.com/cloudwatch/home?region=us-east-1"
    "#dashboards/dashboard/WheelGate-promotion"
)


def chromium_binary() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        subprocess.run(
            [str(Path(__file__).resolve().parents[2] / ".ci" / "chromium-install.sh")],
            capture_output=True,
            check=False,
            timeout=600,
        )
        found = shutil.which("chromium")
    return require_tool("Chromium", found, ".ci/chromium-install.sh could not install it")


def chromium(url: str, profile: Path, *extra: str) -> str:
    result = subprocess.run(
        [
            chromium_binary(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            *extra,
            url,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


class Dom(HTMLParser):
    """Elements of the DOM Chromium dumped, with attributes, and its text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def hrefs(self) -> list[str]:
        return [str(a.get("href")) for t, a in self.tags if t == "a"]


@pytest.fixture(scope="module")
def buckets(stack: LocalWheelGate) -> tuple[Bucket, Bucket]:
    s3 = boto3.client("s3")
    return Bucket(s3, STAGING_BUCKET), Bucket(s3, NIGHTLY_BUCKET)


@pytest.fixture(autouse=True)
def _fresh_promoter() -> Iterator[None]:
    handler.promoter.cache_clear()
    yield
    handler.promoter.cache_clear()


@pytest.fixture(scope="module")
def decided(
    buckets: tuple[Bucket, Bucket], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """Given run st-good promoted to INDEX with a linked test, then run st-bad rejected, by a
    promoter that knows the dashboard's URL (as the stack configures it)."""
    handler.promoter.cache_clear()
    with pytest.MonkeyPatch.context() as env:
        env.setenv(ENV_DASHBOARD_URL, DASHBOARD_URL)
        return _decide(buckets, tmp_path_factory)


def _decide(
    buckets: tuple[Bucket, Bucket], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("status-wheels")
    good = Run(buckets, tmp, "st-good", INDEX).stage(wheel(tmp, "st-torch", "2.7.0"))
    manifest = good.manifest()
    manifest["sets"][0]["tests"][0]["url"] = TEST_URL
    good_record = good.report(manifest)
    assert good_record["state"] == "promoted", good_record
    bad = Run(buckets, tmp, "st-bad", INDEX).stage(wheel(tmp, "st-torch", "2.8.0"))
    nightly = buckets[1]
    before = version_snapshot(nightly.client, nightly.name)
    bad_record = bad.report(bad.manifest(result="failed"))
    assert (bad_record["state"], bad_record["reason"]) == ("rejected", "tests-failed")
    handler.promoter.cache_clear()
    return {
        "good": good_record,
        "bad": bad_record,
        "nightly before the rejection": before,
        "nightly after the rejection": version_snapshot(nightly.client, nightly.name),
    }


def test_state_records_both_decisions(
    decided: dict[str, Any], buckets: tuple[Bucket, Bucket]
) -> None:
    found = buckets[0].get(STATE_KEY)
    assert found is not None
    state = parse_state(found[0])
    status = state.directories[INDEX]
    assert status.latest is not None
    assert (status.latest.run_id, status.latest.commit) == ("st-good", decided["good"]["commit"])
    assert [d.run_id for d in status.decisions][:2] == ["st-bad", "st-good"]
    assert ("st-bad", "tests-failed") in [(r.run_id, r.reason) for r in state.rejections]


def test_pages_are_served_as_short_lived_utf8_html(
    decided: dict[str, Any], stack: LocalWheelGate
) -> None:
    s3 = boto3.client("s3")
    for key in ("status/index.html", f"status/{INDEX}/index.html"):
        head = s3.head_object(Bucket=STAGING_BUCKET, Key=key)
        assert head["ContentType"] == "text/html; charset=utf-8"
        assert head["CacheControl"] == "public, max-age=60, must-revalidate"
    with urllib.request.urlopen(stack.nightly_url + "status/", timeout=10) as response:
        assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    # The site is kept in staging: recording a rejection wrote nothing to nightly (no object
    # version or delete marker anywhere in the bucket), and nightly has no status page at all.
    after = decided["nightly after the rejection"]
    assert after == decided["nightly before the rejection"]
    assert not [k for k in version_snapshot(s3, NIGHTLY_BUCKET) if k.startswith("status/")]


def test_overview_in_headless_chromium_at_phone_size(
    decided: dict[str, Any], stack: LocalWheelGate, tmp_path: Path
) -> None:
    url = stack.nightly_url + "status/"
    # When Chromium loads the served page
    html = chromium(url, tmp_path / "profile", "--dump-dom")
    dom = Dom(html)
    text = "".join(dom.text)
    # Then it shows the latest promoted run, its commit and test link, and the rejection
    assert "st-good" in text
    assert decided["good"]["commit"][:12] in text
    assert TEST_URL in dom.hrefs()
    # And the run id and the commit link the CI run and the commit the test URL names
    assert f"{REPO_URL}/actions/runs/4242" in dom.hrefs()
    assert f"{REPO_URL}/commit/{decided['good']['commit']}" in dom.hrefs()
    assert "tests-failed" in text
    assert "st-bad" in text
    assert f"{INDEX}/" in dom.hrefs()
    assert "script" not in {t for t, _ in dom.tags}
    # And the header, at the top of the page on any screen, links the dashboard
    header = html[html.index("<header>") : html.index("</header>")]
    assert f'href="{DASHBOARD_URL}"' in header.replace("&amp;", "&")
    assert ">Dashboard</a>" in header
    # And a phone-size screenshot is kept with the test artifacts
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "status-page.png"
    shot.unlink(missing_ok=True)
    chromium(
        url,
        tmp_path / "profile",
        "--hide-scrollbars",
        f"--screenshot={shot}",
        "--window-size=390,844",
    )
    assert shot.stat().st_size > 1000
    assert shot.read_bytes()[:8] == PNG_SIGNATURE


def test_directory_page_in_headless_chromium(
    decided: dict[str, Any], stack: LocalWheelGate, tmp_path: Path
) -> None:
    url = f"{stack.nightly_url}status/{INDEX}/"
    dom = Dom(chromium(url, tmp_path / "profile", "--dump-dom"))
    assert DASHBOARD_URL in dom.hrefs()
    text = "".join(dom.text)
    [released] = decided["good"]["sets"][0]["files"]
    assert released["filename"] in text
    assert released["sha256"][:12] in text
    assert TEST_URL in dom.hrefs()
    assert f"{REPO_URL}/actions/runs/4242" in dom.hrefs()
    assert f"{REPO_URL}/commit/{decided['good']['commit']}" in dom.hrefs()
    assert "tests-failed" in text
    assert "script" not in {t for t, _ in dom.tags}
    # The file link resolves to the released wheel on the same server.
    [file_href] = [h for h in dom.hrefs() if h.endswith(".whl")]
    with urllib.request.urlopen(
        urllib.request.Request(urljoin(url, file_href), method="HEAD")
    ) as r:
        assert int(r.headers["Content-Length"]) == released["size"]
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "status-page-directory.png"
    chromium(
        url,
        tmp_path / "profile",
        "--hide-scrollbars",
        f"--screenshot={shot}",
        "--window-size=390,844",
    )
    assert shot.read_bytes()[:8] == PNG_SIGNATURE


def test_a_lost_race_is_retried_and_keeps_both_decisions(
    decided: dict[str, Any], buckets: tuple[Bucket, Bucket], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a writer that read the state before another writer committed st-bad's decision
    store = StatusStore(buckets[0], sleep=lambda _: None)
    before = parse_state(buckets[0].get(STATE_KEY)[0])  # type: ignore[index]
    stale = before.model_copy(update={"rejections": before.rejections[1:]})
    current = store.read
    reads = {"n": 0}

    def read_once_stale() -> Any:
        reads["n"] += 1
        state, etag = current()
        return (stale, '"stale-etag"') if reads["n"] == 1 else (state, etag)

    monkeypatch.setattr(store, "read", read_once_stale)
    record = PromotionRecord.model_validate(decided["good"]).model_copy(
        update={"run_id": "st-race"}
    )
    record = record.with_decision(
        at="2099-01-01T00:00:00.000000Z", state=record.state, reason=None, message="race",
        manifest_sha256=None, actor=None,
    ).model_copy(update={"decided_at": "2099-01-01T00:00:00.000000Z"})  # fmt: skip
    # When it writes, its conditional write loses and it re-applies on the fresh state
    assert STATE_KEY in store.update(record)
    assert reads["n"] == 2
    after = parse_state(buckets[0].get(STATE_KEY)[0])  # type: ignore[index]
    assert after.rejections == before.rejections
    assert after.directories[INDEX].latest is not None
    assert after.directories[INDEX].latest.run_id == "st-race"


def test_a_status_failure_never_fails_the_promotion(
    buckets: tuple[Bucket, Bucket], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: StatusStore, record: PromotionRecord) -> list[str]:
        raise RuntimeError("status bucket unavailable (injected)")

    monkeypatch.setattr(StatusStore, "update", broken)
    run = Run(buckets, tmp_path, "st-unhurt", "st/unhurt").stage(wheel(tmp_path, "st-unhurt"))
    # Run.report asserts the message was not reported as failed.
    record = run.report(run.manifest())
    assert record["state"] == "promoted"
    found = buckets[0].get(STATE_KEY)
    assert found is not None
    assert "st/unhurt" not in json.loads(found[0])["directories"]
