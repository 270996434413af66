"""The whole cycle through ``wheelgate local``: stage, install from staging, report, promote,
install from nightly with pip and uv; a rejected run; a redelivered manifest."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LocalProcess, hermetic_env, uv_binary
from wheelgate.sample_wheels import build_wheel

INDEX = "v2/gfx94X-dcgpu"


def run_ok(local: LocalProcess, *args: str) -> str:
    result = local.wheelgate(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def stage_and_report(
    local: LocalProcess, run: str, commit: str, wheels: list[Path], result: str = "passed"
) -> tuple[int, dict[str, Any]]:
    run_ok(local, "stage", "--run-id", run, "--index", INDEX, "--commit", commit, *map(str, wheels))
    run_ok(
        local, "report", "--run-id", run, "--commit", commit, "--test", f"{INDEX}:smoke={result}"
    )
    status = local.wheelgate("status", run, "--wait", "60")
    return status.returncode, json.loads(status.stdout)


def pip(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The test environment's (current) pip, installing into the clean ``venv``."""
    return subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), *args],
        env=hermetic_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


@pytest.fixture(scope="module")
def promoted(local: LocalProcess, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Given nightly holding cyc-filelock, and run 100 promoted with cyc-torch needing it."""
    wheels = tmp_path_factory.mktemp("wheels")
    filelock = build_wheel(wheels, "cyc-filelock", "3.18.0")
    torch = build_wheel(
        wheels, "cyc-torch", "2.7.0", requires=["cyc-filelock>=3"], payload_bytes=2_000_000
    )
    code, record = stage_and_report(local, "cyc-seed", "1" * 40, [filelock])
    assert (code, record["state"]) == (0, "promoted"), record
    run_ok(local, "stage", "--run-id", "100", "--index", INDEX, "--commit", "2" * 40, str(torch))
    return {"torch": torch, "filelock": filelock}


def test_test_jobs_install_from_staging_with_nightly_dependencies(
    local: LocalProcess, promoted: dict[str, Any], venv_factory: Any
) -> None:
    venv = venv_factory("staging-install")
    result = pip(venv, "install", "--index-url", f"{local.staging_url}{INDEX}/", "cyc-torch==2.7.0")
    assert result.returncode == 0, result.stderr
    # cyc-filelock lives only in nightly: the staging page borrowed it.
    assert "cyc-filelock" in result.stdout


def test_passed_run_is_promoted_and_installable_with_pip_and_uv(
    local: LocalProcess, promoted: dict[str, Any], venv_factory: Any, tmp_path: Path
) -> None:
    run_ok(
        local,
        "report",
        "--run-id",
        "100",
        "--commit",
        "2" * 40,
        "--test",
        f"{INDEX}:smoke=passed@https://ci.invalid/100",
    )
    status = local.wheelgate("status", "100", "--wait", "60")
    record = json.loads(status.stdout)
    assert status.returncode == 0, record
    assert record["sets"][0]["files"][0]["action"] == "copied"
    nightly_index = f"{local.nightly_url}{INDEX}/"

    venv = venv_factory("nightly-pip")
    result = pip(venv, "install", "--index-url", nightly_index, "cyc-torch==2.7.0")
    assert result.returncode == 0, result.stderr

    # --require-hashes with the hashes the record carries: the bytes tested are the bytes served.
    torch_sha = record["sets"][0]["files"][0]["sha256"]
    filelock = promoted["filelock"]
    import hashlib

    filelock_sha = hashlib.sha256(filelock.read_bytes()).hexdigest()
    requirements = tmp_path / "req.txt"
    requirements.write_text(
        f"cyc-torch==2.7.0 --hash=sha256:{torch_sha}\n"
        f"cyc-filelock==3.18.0 --hash=sha256:{filelock_sha}\n"
    )
    venv = venv_factory("nightly-hashes")
    result = pip(
        venv, "install", "--require-hashes", "--index-url", nightly_index, "-r", str(requirements)
    )
    assert result.returncode == 0, result.stderr

    venv = venv_factory("nightly-uv")
    result = subprocess.run(
        [
            uv_binary(),
            "pip",
            "install",
            "--python",
            str(venv / "bin" / "python"),
            "--index-url",
            nightly_index,
            "cyc-torch==2.7.0",
        ],
        env=hermetic_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "cyc-torch==2.7.0" in result.stderr


def test_dry_run_resolution_reads_metadata_not_the_wheel(
    local: LocalProcess, promoted: dict[str, Any], venv_factory: Any, tmp_path: Path
) -> None:
    venv = venv_factory("dry-run")
    report = tmp_path / "report.json"
    result = pip(
        venv,
        "install",
        "--dry-run",
        "--report",
        str(report),
        "-v",
        "--index-url",
        f"{local.nightly_url}{INDEX}/",
        "cyc-torch==2.7.0",
    )
    assert result.returncode == 0, result.stderr
    resolved = {i["metadata"]["name"]: i for i in json.loads(report.read_text())["install"]}
    assert set(resolved) == {"cyc-torch", "cyc-filelock"}
    # pip fetched the PEP 658 file and never downloaded the 2 MB wheel.
    assert "cyc_torch-2.7.0-py3-none-any.whl.metadata" in result.stdout
    assert "cyc_torch-2.7.0-py3-none-any.whl (" not in result.stdout


def test_failed_run_is_rejected_and_nightly_keeps_every_byte(
    local: LocalProcess, promoted: dict[str, Any], tmp_path: Path
) -> None:
    bad = build_wheel(tmp_path, "cyc-torch", "2.8.0", requires=["cyc-filelock>=3"])
    before = local.nightly_versions()
    code, record = stage_and_report(local, "101", "3" * 40, [bad], result="failed")
    assert code == 1
    assert (record["state"], record["reason"]) == ("rejected", "tests-failed")
    assert local.nightly_versions() == before


def test_redelivered_manifest_is_a_no_op(local: LocalProcess, promoted: dict[str, Any]) -> None:
    s3 = local.client("s3")
    bucket = local.env["WHEELGATE_STAGING_BUCKET"]
    run_ok(local, "status", "cyc-seed")
    manifest = s3.get_object(Bucket=bucket, Key="manifests/cyc-seed.json")["Body"].read()
    record_before = s3.get_object(Bucket=bucket, Key="records/cyc-seed.json")["Body"].read()
    before = local.nightly_versions()
    # When the same manifest arrives again (S3 and SQS deliver at least once)...
    s3.put_object(Bucket=bucket, Key="manifests/cyc-seed.json", Body=manifest)
    local.wait_idle()
    # ...nothing changes: no copy, no page write, no new record.
    assert local.nightly_versions() == before
    assert s3.get_object(Bucket=bucket, Key="records/cyc-seed.json")["Body"].read() == record_before
