"""Requests the embedded stack's promoter ignores or refuses end the command at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.integration.conftest import LocalProcess
from wheelgate.core.env_names import ENV_IMPORT_SOURCES
from wheelgate.local.sample_wheels import build_wheel


def _wheelgate(
    local: LocalProcess, *args: str, drop: str = "", extra: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The command with the stack's environment, without ``drop``, with ``extra``."""
    env = {k: v for k, v in {**os.environ, **local.env}.items() if k != drop} | dict(extra or {})
    return subprocess.run(
        [sys.executable, "-m", "wheelgate", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.mark.slow
def test_an_import_from_the_reporter_ends_at_once_with_the_records_reason(
    local: LocalProcess,
) -> None:
    # Given the stack without a break-glass role, and a client that cannot see its sources
    # When the reporter's credentials ask for an import, willing to wait a minute
    started = time.monotonic()
    result = _wheelgate(
        local,
        *("import", "--from", "s3://elsewhere/wheels/", "--index", "v2/x", "--wait", "60"),
        drop=ENV_IMPORT_SOURCES,
    )
    # Then the promoter's note that it ignored the writer ends the wait: exit 1, its reason
    assert result.returncode == 1, result.stderr
    assert time.monotonic() - started < 30
    assert "untrusted-writer: ignored: import requested by" in result.stderr
    assert "nothing more will come of this request" in result.stderr


def test_an_override_from_the_reporter_is_refused_at_once(local: LocalProcess) -> None:
    started = time.monotonic()
    result = _wheelgate(
        local,
        *("promote", "--override", "--run-id", "some-run", "--wait", "60", "--json"),
        *("--reason", "the GPU runners are down"),
    )
    assert result.returncode == 1, result.stderr
    assert time.monotonic() - started < 30
    assert '"reason": "untrusted-writer"' in result.stdout


def _source_with_a_wheel(local: LocalProcess, tmp_path: Path, bucket: str) -> str:
    s3 = local.client("s3")
    s3.create_bucket(Bucket=bucket)
    built = build_wheel(tmp_path, "legacy-lib", "1.0.0")
    s3.upload_file(str(built), bucket, f"releases/{built.name}")
    return f"s3://{bucket}/releases/"


def test_a_dry_run_refuses_a_source_the_deployment_does_not_allow(
    local: LocalProcess, tmp_path: Path
) -> None:
    # Given the stack's environment, whose import_sources are none
    source = _source_with_a_wheel(local, tmp_path, "legacy-refused")
    # When an import from a bucket of it is previewed
    result = local.wheelgate("import", "--from", source, "--index", "v2/x", "--dry-run")
    # Then the preview refuses it as the promoter would, before reading anything
    assert result.returncode == 2, result.stderr
    assert "import-source-not-allowed" in result.stderr
    assert "(none; import_sources in cdk.json)" in result.stderr


def test_a_dry_run_says_what_only_the_promoter_checks(local: LocalProcess, tmp_path: Path) -> None:
    # Given a client that does not know the deployment's import sources
    source = _source_with_a_wheel(local, tmp_path, "legacy-unknown")
    # When an import is previewed
    args = ("import", "--from", source, "--index", "v2/x", "--dry-run")
    result = _wheelgate(local, *args, drop=ENV_IMPORT_SOURCES)
    # Then it says the source was not checked, and that the writer is the promoter's check
    assert result.returncode == 0, result.stderr
    assert "would import 1 file(s)" in result.stderr
    assert f"{ENV_IMPORT_SOURCES} is not set here, so it was not checked" in result.stderr
    left = json.loads(result.stdout)["left_to_the_promoter"]
    assert any("break-glass role" in check for check in left)
