"""A wheel with a local version label (``1.0+rocm6.4``, as ROCm builds are named) installs with
uv and pip from nightly and from a run's staging index (issue: '+' in file names).

The local index servers read a raw '+' in a path as a space, as S3 does behind CloudFront's
file behaviors, and uv requests a link as written: a page that links the raw name fails here.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LocalProcess, uv_binary
from tests.integration.installs import evidence, pip, pip_report
from tests.integration.test_cycle import run_ok
from tests.integration.test_index_maintenance import fetch
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.staging.hermetic import hermetic_env

INDEX = "v2/plus"
VERSION = "1.0+rocm6.4"
REQUIREMENT = f"pluspkg=={VERSION}"
COMMIT = "7" * 40


def uv_install(index_url: str, target: Path, requirement: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            uv_binary(),
            "pip",
            "install",
            "--no-cache",
            "--target",
            str(target),
            "--index-url",
            index_url,
            requirement,
        ],
        env=hermetic_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def installed_version(target: Path) -> str:
    return (target / "pluspkg" / "__init__.py").read_text()


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.fixture(scope="module")
def released(
    local: LocalProcess, venv_factory: Any, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """Given pluspkg 1.0+rocm6.4 staged by run plus-1, installed by its test from the run's
    index, and promoted to nightly."""
    wheel = build_wheel(tmp_path_factory.mktemp("plus"), "pluspkg", VERSION)
    assert wheel.name == "pluspkg-1.0+rocm6.4-py3-none-any.whl"
    run_ok(local, "stage", "--run-id", "plus-1", "--index", INDEX, "--commit", COMMIT, str(wheel))
    run_ok(
        local,
        "report",
        "--run-id",
        "plus-1",
        "--commit",
        COMMIT,
        "--test",
        f"{INDEX}:smoke=passed",
        *evidence(INDEX, pip_report(venv_factory, local.run_index("plus-1", INDEX), [wheel])),
    )
    record = json.loads(run_ok(local, "status", "plus-1", "--wait", "60"))
    assert record["state"] == "promoted", record
    return wheel


def test_the_local_server_reads_a_raw_plus_as_s3_does(local: LocalProcess, released: Path) -> None:
    # A raw '+' asks for a key with a space (404); %2B asks for the file.
    raw = f"{local.nightly_url}{INDEX}/{released.name}"
    assert status(raw) == 404
    assert status(raw.replace("+", "%2B")) == 200


@pytest.mark.parametrize("accept", ["text/html", "application/vnd.pypi.simple.v1+json"])
def test_pages_link_the_file_with_plus_encoded(
    local: LocalProcess, released: Path, accept: str
) -> None:
    body = fetch(f"{local.nightly_url}{INDEX}/pluspkg/", accept)
    assert "pluspkg-1.0%2Brocm6.4-py3-none-any.whl" in body
    assert "/pluspkg-1.0+rocm6.4" not in body


def test_uv_and_pip_install_it_from_nightly(
    local: LocalProcess, released: Path, venv_factory: Any, tmp_path: Path
) -> None:
    nightly = f"{local.nightly_url}{INDEX}/"
    result = uv_install(nightly, tmp_path / "uv", REQUIREMENT)
    assert result.returncode == 0, result.stderr
    assert VERSION in installed_version(tmp_path / "uv")
    result = pip(venv_factory("plus-nightly-pip"), "install", "--index-url", nightly, REQUIREMENT)
    assert result.returncode == 0, result.stderr


def test_uv_and_pip_install_it_from_the_runs_staging_index(
    local: LocalProcess, released: Path, venv_factory: Any, tmp_path: Path
) -> None:
    # From the run's own index: the run's file, linked relatively.
    own = local.run_index("plus-1", INDEX)
    result = uv_install(own, tmp_path / "own", REQUIREMENT)
    assert result.returncode == 0, result.stderr
    assert VERSION in installed_version(tmp_path / "own")
    result = pip(venv_factory("plus-staging-pip"), "install", "--index-url", own, REQUIREMENT)
    assert result.returncode == 0, result.stderr

    # From a later run's index: nightly's file, linked absolutely, encoded exactly once.
    later = build_wheel(tmp_path / "later", "pluspkg", "1.1+rocm6.4")
    run_ok(local, "stage", "--run-id", "plus-2", "--index", INDEX, "--commit", COMMIT, str(later))
    page = fetch(local.run_index("plus-2", INDEX) + "pluspkg/")
    assert f"{local.nightly_url}{INDEX}/pluspkg-1.0%2Brocm6.4-py3-none-any.whl#" in page
    assert "%252B" not in page
    result = uv_install(local.run_index("plus-2", INDEX), tmp_path / "borrowed", REQUIREMENT)
    assert result.returncode == 0, result.stderr
    assert VERSION in installed_version(tmp_path / "borrowed")


def test_a_project_url_without_its_slash_redirects(local: LocalProcess, released: Path) -> None:
    # Served at .../pluspkg, the page's relative links would resolve one level up.
    request = urllib.request.Request(f"{local.nightly_url}{INDEX}/pluspkg?x=1", method="HEAD")

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.build_opener(NoRedirect).open(request, timeout=10)
    assert raised.value.code == 301
    assert raised.value.headers["Location"] == f"/{INDEX}/pluspkg/?x=1"
    # And a client that follows it gets the page.
    assert "pluspkg-1.0%2Brocm6.4" in fetch(f"{local.nightly_url}{INDEX}/pluspkg")
