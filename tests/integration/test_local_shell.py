"""`wheelgate local` from a shell: it sources the env file and stops the stack; bad options
stop it before it starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

#: Started in the background, used through the sourced file, stopped by the PID it gives.
SCRIPT = """
set -e
"$PYTHON" -m wheelgate local --env-file "$ENV_FILE" >/dev/null 2>&1 &
for _ in $(seq 300); do [ -s "$ENV_FILE" ] && break; sleep 0.1; done
source "$ENV_FILE"
printf '%s' "$WHEELGATE_TEST_URL_HOSTS" > "$STATUS.hosts"
"$PYTHON" -m wheelgate status never-staged --json > "$STATUS" || echo "status exit $?"
kill "$WHEELGATE_LOCAL_PID"
wait "$WHEELGATE_LOCAL_PID"
echo "local exit $?"
"""


@pytest.mark.slow
def test_a_shell_sources_the_env_file_runs_a_command_and_stops_the_stack(tmp_path: Path) -> None:
    # Given `wheelgate local --env-file` started in the background of a bash script
    env_file, status = tmp_path / "local env", tmp_path / "status.json"
    env = {**os.environ, "PYTHON": sys.executable, "ENV_FILE": str(env_file)}
    env["STATUS"] = str(status)
    # When the script sources the file, asks for a run's status and kills the PID it gives
    done = subprocess.run(
        ["bash", "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120
    )
    # Then the command reached the stack (an unknown run, exit 5) and the stack stopped cleanly
    assert done.returncode == 0, done.stderr
    assert "status exit 5" in done.stdout
    assert '"state": "unknown"' in status.read_text()
    assert "local exit 0" in done.stdout
    assert Path(f"{status}.hosts").read_text() == '["github.com"]'


def test_an_import_source_that_is_not_a_bucket_stops_local_before_it_starts() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "wheelgate", "local", "--import-source", "s3://old/"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--import-source: 's3://old/' does not name an S3 bucket" in done.stderr
    assert done.stdout == ""
