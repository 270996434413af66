"""Requirements that pin a run's whole install closure by hash (``wheelgate pins``).

``pip install --require-hashes`` and ``uv pip install --require-hashes`` want a pinned version
and a hash for every distribution they install, dependencies included, and a run's wheels
usually need projects that live only in nightly. So pip itself resolves the run's staged
projects against the run's own index (:func:`resolve_with_pip`: a dry run that reads the
index's PEP 658 metadata and installs nothing), and :func:`pinned_closure` pins every
distribution it resolved: a dependency to the file pip chose for the target environment, and
each of the run's own projects to every file the run staged for it (any platform's wheel of
the run, never nightly's file of the same name).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from wheelgate.core.manifest import ManifestFile, parse_distribution_filename
from wheelgate.staging.hermetic import hermetic_env
from wheelgate.staging.installs import archive_sha256, pip_report_installs

#: A resolution reads one metadata file per distribution; a large closure over a slow link
#: stays well inside ten minutes.
RESOLVE_TIMEOUT_SECONDS = 600
_SHA256 = re.compile(r"[0-9a-f]{64}")
#: What ``--python-version`` and ``--platform`` may be (pip's own forms: ``3.12``, ``312``,
#: ``manylinux_2_28_x86_64``), so that no value reads as another pip option.
PYTHON_VERSION_PATTERN = re.compile(r"[0-9]+(\.[0-9]+){0,2}")
PLATFORM_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.]*")


@dataclass(frozen=True)
class StagedProject:
    """A project the run staged: its one version and the SHA-256 of each of its files."""

    name: str
    version: Version
    hashes: tuple[str, ...]

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"


def staged_projects(files: Sequence[ManifestFile]) -> dict[str, StagedProject]:
    """The projects of a run's staged ``files``, by normalized name. Raises ``ValueError``
    when one project has files of two versions (pip could not install both, so pins would be
    ambiguous)."""
    by_project: dict[str, dict[Version, list[str]]] = defaultdict(lambda: defaultdict(list))
    for f in files:
        dist = parse_distribution_filename(f.filename)
        by_project[dist.project][dist.version].append(f.sha256)
    projects = {}
    for name, versions in sorted(by_project.items()):
        if len(versions) > 1:
            raise ValueError(
                f"{name} is staged in versions {', '.join(sorted(map(str, versions)))}; "
                "pin one index directory whose run has a single version"
            )
        [(version, hashes)] = versions.items()
        projects[name] = StagedProject(name, version, tuple(sorted(set(hashes))))
    return projects


def check_python_version(value: str) -> str:
    """Return ``value`` if it is a Python version pip's ``--python-version`` takes."""
    if not PYTHON_VERSION_PATTERN.fullmatch(value):
        raise ValueError(f"{value!r} is not a Python version such as 3.12")
    return value


def check_platform(value: str) -> str:
    """Return ``value`` if it is a platform tag pip's ``--platform`` takes."""
    if not PLATFORM_PATTERN.fullmatch(value):
        raise ValueError(f"{value!r} is not a platform tag such as manylinux_2_28_x86_64")
    return value


def target_options(python_version: str | None, platforms: Sequence[str]) -> list[str]:
    """pip options resolving for another environment than the one running wheelgate. pip
    takes them with ``--dry-run`` only for binary distributions (``--only-binary=:all:``)."""
    options = [] if python_version is None else ["--python-version", python_version]
    for platform in platforms:
        options += ["--platform", platform]
    return [*options, "--only-binary=:all:"] if options else []


def resolve_with_pip(
    index_url: str,
    requirements: Sequence[str],
    *,
    options: Sequence[str] = (),
    python: str = sys.executable,
    environ: Mapping[str, str] | None = None,
) -> object:
    """pip's installation report for ``requirements`` resolved against ``index_url`` alone:
    ``python -m pip install --dry-run --ignore-installed --report -``, run hermetically (no pip
    configuration, no ``PIP_*`` variables, no cache) so that no other index takes part.

    Raises ``ValueError`` with pip's errors when it cannot resolve them.
    """
    command = [
        *(python, "-m", "pip", "install", "--dry-run", "--ignore-installed"),
        *("--quiet", "--no-cache-dir", "--disable-pip-version-check", "--no-input"),
        *("--report", "-", "--index-url", index_url, *options, *requirements),
    ]
    try:
        result = subprocess.run(
            command,
            env=hermetic_env(environ),
            capture_output=True,
            text=True,
            check=False,
            timeout=RESOLVE_TIMEOUT_SECONDS,
        )
    except subprocess.TimeoutExpired:
        raise ValueError(
            f"pip did not resolve {' '.join(requirements)} from {index_url} within "
            f"{RESOLVE_TIMEOUT_SECONDS} s"
        ) from None
    if result.returncode != 0:
        errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
        detail = "; ".join(errors) or result.stderr.strip()[-500:]
        raise ValueError(
            f"pip could not resolve {' '.join(requirements)} from {index_url}: {detail}"
        )
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError as exc:
        raise ValueError(f"pip's installation report is not JSON: {exc}") from None


def pinned_closure(staged: Mapping[str, StagedProject], report: object) -> str:
    """A requirements file pinning every distribution of pip's installation ``report``: one
    ``name==version`` line each, with ``--hash`` for every file the run staged of it (the
    run's own projects) or for the file pip resolved (the others).

    Raises ``ValueError`` when the report is not pip's, resolved one of the run's projects at
    another version or not at all, or resolved a file without a SHA-256 (it cannot be pinned).
    """
    installs = pip_report_installs(report)
    if installs is None:
        raise ValueError("pip's output is not an installation report")
    pins: dict[str, tuple[str, tuple[str, ...]]] = {}
    for item in installs:
        metadata = item.get("metadata")
        if not isinstance(metadata, dict):
            raise ValueError("pip's installation report has an entry without metadata")
        name = canonicalize_name(str(metadata.get("name", "")))
        version = str(metadata.get("version", ""))
        own = staged.get(name)
        if own is not None:
            if _version(version) != own.version:
                raise ValueError(
                    f"pip resolved {name}=={version}, but the run staged {own.requirement}"
                )
            pins[name] = (str(own.version), own.hashes)
            continue
        archive = archive_sha256(item)
        if archive is None or not _SHA256.fullmatch(archive[0].lower()):
            raise ValueError(
                f"pip resolved {name}=={version} to a file without a SHA-256; it cannot be "
                "pinned (does its index page give #sha256=?)"
            )
        pins[name] = (version, (archive[0].lower(),))
    unresolved = sorted(set(staged) - set(pins))
    if unresolved:
        raise ValueError(f"pip's resolution leaves out the run's {', '.join(unresolved)}")
    lines = []
    for pinned, (version, hashes) in sorted(pins.items()):
        hash_options = " \\\n    ".join(f"--hash=sha256:{h}" for h in hashes)
        lines.append(f"{pinned}=={version} \\\n    {hash_options}")
    return "\n".join(lines) + "\n"


def _version(value: str) -> Version | None:
    try:
        return Version(value)
    except InvalidVersion:
        return None
