"""The whole cycle through ``wheelgate local``: stage, install from staging, report, promote,
install from nightly with pip and uv; a rejected run; a redelivered manifest."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LocalProcess
from tests.integration.installs import evidence, installs, pip, pip_report, sha256, uv_install
from wheelgate.local.sample_wheels import build_wheel

INDEX = "v2/gfx94X-dcgpu"


def run_ok(local: LocalProcess, *args: str) -> str:
    result = local.wheelgate(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def stage_and_report(
    local: LocalProcess,
    venv_factory: Any,
    run: str,
    commit: str,
    wheels: list[Path],
    result: str = "passed",
) -> tuple[int, dict[str, Any]]:
    """Stage ``wheels`` as run ``run``; its test job installs them from the run's index with
    pip's report (a passed test's evidence) and reports ``result``; the run's decision."""
    run_ok(local, "stage", "--run-id", run, "--index", INDEX, "--commit", commit, *map(str, wheels))
    installed = (
        evidence(INDEX, pip_report(venv_factory, local.run_index(run, INDEX), wheels))
        if result == "passed"
        else []
    )
    run_ok(
        local,
        *("report", "--run-id", run, "--commit", commit, "--test", f"{INDEX}:smoke={result}"),
        *installed,
    )
    status = local.wheelgate("status", run, "--wait", "60")
    return status.returncode, json.loads(status.stdout)


@pytest.fixture(scope="module")
def promoted(
    local: LocalProcess, venv_factory: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """Given nightly holding cyc-filelock, and run 100 staged with cyc-torch needing it, which
    its test job installed from the run's index with pip's installation report."""
    wheels = tmp_path_factory.mktemp("wheels")
    filelock = build_wheel(wheels, "cyc-filelock", "3.18.0")
    torch = build_wheel(
        wheels, "cyc-torch", "2.7.0", requires=["cyc-filelock>=3"], payload_bytes=2_000_000
    )
    code, record = stage_and_report(local, venv_factory, "cyc-seed", "1" * 40, [filelock])
    assert (code, record["state"]) == (0, "promoted"), record
    run_ok(local, "stage", "--run-id", "100", "--index", INDEX, "--commit", "2" * 40, str(torch))
    report = pip_report(venv_factory, local.run_index("100", INDEX), [torch])
    return {"torch": torch, "filelock": filelock, "report": report}


def test_test_jobs_install_from_staging_with_nightly_dependencies(
    local: LocalProcess, promoted: dict[str, Any]
) -> None:
    # The test job installed cyc-torch from the run's own index, and cyc-filelock, which lives
    # only in nightly, from nightly: the staging page borrowed it (an absolute link).
    urls = {i["metadata"]["name"]: i["download_info"]["url"] for i in installs(promoted["report"])}
    assert urls == {
        "cyc-torch": local.run_index("100", INDEX) + promoted["torch"].name,
        "cyc-filelock": f"{local.nightly_url}{INDEX}/{promoted['filelock'].name}",
    }


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
        f"{INDEX}:smoke=passed@https://github.com/ROCm/TheRock/actions/runs/100",
        *evidence(INDEX, promoted["report"]),
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
    filelock_sha = sha256(promoted["filelock"])
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
    result = uv_install(venv, "--index-url", nightly_index, "cyc-torch==2.7.0")
    assert result.returncode == 0, result.stderr
    assert "cyc-torch==2.7.0" in result.stderr


def test_failed_run_is_rejected_and_nightly_keeps_every_byte(
    local: LocalProcess, promoted: dict[str, Any], venv_factory: Any, tmp_path: Path
) -> None:
    bad = build_wheel(tmp_path, "cyc-torch", "2.8.0", requires=["cyc-filelock>=3"])
    before = local.nightly_versions()
    code, record = stage_and_report(local, venv_factory, "101", "3" * 40, [bad], result="failed")
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


def test_pypi_simple_reads_both_formats_over_http(
    local: LocalProcess, promoted: dict[str, Any]
) -> None:
    from pypi_simple import ACCEPT_HTML_ONLY, ACCEPT_JSON_ONLY, PyPISimple

    for accept in (ACCEPT_HTML_ONLY, ACCEPT_JSON_ONLY):
        with PyPISimple(endpoint=f"{local.nightly_url}{INDEX}/", accept=accept) as client:
            page = client.get_project_page("cyc-filelock")
            [package] = page.packages
            assert package.filename == promoted["filelock"].name
            assert package.has_metadata
            assert package.digests["sha256"]
            assert page.repository_version == "1.1"
            index = client.get_index_page()
            assert "cyc-filelock" in index.projects


def test_pins_install_exactly_the_staged_bytes(
    local: LocalProcess, venv_factory: Any, tmp_path: Path
) -> None:
    # Given nightly already has pins-b 1.0, and the run stages a rebuilt pins-b 1.0 (build
    # tag 1, other bytes) with pins-a which needs it...
    old_b = build_wheel(tmp_path / "old", "pins-b", "1.0")
    code, _ = stage_and_report(local, venv_factory, "pins-seed", "8" * 40, [old_b])
    assert code == 0
    new_b = build_wheel(
        tmp_path / "new", "pins-b", "1.0", tag="1-py3-none-any", module_source="REBUILT = True\n"
    )
    a = build_wheel(tmp_path / "new", "pins-a", "1.0", requires=["pins-b==1.0"])
    run_ok(
        local,
        "stage",
        "--run-id",
        "pins-1",
        "--index",
        INDEX,
        "--commit",
        "9" * 40,
        str(new_b),
        str(a),
    )
    pins = tmp_path / "pins.txt"
    pins.write_text(run_ok(local, "pins", "--run-id", "pins-1", "--index", INDEX))
    assert "--hash=sha256:" in pins.read_text()
    venv = venv_factory("pins")
    result = pip(
        venv,
        "install",
        "--require-hashes",
        "--index-url",
        local.run_index("pins-1", INDEX),
        "-r",
        str(pins),
    )
    assert result.returncode == 0, result.stderr
    probe = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import pins_b; print(pins_b.REBUILT)"],
        capture_output=True,
        text=True,
        check=False,
    )
    # ...the test job got the staged rebuild, not nightly's same-named release.
    assert probe.stdout.strip() == "True", probe.stderr
    # A pin with one changed hex digit refuses to install.
    text = pins.read_text()
    first = text.index("sha256:") + len("sha256:")
    pins.write_text(text[:first] + ("0" if text[first] != "0" else "1") + text[first + 1 :])
    venv = venv_factory("pins-tampered")
    result = pip(
        venv,
        "install",
        "--require-hashes",
        "--index-url",
        local.run_index("pins-1", INDEX),
        "-r",
        str(pins),
    )
    assert result.returncode != 0
    assert "hash" in result.stderr.lower()


