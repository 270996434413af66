"""The history page's install lines, run exactly as printed, on ``wheelgate local``: for a
promoted run, a rejected run whose only test failed, and a run never reported (a wheel whose
dependency lives only in nightly), each line installs exactly what the page says (the test's
evidence, or the offer), in the user's own shell with the distributions' URLs in the
environment; a run whose files expired gets no line, and installing it says why."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import urllib.request
from datetime import UTC, datetime, timedelta
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LocalProcess
from tests.integration.installs import pip
from tests.integration.test_bisect_install import contents, holds
from wheelgate.core.env_names import ENV_NIGHTLY_BASE_URL
from wheelgate.core.layout import STAGING
from wheelgate.core.timestamps import upload_time
from wheelgate.history.model import HistoryRun
from wheelgate.history.page_writer import HistoryPageWriter
from wheelgate.history.reader import BucketHistorySource, read_history
from wheelgate.history.store import HistoryStore
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.storage.bucket import Bucket

# Real pip installs three runs' test jobs and three bisect installs: `make test` only.
pytestmark = pytest.mark.slow

INDEX = "e2e/lines"
ARTICLE = re.compile(r'<article class="card" id="run-([^"]+)-1".*?</article>', re.DOTALL)
LINE = re.compile(r'<pre class="install"><code>(.*?)</code></pre>', re.DOTALL)
ROUTE = re.compile(r'data-route="([a-z]+)"')


def commit(n: int) -> str:
    return hashlib.sha256(f"lines-{n}".encode()).hexdigest()[:40]


def stage(local: LocalProcess, run_id: str, n: int, wheel: Path) -> str:
    done = local.wheelgate(
        *("stage", "--run-id", run_id, "--index", INDEX, "--commit", commit(n), str(wheel))
    )
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["index_url"])


def run_test_job(local: LocalProcess, make_venv: Any, run_id: str, n: int, index_url: str) -> None:
    """Run ``run_id``'s one test: pip installs its project from its index (the evidence);
    run 0's test passes, the others' fail."""
    venv: Path = make_venv(f"lines-{n}")
    report = venv / "installed.json"
    project = "lines-dep" if n == 0 else "lines-core"
    done = pip(venv, "install", "--report", str(report), "--index-url", index_url, project)
    assert done.returncode == 0, done.stdout + done.stderr
    result = "passed" if n == 0 else "failed"
    url = f"https://github.com/example/project/actions/runs/{run_id}"
    reported = local.wheelgate(
        *("report", "--run-id", run_id, "--commit", commit(n)),
        *("--test", f"{INDEX}:smoke={result}@{url}", "--installed", f"{INDEX}:smoke={report}"),
    )
    assert reported.returncode == 0, reported.stderr
    status = local.wheelgate("status", run_id, "--wait", "60")
    assert status.returncode == (0 if n == 0 else 1), status.stdout + status.stderr


def page_lines(local: LocalProcess) -> dict[str, tuple[str, str | None]]:
    """Each run on the page: its install route and its install line (``None``: none)."""
    url = local.staging_url + STAGING.history_page(INDEX)
    with urllib.request.urlopen(url, timeout=10) as response:
        html = response.read().decode()
    found = {}
    for article in ARTICLE.finditer(html):
        route, line = ROUTE.search(article.group(0)), LINE.search(article.group(0))
        found[article.group(1)] = (
            route.group(1) if route else "",
            unescape(line.group(1)) if line else None,
        )
    return found


def article(local: LocalProcess, run_id: str) -> str:
    """What the page shows of ``run_id``."""
    url = local.staging_url + STAGING.history_page(INDEX)
    with urllib.request.urlopen(url, timeout=10) as response:
        html = response.read().decode()
    [found] = [a.group(0) for a in ARTICLE.finditer(html) if a.group(1) == run_id]
    return found


def run_as_printed(local: LocalProcess, line: str, work: Path) -> subprocess.CompletedProcess[str]:
    """``line`` run as a person pastes it, in ``work``, with the distributions' URLs set."""
    argv = shlex.split(line)
    assert argv[0] == "wheelgate"
    work.mkdir()
    env = {**os.environ, **local.env, ENV_NIGHTLY_BASE_URL: local.nightly_url}
    env["XDG_CACHE_HOME"] = str(work / "cache")
    return subprocess.run(
        [sys.executable, "-m", "wheelgate", *argv[1:]],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
    )


