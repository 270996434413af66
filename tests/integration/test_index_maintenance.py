"""Yank/unyank and full index rebuild, through the CLI against ``wheelgate local``."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LocalProcess
from tests.integration.installs import evidence, pip, pip_report
from tests.integration.test_cycle import run_ok
from wheelgate.local.sample_wheels import build_wheel

# Pip installs from the served index: `make test` only.
pytestmark = pytest.mark.slow

INDEX = "v2/maint"


def fetch(url: str, accept: str = "text/html") -> str:
    request = urllib.request.Request(url, headers={"Accept": accept})
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(response.read().decode())


@pytest.fixture(scope="module")
def released(
    local: LocalProcess, venv_factory: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    wheels = tmp_path_factory.mktemp("maint")
    old = build_wheel(wheels, "maint-pkg", "1.0")
    new = build_wheel(wheels, "maint-pkg", "1.1")
    for run, wheel in (("maint-1", old), ("maint-2", new)):
        run_ok(local, "stage", "--run-id", run, "--index", INDEX, "--commit", "5" * 40, str(wheel))
        run_ok(
            local,
            "report",
            "--run-id",
            run,
            "--commit",
            "5" * 40,
            "--test",
            f"{INDEX}:smoke=passed",
            *evidence(INDEX, pip_report(venv_factory, local.run_index(run, INDEX), [wheel])),
        )
        assert local.wheelgate("status", run, "--wait", "60").returncode == 0
    return {"old": old, "new": new}


def test_yank_is_reflected_in_both_formats_and_honoured_by_pip(
    local: LocalProcess, released: dict[str, Path], venv_factory: Any
) -> None:
    new = released["new"].name
    result = local.wheelgate("yank", "--index", INDEX, new, "--reason", "bad GPU kernels")
    assert result.returncode == 0, result.stderr
    assert (
        json.loads(result.stdout)["message"] == f"yanked {new} in {INDEX} (reason: bad GPU kernels)"
    )
    page = f"{local.nightly_url}{INDEX}/maint-pkg/"
    doc = json.loads(fetch(page, "application/vnd.pypi.simple.v1+json"))
    assert {f["filename"]: f["yanked"] for f in doc["files"]} == {
        released["old"].name: False,
        new: "bad GPU kernels",
    }
    assert 'data-yanked="bad GPU kernels"' in fetch(page)
    # The file is still there: nothing was deleted.
    assert local.client("s3").head_object(
        Bucket=local.env["WHEELGATE_NIGHTLY_BUCKET"], Key=f"{INDEX}/{new}"
    )
    venv = venv_factory("yank")
    installed = pip(venv, "install", "--index-url", f"{local.nightly_url}{INDEX}/", "maint-pkg")
    assert installed.returncode == 0, installed.stderr
    assert "maint-pkg-1.0" in installed.stdout  # the yanked 1.1 was skipped

    result = local.wheelgate("unyank", "--index", INDEX, new)
    assert result.returncode == 0, result.stderr
    doc = json.loads(fetch(page, "application/vnd.pypi.simple.v1+json"))
    assert all(f["yanked"] is False for f in doc["files"])


def test_yanking_a_file_that_is_not_released_is_refused(local: LocalProcess, released: Any) -> None:
    result = local.wheelgate(
        "yank", "--index", INDEX, "maint_pkg-9.9-py3-none-any.whl", "--reason", "x"
    )
    assert result.returncode == 1
    assert json.loads(result.stdout)["reason"] == "file-missing"


def test_rebuild_restores_a_lost_page_and_dry_run_writes_nothing(
    local: LocalProcess, released: dict[str, Path]
) -> None:
    s3 = local.client("s3")
    bucket = local.env["WHEELGATE_NIGHTLY_BUCKET"]
    original = json.loads(
        fetch(f"{local.nightly_url}{INDEX}/maint-pkg/", "application/vnd.pypi.simple.v1+json")
    )
    # Given the project's pages are lost (a delete marker hides them)...
    for page in ("index.json", "index.html"):
        s3.delete_object(Bucket=bucket, Key=f"{INDEX}/maint-pkg/{page}")
    before = local.nightly_versions()
    dry = local.wheelgate("index", "rebuild", "--index", INDEX, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert plan["projects"][0]["added"] == sorted(p.name for p in released.values())
    assert plan["pages_written"] == []
    assert local.nightly_versions() == before
    # ...a rebuild writes them again from the files, with the same entries.
    done = local.wheelgate("index", "rebuild", "--index", INDEX)
    assert done.returncode == 0, done.stderr
    rebuilt = json.loads(
        fetch(f"{local.nightly_url}{INDEX}/maint-pkg/", "application/vnd.pypi.simple.v1+json")
    )
    strip = lambda files: [{k: v for k, v in f.items() if k != "upload-time"} for f in files]  # noqa: E731
    assert strip(rebuilt["files"]) == strip(original["files"])
    # A second rebuild finds nothing to change.
    again = json.loads(local.wheelgate("index", "rebuild", "--index", INDEX).stdout)
    assert again["projects"] == []


def test_restaging_uploads_nothing_and_refreshes_the_run_index(
    local: LocalProcess, released: dict[str, Path], tmp_path: Path
) -> None:
    # Given a run staged before a release was yanked in nightly (a run's index offers the
    # nightly projects its own depend on)...
    other = build_wheel(tmp_path, "maint-other", "1.0", requires=["maint-pkg"])
    stage = ("stage", "--run-id", "maint-3", "--index", INDEX, "--commit", "6" * 40, str(other))
    run_ok(local, *stage)
    page = local.run_index("maint-3", INDEX) + "maint-pkg/"
    new = released["new"].name

    def yank_state() -> object:
        doc = json.loads(fetch(page, "application/vnd.pypi.simple.v1+json"))
        return {f["filename"]: f["yanked"] for f in doc["files"]}[new]

    assert yank_state() is False
    result = local.wheelgate("yank", "--index", INDEX, new, "--reason", "late find")
    assert result.returncode == 0, result.stderr
    # ...its index is a snapshot of nightly until the run stages again: then nothing is
    # uploaded and the index shows nightly as it stands.
    assert yank_state() is False
    again = json.loads(run_ok(local, *stage))
    assert (again["uploaded"], again["unchanged"]) == ([], [other.name])
    assert yank_state() == "late find"
    assert local.wheelgate("unyank", "--index", INDEX, new).returncode == 0
