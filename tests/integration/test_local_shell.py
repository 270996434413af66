"""`wheelgate local` from a shell: it sources the env file and stops the stack; bad options
stop it before it starts; a shell set up for a deployed stack changes nothing of it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.conftest import local_process
from tests.integration.decoy import Decoy
from wheelgate.local.sample_wheels import build_wheel

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


def docs_env_file_recipe() -> str:
    """docs/cli.md's recipe for a shell: local in the background, its env file sourced."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    section = doc.split("## `local`", 1)[1]
    return section.split("```sh\n", 1)[1].split("```", 1)[0]


@pytest.mark.slow
def test_the_docs_env_file_recipe_runs_as_printed(tmp_path: Path) -> None:
    # Given docs/cli.md's recipe as printed, with wheelgate on PATH and the temporary directory
    # this test's own
    recipe = docs_env_file_recipe()
    assert "mktemp -d" in recipe
    assert "/tmp/" not in recipe
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env["TMPDIR"] = str(tmp_path)
    # When bash runs it (then says which process it killed)
    done = subprocess.run(
        ["bash", "-e", "-c", recipe + 'echo "killed $WHEELGATE_LOCAL_PID"\n'],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # Then `wheelgate runs` reached the stack through the sourced file, and the stack stops
    assert done.returncode == 0, done.stdout + done.stderr
    pid = int(done.stdout.rsplit("killed ", 1)[1])
    for _ in range(600):
        if not Path(f"/proc/{pid}").exists() or "zombie" in _state(pid):
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"wheelgate local ({pid}) still runs after the recipe's kill")
    (env_file,) = tmp_path.glob("tmp*/env")
    assert oct(env_file.parent.stat().st_mode & 0o777) == "0o700"


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return "zombie"


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


@pytest.mark.slow
def test_a_shell_set_up_for_a_deployed_stack_starts_local_and_its_promoter_stays_embedded(
    decoy: Decoy, tmp_path: Path
) -> None:
    # Given a shell with the AWS settings of a deployed stack: a profile this machine does not
    # have, a session token, and per-service endpoints (which boto3 takes over
    # AWS_ENDPOINT_URL) at the decoy, which counts any request as this test's failure
    deployed = {
        "AWS_PROFILE": "deployed",
        "AWS_SESSION_TOKEN": "deployed-session",
        "AWS_ENDPOINT_URL_S3": f"{decoy.url}/deployed-s3/",
        "AWS_ENDPOINT_URL_SQS": f"{decoy.url}/deployed-sqs/",
    }
    # When wheelgate local starts there (before, the promoter's import failed on the profile
    # with a traceback) and a run is staged and reported with the stack's environment
    with local_process("--index", "v2/shell", env=deployed) as local:
        commit, url = "d" * 40, "https://github.com/example/project/actions/runs/1"
        built = build_wheel(tmp_path, "shell-lib", "1.0")
        staged = local.wheelgate(
            *("stage", "--run-id", "shell-1", "--index", "v2/shell", "--commit", commit),
            str(built),
        )
        assert staged.returncode == 0, staged.stderr
        reported = local.wheelgate(
            *("report", "--run-id", "shell-1", "--commit", commit),
            f"--test=v2/shell:smoke=failed@{url}",
        )
        assert reported.returncode == 0, reported.stderr
        decided = local.wheelgate("status", "shell-1", "--wait", "60", "--json")
    # Then its promoter decided the run from the embedded stack (and sent the decoy nothing)
    assert json.loads(decided.stdout)["reason"] == "tests-failed", decided.stderr
