"""Requests the embedded stack's promoter ignores or refuses end the command at once."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.integration.conftest import LocalProcess
from wheelgate.core.env_names import ENV_IMPORT_SOURCES


def _wheelgate(local: LocalProcess, *args: str, drop: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in {**os.environ, **local.env}.items() if k != drop}
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
