"""``wheelgate local --fanout-min-files``: a run promoted through a fan-out execution that local
mode runs in the promoter's process, as ``make demo``'s users would see it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LocalProcess, local_process
from tests.integration.installs import evidence, pip_report
from wheelgate.local.sample_wheels import build_wheel

INDEX = "v2/fanout"


@pytest.fixture(scope="module")
def local_fanout() -> Iterator[LocalProcess]:
    with local_process("--fanout-min-files", "2") as started:
        yield started


def ok(local: LocalProcess, *args: str) -> str:
    result = local.wheelgate(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_local_mode_promotes_a_large_run_through_an_execution(
    local_fanout: LocalProcess, venv_factory: Any, tmp_path: Path
) -> None:
    # Given local mode fanning out from two files, and a run of three staged wheels...
    wheels = [build_wheel(tmp_path, f"lf{n}", "1.0") for n in range(3)]
    commit = "7" * 40
    ok(
        local_fanout,
        "stage",
        "--run-id",
        "lf-1",
        "--index",
        INDEX,
        "--commit",
        commit,
        *map(str, wheels),
    )
    # When its test, which installed them from the run's index, is reported...
    report = pip_report(venv_factory, local_fanout.run_index("lf-1", INDEX), wheels)
    ok(
        local_fanout,
        *("report", "--run-id", "lf-1", "--commit", commit, "--test", f"{INDEX}:smoke=passed"),
        *evidence(INDEX, report),
    )
    status = local_fanout.wheelgate("status", "lf-1", "--wait", "60")
    record = json.loads(status.stdout)
    # Then the run is promoted by an execution that the record names, and nightly lists it.
    assert record["state"] == "promoted", record
    s3 = local_fanout.client("s3")
    full = json.loads(
        s3.get_object(Bucket=local_fanout.env["WHEELGATE_STAGING_BUCKET"], Key="records/lf-1.json")[
            "Body"
        ].read()
    )
    assert [h["state"] for h in full["history"]] == ["pending", "promoted"]
    assert "copying 3 of 3 file(s) through execution lf-1-" in full["history"][0]["message"]
    page = s3.get_object(
        Bucket=local_fanout.env["WHEELGATE_NIGHTLY_BUCKET"], Key=f"{INDEX}/lf1/index.json"
    )
    assert [f["filename"] for f in json.loads(page["Body"].read())["files"]] == [wheels[1].name]
