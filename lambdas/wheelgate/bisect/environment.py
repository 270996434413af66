"""The venv a bisect installs into: made once, then made to hold exactly one plan's files at
each step, with pip or uv, hermetically (:mod:`wheelgate.staging.hermetic`), from the cache's
paths pinned by SHA-256 (``--require-hashes``, no index, no resolver; an offer's files are
first narrowed to those a resolver picks, :mod:`wheelgate.bisect.resolve`).

An installed distribution says its name and version, not which bytes it came from, and runs
may share a version (a local label is not always there). So the venv keeps what it was last
given (``wheelgate-bisect.json``: each distribution's SHA-256): a file whose bytes changed is
reinstalled, one the plan no longer names is removed. A failed install is the run's skip
(``install-failed``), never a blame.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import Literal

from packaging.utils import canonicalize_name, canonicalize_version

from wheelgate.bisect.run_installer import SKIP_INSTALL_FAILED, SkipRun
from wheelgate.history.model import project_and_version
from wheelgate.staging.environment import probe
from wheelgate.staging.hermetic import hermetic_env

Installer = Literal["pip", "uv"]
#: What the venv was last made to hold (distribution -> SHA-256 of the file installed).
STATE_FILE = "wheelgate-bisect.json"
REQUIREMENTS_FILE = "wheelgate-bisect-requirements.txt"
#: What a venv may hold of its own, whatever the plan: an installer a user's venv came with.
OWN_PACKAGES = frozenset({"pip", "setuptools"})
#: Seconds one installer call may take (large GPU wheels take minutes).
INSTALL_TIMEOUT_SECONDS = 1800
#: How much of a failing installer's output a skip quotes.
QUOTED_LINES = 8


@dataclass(frozen=True)
class CachedFile:
    """A plan's file in the cache: its path (under its own file name) and SHA-256."""

    path: Path
    sha256: str


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def ensure_venv(venv: Path, *, installer: Installer, python: str, uv: str) -> Path:
    """The interpreter of ``venv``, made with ``python`` unless it exists (``python -m venv
    --without-pip``: the installer runs from outside, so the venv holds only what is
    installed; or ``uv venv``). Raises ``ValueError`` when it cannot be made."""
    interpreter = venv_python(venv)
    if interpreter.exists():
        return interpreter
    if installer == "uv":
        command = [uv, "venv", "--no-python-downloads", "--python", python, str(venv)]
    else:
        command = [python, "-m", "venv", "--without-pip", str(venv)]
    result = run_hermetic(command)
    if result.returncode != 0:
        raise ValueError(f"cannot make the venv {venv}: {last_lines(result)}")
    return interpreter


def installed_versions(python: Path) -> dict[str, str]:
    """Each distribution installed in the environment of ``python``: normalized name ->
    version, read from its ``.dist-info/METADATA``. Raises ``ValueError`` when the interpreter
    cannot be asked."""
    scheme = probe(str(python))
    found: dict[str, str] = {}
    for lib in {scheme["purelib"], scheme["platlib"]}:
        for metadata in sorted(Path(lib).glob("*.dist-info/METADATA")):
            headers = BytesHeaderParser().parsebytes(metadata.read_bytes())
            name, version = headers.get("Name"), headers.get("Version")
            if name and version:
                found[canonicalize_name(str(name))] = str(version).strip()
    return found


def sync(
    venv: Path, python: Path, files: Sequence[CachedFile], *, installer: Installer, uv: str
) -> None:
    """Make the venv of ``python`` hold exactly ``files`` (and :data:`OWN_PACKAGES` it had).
    Raises :class:`SkipRun` (``install-failed``) with the installer's last lines when it
    fails, or when the venv then holds other distributions than ``files``."""
    wanted = {}
    for file in files:
        try:
            name, version = project_and_version(file.path.name)
        except ValueError as exc:
            raise SkipRun(SKIP_INSTALL_FAILED, f"cannot install {file.path.name}: {exc}") from None
        wanted[canonicalize_name(name)] = (version, file)
    state = venv / STATE_FILE
    before = _read_state(state)
    changed = [f for n, (_, f) in wanted.items() if before.get(n) != f.sha256]
    # Until the venv holds the new set, it holds no known one.
    state.unlink(missing_ok=True)
    requirements = venv / REQUIREMENTS_FILE
    requirements.write_text(
        "".join(f"{f.path.resolve()} --hash=sha256:{f.sha256}\n" for _, f in wanted.values())
    )
    if installer == "uv":
        command = [uv, "pip", "sync", "--python", str(python), "--require-hashes"]
        command += ["--offline", "--no-index", "--allow-empty-requirements"]
        for name in sorted(n for n, (_, f) in wanted.items() if f in changed):
            command += ["--reinstall-package", name]
        _install("uv pip sync", [*command, str(requirements)])
    else:
        extra = sorted(set(installed_versions(python)) - set(wanted) - OWN_PACKAGES)
        pip = [sys.executable, "-m", "pip", "--python", str(python)]
        if extra:
            _install("pip uninstall", [*pip, "uninstall", "--yes", *extra])
        if changed:
            lines = "".join(f"{f.path.resolve()} --hash=sha256:{f.sha256}\n" for f in changed)
            requirements.write_text(lines)
            install = ["install", "--no-deps", "--no-index", "--require-hashes"]
            install += ["--force-reinstall", "--no-cache-dir", "-r", str(requirements)]
            _install("pip install", [*pip, *install])
    _verify(python, {n: v for n, (v, _) in wanted.items()})
    state.write_text(json.dumps({n: f.sha256 for n, (_, f) in sorted(wanted.items())}, indent=1))


def _verify(python: Path, wanted: dict[str, str]) -> None:
    held = installed_versions(python)
    for name in OWN_PACKAGES - set(wanted):
        held.pop(name, None)
    norm = {n: canonicalize_version(v) for n, v in held.items()}
    if norm != {n: canonicalize_version(v) for n, v in wanted.items()}:
        shown = ", ".join(f"{n} {v}" for n, v in sorted(held.items())) or "nothing"
        asked = ", ".join(f"{n} {v}" for n, v in sorted(wanted.items()))
        raise SkipRun(SKIP_INSTALL_FAILED, f"after installing, the venv holds {shown}, not {asked}")


def _read_state(path: Path) -> dict[str, str]:
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in state.items()} if isinstance(state, dict) else {}


def _install(what: str, command: list[str]) -> None:
    result = run_hermetic(command)
    if result.returncode != 0:
        raise SkipRun(
            SKIP_INSTALL_FAILED, f"{what} failed (exit {result.returncode}): {last_lines(result)}"
        )


def run_hermetic(command: list[str]) -> subprocess.CompletedProcess[str]:
    """Run an installer's ``command`` hermetically (no user config, no index but those given);
    an interpreter that cannot be started or a timeout is an exit of -1."""
    try:
        return subprocess.run(
            command,
            env=hermetic_env(),
            capture_output=True,
            text=True,
            check=False,
            timeout=INSTALL_TIMEOUT_SECONDS,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(command, -1, "", str(exc))


def last_lines(result: subprocess.CompletedProcess[str]) -> str:
    """The last lines of a failed command's output, for a skip's message."""
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    return " | ".join(lines[-QUOTED_LINES:]) or "no output"
