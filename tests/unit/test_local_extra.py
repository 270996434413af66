"""Without the ``local`` extra, ``wheelgate local`` and the demo say how to install it.

The base install (``pip install wheelgate``) leaves out moto and Powertools. To see what such an
install does, the commands run in a subprocess whose ``sitecustomize`` makes the extra's
modules unimportable, as they are when the packages are absent; the subprocesses they start
inherit it (the demo starts ``wheelgate local``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from wheelgate.cli.common import EXIT_USAGE
from wheelgate.cli.main import main
from wheelgate.local import moto_version
from wheelgate.local.extra import LOCAL_EXTRA_INSTALL
from wheelgate.local.moto_version import PATCHED_MOTO_VERSION

REPO = Path(__file__).resolve().parents[2]
#: Long enough for the imports; a command that starts its servers instead runs until killed.
TIMEOUT_SECONDS = 60

SITECUSTOMIZE = '''
import importlib.abc
import os
import sys

UNINSTALLED = tuple(os.environ["WHEELGATE_TEST_UNINSTALLED"].split(","))


class Uninstalled(importlib.abc.MetaPathFinder):
    """Finds the listed packages nowhere, as if they were not installed."""

    def find_spec(self, name, path=None, target=None):
        if any(name == u or name.startswith(u + ".") for u in UNINSTALLED):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Uninstalled())
'''


def run_without(tmp_path: Path, uninstalled: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python *args`` with the packages ``uninstalled`` (comma-separated) missing."""
    (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO / "lambdas")]),
        "WHEELGATE_TEST_UNINSTALLED": uninstalled,
    }
    try:
        return subprocess.run(
            [sys.executable, *args],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{args} did not stop within {TIMEOUT_SECONDS} s: {exc.stderr!r}")


def assert_says_how_to_install(result: subprocess.CompletedProcess[str], missing: str) -> None:
    assert result.returncode == EXIT_USAGE, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert f"needs {missing}, which is not installed" in line
    assert line.endswith(LOCAL_EXTRA_INSTALL)


@pytest.mark.parametrize("missing", ["moto", "aws_lambda_powertools", "aws_xray_sdk"])
def test_wheelgate_local_without_the_extra_says_how_to_install_it(
    tmp_path: Path, missing: str
) -> None:
    # Given an install where `missing` cannot be imported
    probe = run_without(tmp_path, missing, "-c", f"import {missing}")
    assert probe.returncode == 1
    assert f"No module named {missing!r}" in probe.stderr
    # When `wheelgate local` runs
    result = run_without(
        tmp_path,
        missing,
        "-c",
        "import sys; from wheelgate.cli.main import main; sys.exit(main(['local']))",
    )
    # Then it exits 2 with one line naming the module and the install command
    assert_says_how_to_install(result, missing)
    assert result.stderr.startswith("wheelgate local: error: local mode needs")


def test_demo_without_the_extra_says_how_to_install_it(tmp_path: Path) -> None:
    # Given an install without moto, when the demo runs, then it stops before any step with
    # the message of the `wheelgate local` it started, and its exit code
    result = run_without(tmp_path, "moto", "-m", "wheelgate.local.demo")
    assert_says_how_to_install(result, "moto")


def test_a_missing_module_of_the_package_itself_is_not_blamed_on_the_extra(
    tmp_path: Path,
) -> None:
    # Given a broken install where the package's own promoter is missing
    result = run_without(
        tmp_path,
        "wheelgate.lambda_function",
        "-c",
        "from wheelgate.local.extra import require_local_extra; require_local_extra()",
    )
    # Then the import error propagates instead of advice to install the extra
    assert result.returncode == 1
    assert "ModuleNotFoundError: No module named 'wheelgate.lambda_function'" in result.stderr
    assert LOCAL_EXTRA_INSTALL not in result.stderr


def test_wheelgate_local_refuses_a_moto_other_than_the_one_it_patches(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a moto other than the one local mode's patches were written for
    monkeypatch.setattr(moto_version, "installed_moto_version", lambda: "5.1.0")
    # When `wheelgate local` starts, then it stops before any server, naming both versions
    assert main(["local"]) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"moto {PATCHED_MOTO_VERSION}'s internals and moto 5.1.0 is installed" in captured.err


def test_the_patched_moto_is_the_one_pinned_and_installed() -> None:
    assert moto_version.installed_moto_version() == PATCHED_MOTO_VERSION
    moto_version.require_patched_moto()
