"""Which of a run's offered files install it: asked of pip or uv with those files alone in
sight. The files (each in the cache, hash-checked) are linked into a private directory made
for the call, and the resolver reads nothing else (``--no-index --find-links DIR``,
hermetically); it names the files it would install, which are then installed exactly, pinned
by SHA-256, as a test's evidence is (:func:`~wheelgate.bisect.environment.sync`).

pip says the files it picked (``install --dry-run --report``); uv says the versions it
picked and their hashes (``pip compile --generate-hashes``), and of the files of a version the
one with those bytes is taken (a wheel before an sdist).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

from packaging.utils import canonicalize_name, canonicalize_version

from wheelgate.bisect.environment import CachedFile, Installer, last_lines, run_hermetic
from wheelgate.bisect.run_installer import SKIP_INSTALL_FAILED, SkipRun
from wheelgate.history.model import project_and_version


def resolve_offer(
    files: Sequence[CachedFile],
    requirements: Sequence[str],
    *,
    python: Path,
    installer: Installer,
    uv: str,
) -> list[CachedFile]:
    """The files among ``files`` that install ``requirements`` into the environment of
    ``python``, as ``installer`` resolves them seeing nothing else. Raises :class:`SkipRun`
    (``install-failed``) with the resolver's last lines when it finds no answer."""
    # A private directory (mkdtemp: only this user, a name nobody can guess) holding the
    # files the resolver sees and, beside them, what it is asked and answers.
    with tempfile.TemporaryDirectory(prefix="wheelgate-offer-") as directory:
        folder = Path(directory) / "files"
        folder.mkdir()
        by_name: dict[str, CachedFile] = {}
        for file in files:
            if file.path.name not in by_name:
                by_name[file.path.name] = file
                _link(file.path, folder / file.path.name)
        if installer == "uv":
            return _uv_pick(folder, by_name, requirements, python=python, uv=uv)
        return _pip_pick(folder, by_name, requirements, python=python)


def _link(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _nothing_resolved(
    tool: str, requirements: Sequence[str], offered: int, result: subprocess.CompletedProcess[str]
) -> SkipRun:
    """The skip of an offer among whose ``offered`` files ``tool`` installs no
    ``requirements``."""
    return SkipRun(
        SKIP_INSTALL_FAILED,
        f"{tool} found no install of {', '.join(requirements)} among the offer's {offered} "
        f"files (exit {result.returncode}): {last_lines(result)}",
    )


def _pip_pick(
    folder: Path, by_name: dict[str, CachedFile], requirements: Sequence[str], *, python: Path
) -> list[CachedFile]:
    report = folder.parent / "report.json"
    command = [sys.executable, "-m", "pip", "--python", str(python), "install", "--dry-run"]
    command += ["--ignore-installed", "--no-index", "--find-links", str(folder)]
    command += ["--no-cache-dir", "--quiet", "--report", str(report), *requirements]
    result = run_hermetic(command)
    if result.returncode != 0:
        raise _nothing_resolved("pip", requirements, len(by_name), result)
    try:
        urls = [str(i["download_info"]["url"]) for i in json.loads(report.read_text())["install"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SkipRun(SKIP_INSTALL_FAILED, f"pip's report cannot be read: {exc}") from None
    picked = []
    for url in urls:
        name = unquote(Path(urlsplit(url).path).name)
        if name not in by_name:
            raise SkipRun(SKIP_INSTALL_FAILED, f"pip picked {name}, which is not in the offer")
        picked.append(by_name[name])
    return picked


def _uv_pick(
    folder: Path,
    by_name: dict[str, CachedFile],
    requirements: Sequence[str],
    *,
    python: Path,
    uv: str,
) -> list[CachedFile]:
    wanted = folder.parent / "requirements.in"
    wanted.write_text("".join(f"{r}\n" for r in requirements))
    command = [uv, "pip", "compile", "--python", str(python), "--no-index", "--offline"]
    command += ["--find-links", str(folder), "--generate-hashes", "--no-header"]
    command += ["--no-annotate", "--quiet", str(wanted)]
    result = run_hermetic(command)
    if result.returncode != 0:
        raise _nothing_resolved("uv", requirements, len(by_name), result)
    return [
        _file_of(by_name, name, version, hashes) for name, version, hashes in _pinned(result.stdout)
    ]


def _pinned(text: str) -> list[tuple[str, str, set[str]]]:
    """``name==version`` lines of a compiled requirements file and the hashes under each."""
    pins: list[tuple[str, str, set[str]]] = []
    for line in text.splitlines():
        stripped = line.strip().rstrip("\\").strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("--hash=sha256:") and pins:
            pins[-1][2].add(stripped.removeprefix("--hash=sha256:"))
        elif "==" in stripped:
            name, version = stripped.split(";")[0].split("==", 1)
            pins.append((canonicalize_name(name.strip()), version.strip(), set()))
    return pins


def _file_of(
    by_name: dict[str, CachedFile], name: str, version: str, hashes: set[str]
) -> CachedFile:
    found = []
    for filename, file in by_name.items():
        project, found_version = project_and_version(filename)
        same = canonicalize_version(found_version) == canonicalize_version(version)
        if project == name and same and file.sha256 in hashes:
            found.append(file)
    if not found:
        raise SkipRun(
            SKIP_INSTALL_FAILED, f"uv picked {name} {version}, whose bytes are not in the offer"
        )
    return sorted(found, key=lambda f: (not f.path.name.endswith(".whl"), f.path.name))[0]