def test_pins_cover_dependencies_that_live_only_in_nightly(
    local: LocalProcess, venv_factory: Any, tmp_path: Path
) -> None:
    # Given nightly has pn-dep, and a run stages pn-app, which needs it
    dep = build_wheel(tmp_path / "nightly", "pn-dep", "1.0")
    code, _ = stage_and_report(local, venv_factory, "pn-seed", "a" * 40, [dep])
    assert code == 0
    app = build_wheel(tmp_path / "run", "pn-app", "1.0+rocm7.0", requires=["pn-dep>=1"])
    run_ok(local, "stage", "--run-id", "pn-1", "--index", INDEX, "--commit", "b" * 40, str(app))
    # When the test job asks for the run's pins
    pins = tmp_path / "pins.txt"
    pins.write_text(run_ok(local, "pins", "--run-id", "pn-1", "--index", INDEX))
    # Then they pin the whole closure: the run's file and the dependency from nightly
    text = pins.read_text()
    assert f"pn-app==1.0+rocm7.0 \\\n    --hash=sha256:{sha256(app)}\n" in text
    assert f"pn-dep==1.0 \\\n    --hash=sha256:{sha256(dep)}\n" in text
    # And pip and uv both install them with --require-hashes from the run's index
    venv = venv_factory("pins-closure-pip")
    run_index = local.run_index("pn-1", INDEX)
    result = pip(venv, "install", "--require-hashes", "--index-url", run_index, "-r", str(pins))
    assert result.returncode == 0, result.stderr
    venv = venv_factory("pins-closure-uv")
    result = uv_install(venv, "--require-hashes", "--index-url", run_index, "-r", str(pins))
    assert result.returncode == 0, result.stderr
    assert "pn-dep==1.0" in result.stderr
