"""Each run's tests install from the run's own index: its staged files over nightly's, never
another run's; staged objects are written once (issue: what the tests installed is exactly
what ships)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.integration.conftest import LocalProcess
from tests.integration.installs import evidence, pip, pip_report, uv_install
from tests.integration.test_cycle import run_ok
from tests.integration.test_index_maintenance import fetch
from wheelgate.core.layout import STAGING
from wheelgate.local.sample_wheels import build_wheel

# Real pip and uv installs into fresh virtualenvs: `make test` only.
pytestmark = pytest.mark.slow

INDEX = "v2/per-run"
NIGHTLY_VERSION = "1.0.dev20261130"


def imported_build(venv: Path, module: str, attribute: str = "BUILD") -> str:
    """``module.attribute`` as ``venv``'s Python imports it (what a test installed there)."""
    probe = subprocess.run(
        [str(venv / "bin" / "python"), "-c", f"import {module}; print({module}.{attribute})"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr
    return probe.stdout.strip()


def test_two_runs_with_one_file_name_each_install_their_own_bytes(
    local: LocalProcess, venv_factory: Any, tmp_path: Path
) -> None:
    # Given two nightly runs of one day that build the same file name with other bytes...
    wheels = {
        run: build_wheel(
            tmp_path / run, "pr-pkg", NIGHTLY_VERSION, module_source=f'BUILD = "{run}"\n'
        )
        for run in ("pr-a", "pr-b")
    }
    assert wheels["pr-a"].name == wheels["pr-b"].name
    assert wheels["pr-a"].read_bytes() != wheels["pr-b"].read_bytes()
    urls = {}
    for run, wheel in wheels.items():
        staged = json.loads(
            run_ok(
                local, "stage", "--run-id", run, "--index", INDEX, "--commit", "a" * 40, str(wheel)
            )
        )
        urls[run] = staged["index_url"]
        assert urls[run] == local.run_index(run, INDEX)
    # When each run's test installs from the index `stage` printed for it...
    for run, url in urls.items():
        venv = venv_factory(f"per-run-{run}")
        result = pip(venv, "install", "--index-url", url, f"pr-pkg=={NIGHTLY_VERSION}")
        assert result.returncode == 0, result.stderr
        # Then it gets its own run's bytes, whatever the other run staged.
        assert imported_build(venv, "pr_pkg") == run


def test_a_staged_object_is_never_replaced(local: LocalProcess, tmp_path: Path) -> None:
    # Given a staged wheel...
    wheel = build_wheel(tmp_path / "one", "wo-pkg", "1.0", module_source='BUILD = "one"\n')
    stage = ("stage", "--run-id", "wo-1", "--index", INDEX, "--commit", "b" * 40)
    run_ok(local, *stage, str(wheel))
    key = STAGING.artifact("wo-1", INDEX, wheel.name)
    s3 = local.client("s3")
    bucket = local.env["WHEELGATE_STAGING_BUCKET"]
    before = s3.head_object(Bucket=bucket, Key=key)["ETag"]
    # When a re-run stages other bytes under the same name, Then it is refused, naming the
    # file, and the staged object is unchanged.
    rebuilt = build_wheel(tmp_path / "two", "wo-pkg", "1.0", module_source='BUILD = "two"\n')
    refused = local.wheelgate(*stage, str(rebuilt))
    assert refused.returncode == 2
    assert f"{wheel.name} (staged sha256" in refused.stderr
    assert "never replaced" in refused.stderr
    assert s3.head_object(Bucket=bucket, Key=key)["ETag"] == before
    # And the same bytes from another commit are refused too: the object names its commit.
    other_commit = local.wheelgate(
        "stage", "--run-id", "wo-1", "--index", INDEX, "--commit", "c" * 40, str(wheel)
    )
    assert other_commit.returncode == 2
    assert "staged from commit " + "b" * 40 in other_commit.stderr
    # And a conditional write, as `stage` makes, never replaces it on S3 itself.
    with pytest.raises(ClientError, match="PreconditionFailed"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"other", IfNoneMatch="*")


def test_a_rejected_run_is_never_offered_to_another_run(
    local: LocalProcess, venv_factory: Any, tmp_path: Path
) -> None:
    # Given nightly has rj-dep 3.10, and a run that rebuilt rj-dep 3.10 with other bytes is
    # rejected (its test failed)...
    released = build_wheel(tmp_path / "nightly", "rj-dep", "3.10", module_source='BUILD = "n"\n')
    run_ok(
        local, "stage", "--run-id", "rj-seed", "--index", INDEX, "--commit", "d" * 40, str(released)
    )
    report = pip_report(venv_factory, local.run_index("rj-seed", INDEX), [released])
    run_ok(
        local,
        *("report", "--run-id", "rj-seed", "--commit", "d" * 40),
        *("--test", f"{INDEX}:smoke=passed", *evidence(INDEX, report)),
    )
    assert local.wheelgate("status", "rj-seed", "--wait", "60").returncode == 0
    rebuilt = build_wheel(
        tmp_path / "bad",
        "rj-dep",
        "3.10",
        tag="1-py3-none-any",
        module_source='BUILD = "rejected"\n',
    )
    run_ok(
        local, "stage", "--run-id", "rj-bad", "--index", INDEX, "--commit", "e" * 40, str(rebuilt)
    )
    run_ok(
        local,
        "report",
        "--run-id",
        "rj-bad",
        "--commit",
        "e" * 40,
        "--test",
        f"{INDEX}:smoke=failed",
    )
    assert local.wheelgate("status", "rj-bad", "--wait", "60").returncode == 1
    # When the next run, which needs rj-dep, is tested from its own index...
    app = build_wheel(tmp_path / "next", "rj-app", "1.0", requires=["rj-dep==3.10"])
    staged = json.loads(
        run_ok(
            local, "stage", "--run-id", "rj-next", "--index", INDEX, "--commit", "f" * 40, str(app)
        )
    )
    page = json.loads(fetch(staged["index_url"] + "rj-dep/", "application/vnd.pypi.simple.v1+json"))
    venv = venv_factory("rj-next")
    result = pip(venv, "install", "--index-url", staged["index_url"], "rj-app==1.0")
    assert result.returncode == 0, result.stderr
    # Then it installs nightly's rj-dep, and the rejected rebuild is not even listed.
    assert imported_build(venv, "rj_dep") == "n"
    assert [f["filename"] for f in page["files"]] == [released.name]


def run_index_projects(url: str) -> list[str]:
    """The project names a run index's root page lists (PEP 691)."""
    root = json.loads(fetch(url, "application/vnd.pypi.simple.v1+json"))
    return sorted(p["name"] for p in root["projects"])


@pytest.fixture(scope="module")
def closure_nightly(
    local: LocalProcess, venv_factory: Any, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """Given nightly holding a dependency tree two levels deep under cl-mid (cl-leaf, and a
    dependency for each platform behind a marker) and cl-other, which nothing requires; none of
    them is ever staged by the runs below."""
    wheels = tmp_path_factory.mktemp("closure")
    tree = [
        build_wheel(wheels, "cl-leaf", "1.0"),
        build_wheel(wheels, "cl-linux", "1.0"),
        build_wheel(wheels, "cl-win", "1.0"),
        build_wheel(wheels, "cl-other", "2.0"),
        build_wheel(
            wheels,
            "cl-mid",
            "1.0",
            requires=[
                "cl-leaf>=1",
                'cl-linux; sys_platform == "linux"',
                'cl-win; sys_platform == "win32"',
            ],
        ),
    ]
    commit = "9" * 40
    run_ok(
        local, "stage", "--run-id", "cl-seed", "--index", INDEX, "--commit", commit, *map(str, tree)
    )
    run_ok(
        local,
        *("report", "--run-id", "cl-seed", "--commit", commit, "--test", f"{INDEX}:smoke=passed"),
        *evidence(INDEX, pip_report(venv_factory, local.run_index("cl-seed", INDEX), tree)),
    )
    assert local.wheelgate("status", "cl-seed", "--wait", "60").returncode == 0
    return wheels


def test_a_run_index_offers_its_dependency_closure_and_pip_and_uv_install_from_it(
    local: LocalProcess, closure_nightly: Path, venv_factory: Any, tmp_path: Path
) -> None:
    # Given a run that stages cl-app, which needs cl-mid (nightly's alone)...
    app = build_wheel(tmp_path, "cl-app", "1.0", requires=["cl-mid==1.0"])
    staged = json.loads(
        run_ok(local, "stage", "--run-id", "cl-1", "--index", INDEX, "--commit", "8" * 40, str(app))
    )
    url = staged["index_url"]
    # Then its index offers the run's project and the closure, for every platform's marker,
    # and nothing else of nightly's.
    closure = ["cl-app", "cl-leaf", "cl-linux", "cl-mid", "cl-win"]
    assert run_index_projects(url) == closure
    assert all(f"{INDEX}/cl-other/" not in key for key in staged["pages"])
    # When a test installs the run's project from it with pip, and another with uv...
    for install in ("pip", "uv"):
        venv = venv_factory(f"closure-{install}")
        if install == "pip":
            result = pip(venv, "install", "--no-cache-dir", "--index-url", url, "cl-app==1.0")
        else:
            result = uv_install(venv, "--no-cache", "--index-url", url, "cl-app==1.0")
        assert result.returncode == 0, result.stdout + result.stderr
        # Then both levels of dependencies come from nightly, with the one this platform's
        # marker selects.
        for module in ("cl_app", "cl_mid", "cl_leaf", "cl_linux"):
            assert imported_build(venv, module, "__version__") == "1.0", (install, module)


def test_a_second_stage_call_extends_the_run_index_and_pins_cover_every_platform(
    local: LocalProcess, closure_nightly: Path, tmp_path: Path
) -> None:
    # Given a run whose first build job staged cl-app (closure: cl-mid and below)...
    app = build_wheel(tmp_path / "a", "cl-app", "2.0", requires=["cl-mid"])
    stage = ("stage", "--run-id", "cl-2", "--index", INDEX, "--commit", "7" * 40)
    first = json.loads(run_ok(local, *stage, str(app)))
    # When a second job of the run stages cl-tool, which needs cl-other...
    tool = build_wheel(tmp_path / "t", "cl-tool", "1.0", requires=["cl-other"])
    second = json.loads(run_ok(local, *stage, str(tool)))
    assert second["index_url"] == first["index_url"]
    # Then the index holds both jobs' projects and closures: the first's are not lost.
    assert run_index_projects(second["index_url"]) == [
        "cl-app",
        "cl-leaf",
        "cl-linux",
        "cl-mid",
        "cl-other",
        "cl-tool",
        "cl-win",
    ]
    app_page = json.loads(
        fetch(second["index_url"] + "cl-app/", "application/vnd.pypi.simple.v1+json")
    )
    assert [f["filename"] for f in app_page["files"]] == [app.name]
    # And pins for another platform than this one's pin its marker's dependency, which is on
    # the index because the closure takes every marker.
    pins = run_ok(
        local, "pins", "--run-id", "cl-2", "--index", INDEX, "--target", "cp311-win_amd64"
    )
    pinned = sorted(line.split("==")[0] for line in pins.splitlines() if "==" in line)
    assert pinned == ["cl-app", "cl-leaf", "cl-mid", "cl-other", "cl-tool", "cl-win"]