def test_each_install_line_on_the_page_installs_what_the_page_says(
    local: LocalProcess, venv_factory: Any, tmp_path: Path
) -> None:
    # Given a promoted dependency, a rejected run of a wheel needing it whose only test
    # failed, and a run of another build of that wheel never reported
    dep = build_wheel(tmp_path / "0", "lines-dep", "1.0")
    failed = build_wheel(tmp_path / "1", "lines-core", "1.0+g1", requires=["lines-dep"])
    staged = build_wheel(tmp_path / "2", "lines-core", "1.0+g2", requires=["lines-dep"])
    run_test_job(local, venv_factory, "lines-0", 0, stage(local, "lines-0", 0, dep))
    run_test_job(local, venv_factory, "lines-1", 1, stage(local, "lines-1", 1, failed))
    stage(local, "lines-2", 2, staged)
    stage(local, "lines-3", 3, build_wheel(tmp_path / "3", "lines-core", "1.0+g3"))
    local.wait_idle()
    expire(local, "lines-3")

    # When each line the page prints is run as printed
    lines = page_lines(local)
    done = {
        run_id: run_as_printed(local, str(line), tmp_path / run_id)
        for run_id, (_, line) in lines.items()
        if line is not None
    }

    # Then every run but the expired one has one; each says how it installs and holds
    # exactly those files
    assert {run_id: route for run_id, (route, _) in lines.items()} == {
        "lines-0": "evidence",
        "lines-1": "evidence",
        "lines-2": "offer",
        "lines-3": "",
    }
    assert sorted(done) == ["lines-0", "lines-1", "lines-2"]
    assert all(d.returncode == 0 for d in done.values()), {k: d.stderr for k, d in done.items()}
    assert "the files test 'smoke' installed (it failed)" in done["lines-1"].stdout
    assert "its offer (never reported)" in done["lines-2"].stdout
    venv = Path(".wheelgate-venv")
    assert holds(tmp_path / "lines-0" / venv) == contents(dep)
    assert holds(tmp_path / "lines-1" / venv) == contents(failed, dep)
    assert holds(tmp_path / "lines-2" / venv) == contents(staged, dep)
    # and the expired run, which the page says has expired and prints no line for, is
    # refused as expired
    assert "Every file of this run has expired" in article(local, "lines-3")
    refused = run_as_printed(
        local, f"wheelgate bisect install run:lines-3 --index {INDEX}", tmp_path / "x"
    )
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "expired" in refused.stdout + refused.stderr


def expire(local: LocalProcess, run_id: str) -> None:
    """Date ``run_id``'s staged files past staging's lifecycle in its history, as the promoter
    dates a run staged 20 days ago, and write the page again as the promoter does after each
    change (the history dates a run by S3's writes, which no clock of a stage call moves)."""
    staging = Bucket(local.client("s3"), local.env["WHEELGATE_STAGING_BUCKET"])
    store = HistoryStore(staging)
    month = store.find_month(INDEX, run_id)
    assert month is not None
    gone = upload_time(datetime.now(UTC) - timedelta(days=6))

    def aged(found: HistoryRun | None) -> HistoryRun:
        assert found is not None
        files = tuple(f.model_copy(update={"expires_at": gone}) for f in found.files)
        return found.model_copy(update={"files": files})

    store.change_run(INDEX, month, run_id, aged)
    writer = HistoryPageWriter(staging, nightly_base_url=local.nightly_url)
    writer(INDEX, read_history(BucketHistorySource(staging), INDEX))
