"""Index directories come from configuration: `wheelgate report` refuses a run staged into a
directory the stack does not list (real S3 API, moto server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_promoter import COMMIT, Run, wheel
from wheelgate.cli.main import EXIT_USAGE, main
from wheelgate.core.settings import ENV_ALLOWED_INDEXES
from wheelgate.storage.bucket import Bucket


def test_report_refuses_a_run_staged_outside_the_configured_directories(
    buckets: tuple[Bucket, Bucket],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a run staged into a directory (with no allow-list, as in local mode)...
    run = Run(buckets, tmp_path, "allowed-report", "allowed/unlisted").stage(wheel(tmp_path))
    # When CI, configured with the stack's index_dirs, reports it...
    monkeypatch.setenv(ENV_ALLOWED_INDEXES, json.dumps(["allowed/listed"]))
    code = main(["report", "--run-id", run.run_id, "--commit", COMMIT,
                 f"--test={run.index}:smoke=passed"])  # fmt: skip
    # Then no manifest is written, and the error names the directory.
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert "index-not-allowed: run allowed-report has files staged in 'allowed/unlisted'" in err
    assert run.staging.get(f"manifests/{run.run_id}.json") is None
