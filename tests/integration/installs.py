"""Real pip and uv, run hermetically, as a run's test jobs and WheelGate's users run them.

Each install goes into a clean venv of its own (``venv_factory``: no pip of its own, so it costs
a few milliseconds): the test environment's pip, which ``make venv`` keeps current, installs
into it with ``--python``, and uv likewise. Every run's test job that precedes a promotion
installs the run's files from the run's own index with ``pip install --report`` and passes that
report to ``wheelgate report --installed`` (:func:`pip_report`, :func:`evidence`): the evidence the
promoter checks is what pip really installed.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from packaging.utils import parse_wheel_filename

from tests.integration.conftest import uv_binary
from wheelgate.staging.hermetic import hermetic_env

#: Seconds one install may take (the 2 MB wheels of these tests take a few).
INSTALL_TIMEOUT = 300


def pip(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The test environment's (current) pip, installing into the clean ``venv``."""
    return subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), *args],
        env=hermetic_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=INSTALL_TIMEOUT,
    )


def uv_install(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``uv pip install`` into the clean ``venv``, hermetic like :func:`pip`."""
    return subprocess.run(
        [uv_binary(), "pip", "install", "--python", str(venv / "bin" / "python"), *args],
        env=hermetic_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=INSTALL_TIMEOUT,
    )


def requirement(wheel: Path) -> str:
    """``name==version`` of a wheel file."""
    name, version, _build, _tags = parse_wheel_filename(wheel.name)
    return f"{name}=={version}"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pip_report(make_venv: Callable[[str], Path], index_url: str, wheels: Sequence[Path]) -> Path:
    """What a run's test job does before its result is reported: install ``wheels`` (by name
    and version) from the run's index ``index_url`` into a clean venv, with pip's installation
    report. Fails unless pip installed exactly their bytes; returns the report."""
    venv = make_venv("test-job")
    report = venv / "installed.json"
    result = pip(
        venv,
        *("install", "--report", str(report), "--index-url", index_url),
        *map(requirement, wheels),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    got = {item["download_info"]["archive_info"]["hashes"]["sha256"] for item in installs(report)}
    missing = [w.name for w in wheels if sha256(w) not in got]
    assert not missing, f"the test job installed other bytes than {missing} from {index_url}"
    return report


def installs(report: Path) -> list[dict[str, Any]]:
    """The ``install`` items of pip's installation report."""
    return list(json.loads(report.read_text())["install"])


def evidence(index: str, report: Path, test: str = "smoke") -> list[str]:
    """The ``wheelgate report`` options passing ``report`` on as what test ``test`` of
    ``index`` installed."""
    return ["--installed", f"{index}:{test}={report}"]
