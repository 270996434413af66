"""``wheelgate local --break-glass --import-source``: overrides and imports on the embedded
stack, signed by its break-glass role, and refused from the reporter as on the deployed one."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import LocalProcess, local_process
from tests.integration.test_local_requests import _wheelgate
from wheelgate.local.names import ENV_LOCAL_BREAK_GLASS_KEY, LOCAL_BREAK_GLASS_ID
from wheelgate.local.sample_wheels import build_wheel

SOURCE = "legacy-break-glass"
COMMIT = "c" * 40
BREAK_GLASS = f"AWS:{LOCAL_BREAK_GLASS_ID}:"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def local() -> Iterator[LocalProcess]:
    with local_process("--break-glass", "--import-source", f"{SOURCE}/releases/") as started:
        yield started


def _rejected_run(local: LocalProcess, tmp_path: Path, run_id: str) -> None:
    built = build_wheel(tmp_path, f"lib-{run_id}", "2.0.0")
    staged = local.wheelgate(
        *("stage", "--run-id", run_id, "--index", "v2/y", "--commit", COMMIT, str(built))
    )
    assert staged.returncode == 0, staged.stderr
    url = "https://github.com/example/project/actions/runs/1"
    reported = local.wheelgate(
        *("report", "--run-id", run_id, "--commit", COMMIT, "--test", f"v2/y:smoke=failed@{url}")
    )
    assert reported.returncode == 0, reported.stderr
    decided = local.wheelgate("status", run_id, "--wait", "30", "--json")
    assert json.loads(decided.stdout)["reason"] == "tests-failed"


def test_the_environment_names_the_break_glass_role_and_the_sources(local: LocalProcess) -> None:
    assert local.env["WHEELGATE_BREAK_GLASS_ID"] == LOCAL_BREAK_GLASS_ID
    assert json.loads(local.env["WHEELGATE_IMPORT_SOURCES"]) == [f"{SOURCE}/releases/"]
    assert local.env[ENV_LOCAL_BREAK_GLASS_KEY] != local.env["AWS_ACCESS_KEY_ID"]


def test_an_override_with_the_stacks_environment_promotes_a_rejected_run(
    local: LocalProcess, tmp_path: Path
) -> None:
    # Given a run rejected on its tests
    _rejected_run(local, tmp_path, "bg-override")
    # When promote --override runs with the stack's environment
    result = local.wheelgate(
        *("promote", "--override", "--run-id", "bg-override", "--json"),
        *("--reason", "GPU runners down; verified by hand"),
    )
    # Then the break-glass role asked, and the run is promoted, its record naming who and why
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["actor"].startswith(BREAK_GLASS)
    run = json.loads(local.wheelgate("status", "bg-override", "--json").stdout)
    assert run["state"] == "promoted"
    assert run["override"]["by"].startswith(BREAK_GLASS)


def test_an_override_signed_by_the_reporter_is_refused_at_once(
    local: LocalProcess, tmp_path: Path
) -> None:
    _rejected_run(local, tmp_path, "bg-reporter")
    result = _wheelgate(
        local,
        *("promote", "--override", "--run-id", "bg-reporter", "--json"),
        *("--reason", "GPU runners down; verified by hand"),
        drop=ENV_LOCAL_BREAK_GLASS_KEY,
    )
    assert result.returncode == 1, result.stderr
    assert "which is not the break-glass role" in json.loads(result.stdout)["message"]


def test_an_import_with_the_stacks_environment_brings_the_sources_wheels_in(
    local: LocalProcess, tmp_path: Path
) -> None:
    # Given a bucket of the embedded S3 under the stack's import sources, with two releases
    s3 = local.client("s3")
    s3.create_bucket(Bucket=SOURCE)
    for version in ("1.0.0", "1.1.0"):
        built = build_wheel(tmp_path, "legacy-lib", version)
        s3.upload_file(str(built), SOURCE, f"releases/{built.name}")
    source = f"s3://{SOURCE}/releases/"
    # When they are imported with the stack's environment
    result = local.wheelgate("import", "--from", source, "--index", "v2/old", "--json")
    # Then the break-glass role asked, and nightly serves both
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["actor"].startswith(BREAK_GLASS)
    with urllib.request.urlopen(f"{local.nightly_url}v2/old/legacy-lib/", timeout=10) as page:
        listed = page.read().decode()
    assert "legacy_lib-1.0.0-py3-none-any.whl" in listed
    assert "legacy_lib-1.1.0-py3-none-any.whl" in listed


def test_a_yank_signed_by_the_break_glass_role_ends_at_once(local: LocalProcess) -> None:
    # Given the yank signed with the break-glass key: the reporter alone may ask for a yank
    env = {"AWS_ACCESS_KEY_ID": local.env[ENV_LOCAL_BREAK_GLASS_KEY]}
    started = time.monotonic()
    # When it is asked for, willing to wait a minute
    result = _wheelgate(
        local,
        *("yank", "--index", "v2/y", "lib-1.0-py3-none-any.whl", "--wait", "60", "--json"),
        *("--reason", "broken build"),
        extra=env,
    )
    # Then the promoter's note ends it: exit 1, its reason, no wait
    assert result.returncode == 1, result.stderr
    assert time.monotonic() - started < 30
    assert "untrusted-writer" in result.stderr
