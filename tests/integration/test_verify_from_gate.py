"""``wheelgate verify`` with the gate alone (``WHEELGATE_NIGHTLY_BASE_URL``), through
``wheelgate local``: a downloaded file's verdict is found under the gate's directories, and an
installed distribution is verified through the released wheel whose verified members its files
are, never through its RECORD."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LocalProcess
from tests.integration.installs import pip, requirement, sha256
from tests.integration.test_operator_view import decide
from wheelgate.local.sample_wheels import build_wheel

# Wheelgate local and the command in processes of their own: `make test` only.
pytestmark = pytest.mark.slow

INDEX, OTHER = "verify-gate/a", "verify-gate/b"


@pytest.fixture(scope="module")
def released(
    local: LocalProcess, tmp_path_factory: pytest.TempPathFactory, venv_factory: Any
) -> Path:
    """Given run vg-1 promoted a wheel with a module and a script into INDEX."""
    wheel = build_wheel(
        tmp_path_factory.mktemp("verify-gate"),
        "vg-one",
        "1.0",
        module_source="VALUE = 1\n",
        files={"vg_one-1.0.data/scripts/vg-tool": b"#!python\nprint('tool')\n"},
    )
    decide(local, venv_factory, "vg-1", INDEX, wheel, "passed")
    return wheel


def index_url(local: LocalProcess) -> str:
    return f"{local.nightly_url}{INDEX}/"


def installed_from_nightly(local: LocalProcess, wheel: Path, venv: Path) -> Path:
    """``wheel``'s release installed into ``venv`` from nightly, as a user installs it; the
    environment's interpreter."""
    installed = pip(venv, "install", "--index-url", index_url(local), requirement(wheel))
    assert installed.returncode == 0, installed.stderr
    return venv / "bin" / "python"


def downloaded(local: LocalProcess, wheel: Path, directory: Path) -> Path:
    """The released file as a user downloads it (no verdict beside it)."""
    path = directory / wheel.name
    with urllib.request.urlopen(index_url(local) + wheel.name) as response:
        path.write_bytes(response.read())
    return path


def test_a_downloaded_file_is_verified_from_the_gate_alone(
    local: LocalProcess, released: Path, tmp_path: Path
) -> None:
    # Given the released file downloaded, and the gate in the environment
    path = downloaded(local, released, tmp_path)
    assert local.env["WHEELGATE_NIGHTLY_BASE_URL"]
    # When it is verified naming its directory, or with the configured directories
    named = local.wheelgate("verify", str(path), "--index", INDEX, "--json")
    configured = subprocess.run(
        [sys.executable, "-m", "wheelgate", "verify", str(path), "--json"],
        env={**os.environ, **local.env, "WHEELGATE_ALLOWED_INDEXES": json.dumps([OTHER, INDEX])},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    # Then both find its verdict under the gate and verify it
    for result in (named, configured):
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        assert (report["file"], report["sha256"], report["run_id"]) == (
            released.name,
            sha256(released),
            "vg-1",
        )
    # And with neither a directory nor configured ones it asks for --index
    unnamed = local.wheelgate("verify", str(path))
    assert unnamed.returncode == 2
    assert "--index DIR" in unnamed.stderr
    # And a directory that did not release it has no verdict for it
    other = local.wheelgate("verify", str(path), "--index", OTHER)
    assert other.returncode == 1
    assert "no verdict" in other.stderr


def test_an_installed_distribution_is_verified_through_the_released_wheel(
    local: LocalProcess, released: Path, venv_factory: Any
) -> None:
    # Given the release installed from nightly, as a user installs it
    python = str(installed_from_nightly(local, released, venv_factory("verify-installed")))
    # When the installed distribution is verified
    result = local.wheelgate(
        "verify", "--installed", "VG_One", "--python", python, "--index", INDEX, "--json"
    )
    # Then its files are the released wheel's verified members, whose verdict verifies
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["installed"] == {
        "name": "vg-one",
        "version": "1.0",
        "python": python,
        "matched": released.name,
    }
    assert (report["file"], report["sha256"], report["run_id"]) == (
        released.name,
        sha256(released),
        "vg-1",
    )


def test_an_installed_distribution_with_other_bytes_is_not_verified(
    local: LocalProcess, released: Path, venv_factory: Any
) -> None:
    # Given the release installed, then a module changed and its installed RECORD rewritten
    # to the changed bytes (the RECORD alone would vouch for them)
    venv = venv_factory("verify-tampered")
    installed_from_nightly(local, released, venv)
    [module] = venv.glob("lib/python*/site-packages/vg_one/__init__.py")
    module.write_bytes(b"VALUE = 2\n")
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"VALUE = 2\n").digest()).rstrip(b"=")
    [record] = venv.glob("lib/python*/site-packages/vg_one-1.0.dist-info/RECORD")
    record.write_text(
        "\n".join(
            f"vg_one/__init__.py,sha256={digest.decode()},10"
            if line.startswith("vg_one/__init__.py,")
            else line
            for line in record.read_text().splitlines()
        )
    )
    # When it is verified
    result = local.wheelgate(
        "verify", "--installed", "vg-one", "--python", str(venv / "bin" / "python"),
        "--index", INDEX, "--json",
    )  # fmt: skip
    # Then it is not: its files are not the released wheel's members
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["code"] == "not-released-bytes"
    assert "vg_one/__init__.py" in report["message"]
