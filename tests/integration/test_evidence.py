"""The bytes released are the bytes the tests installed: each test reports what pip installed
from the run's index (``pip install --report``), and the promoter releases a staged file only
when a passed test installed exactly its bytes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LocalProcess
from tests.integration.installs import evidence, pip, pip_report
from tests.integration.test_cycle import run_ok
from wheelgate.core.layout import STAGING
from wheelgate.core.objects import META_COMMIT
from wheelgate.local.sample_wheels import build_wheel

# Real pip installs into fresh virtualenvs: `make test` only.
pytestmark = pytest.mark.slow

INDEX = "v2/evidence"


def stage(local: LocalProcess, run: str, commit: str, *wheels: Path) -> str:
    """Stage ``wheels`` for ``run``; the run's index URL ``stage`` printed."""
    staged = run_ok(
        local, "stage", "--run-id", run, "--index", INDEX, "--commit", commit, *map(str, wheels)
    )
    return str(json.loads(staged)["index_url"])


def report_and_wait(
    local: LocalProcess, run: str, commit: str, report: Path
) -> tuple[int, dict[str, Any], str]:
    """Report the run's passed test with what it installed; the decision, and what the
    report command warned."""
    reported = local.wheelgate(
        *("report", "--run-id", run, "--commit", commit),
        *("--test", f"{INDEX}:smoke=passed@https://github.com/ROCm/TheRock/actions/runs/{run}"),
        *("--installed", f"{INDEX}:smoke={report}"),
    )
    assert reported.returncode == 0, reported.stderr
    status = local.wheelgate("status", run, "--wait", "60")
    return status.returncode, json.loads(status.stdout), reported.stderr


def test_a_wheel_replaced_after_its_test_installed_it_is_not_released(
    local: LocalProcess, venv_factory: Any, tmp_path: Path
) -> None:
    # Given a run whose test installed its staged wheel from the run's index...
    commit = "a1" * 20
    tested = build_wheel(tmp_path / "tested", "ev-swap", "1.0", module_source='BUILD = "t"\n')
    index_url = stage(local, "ev-swap", commit, tested)
    report = tmp_path / "installed.json"
    result = pip(
        venv_factory("ev-swap"),
        *("install", "--report", str(report), "--index-url", index_url, "ev-swap==1.0"),
    )
    assert result.returncode == 0, result.stderr
    # ...and a misbehaving build step that then overwrites the staged object in place (no
    # If-None-Match), with a correct checksum and the run's commit, so only the evidence differs
    replacement = build_wheel(
        tmp_path / "replacement", "ev-swap", "1.0", module_source='BUILD = "swapped"\n'
    )
    assert replacement.name == tested.name
    data = replacement.read_bytes()
    local.client("s3").put_object(
        Bucket=local.env["WHEELGATE_STAGING_BUCKET"],
        Key=STAGING.artifact("ev-swap", INDEX, tested.name),
        Body=data,
        ChecksumAlgorithm="SHA256",
        Metadata={META_COMMIT: commit},
    )
    before = local.nightly_versions()
    # When the passed test is reported with what it installed
    code, record, warned = report_and_wait(local, "ev-swap", commit, report)
    # Then report refuses the test's evidence (it ran on bytes the run's index no longer
    # offers), and the run is rejected, naming the file...
    assert f"foreign-bytes: evidence {report}: {tested.name}" in warned
    assert (code, record["state"], record["reason"]) == (1, "rejected", "foreign-bytes"), record
    assert tested.name in record["message"]
    # ...and nightly holds every byte it held before
    assert local.nightly_versions() == before


def test_a_run_is_released_on_its_tests_pip_report_and_the_record_names_them(
    local: LocalProcess, venv_factory: Any, tmp_path: Path
) -> None:
    # Given nightly holds ev-dep, and a run stages ev-app (with a + in its version) needing it
    dep = build_wheel(tmp_path, "ev-dep", "2.0")
    seed_index = stage(local, "ev-seed", "b1" * 20, dep)
    run_ok(
        local,
        *(
            "report",
            "--run-id",
            "ev-seed",
            "--commit",
            "b1" * 20,
            "--test",
            f"{INDEX}:smoke=passed",
        ),
        *evidence(INDEX, pip_report(venv_factory, seed_index, [dep])),
    )
    assert local.wheelgate("status", "ev-seed", "--wait", "60").returncode == 0
    app = build_wheel(tmp_path, "ev-app", "1.0+rocm7.0", requires=["ev-dep>=2"])
    index_url = stage(local, "ev-app", "b2" * 20, app)
    # When its test installs it from the run's index with pip's installation report...
    report = tmp_path / "installed.json"
    result = pip(
        venv_factory("ev-app"),
        *("install", "--report", str(report), "--index-url", index_url, "ev-app==1.0+rocm7.0"),
    )
    assert result.returncode == 0, result.stderr
    # ...and the report is what wheelgate report passes on
    code, record, warned = report_and_wait(local, "ev-app", "b2" * 20, report)
    assert "warning" not in warned
    # Then the run is promoted, its file on the evidence of that test
    assert (code, record["state"]) == (0, "promoted"), record
    [file] = record["sets"][0]["files"]
    assert (file["filename"], file["action"], file["evidence"]) == (app.name, "copied", ["smoke"])
    assert record["sets"][0]["tests"] == [
        {
            "name": "smoke",
            "result": "passed",
            "url": "https://github.com/ROCm/TheRock/actions/runs/ev-app",
        }
    ]
    # And the manifest says what the test installed: the file (its name decoded from pip's
    # %2B) and the dependency from nightly, which is not in the set and is fine
    manifest = json.loads(
        local.client("s3")
        .get_object(Bucket=local.env["WHEELGATE_STAGING_BUCKET"], Key="manifests/ev-app.json")[
            "Body"
        ]
        .read()
    )
    assert sorted(
        (i["filename"], i["sha256"]) for i in manifest["sets"][0]["tests"][0]["installed"]
    ) == sorted((w.name, hashlib.sha256(w.read_bytes()).hexdigest()) for w in (app, dep))
