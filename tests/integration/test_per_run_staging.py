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
from tests.integration.installs import evidence, pip, pip_report
from tests.integration.test_cycle import run_ok
from tests.integration.test_index_maintenance import fetch
from wheelgate.core.layout import STAGING
from wheelgate.local.sample_wheels import build_wheel

INDEX = "v2/per-run"
NIGHTLY_VERSION = "1.0.dev20261130"


def imported_build(venv: Path, module: str) -> str:
    probe = subprocess.run(
        [str(venv / "bin" / "python"), "-c", f"import {module}; print({module}.BUILD)"],
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
