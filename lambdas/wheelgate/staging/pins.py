"""Requirements that pin, for one target environment, exactly one file of every distribution a
run's staged projects need there (``wheelgate pins``).

``pip install --require-hashes`` and ``uv pip install --require-hashes`` want a pinned version
and a hash for every distribution they install, dependencies included, and a run's wheels
usually need projects that live only in nightly. So pip itself resolves the run's projects
against the run's own index (:func:`resolve_with_pip`: a dry run that reads the index's PEP 658
metadata and installs nothing, run hermetically), for the :class:`Target`'s tags
(``--python-version``, ``--platform``, ``--implementation``, ``--abi``: binary files only).

pip takes those options for wheel tags and ``Requires-Python`` only: it evaluates environment
markers for the interpreter running it. A dependency such as ``setuptools; python_version >=
"3.12"`` is therefore missed when this 3.11 machine resolves for 3.12, and ``tomli;
python_version < "3.11"`` resolved needlessly when it resolves for 3.10's opposite. So
:func:`pin_for_target` walks the ``Requires-Dist`` of every distribution pip resolved (pip's
report carries each one's metadata) from the run's projects, evaluating each marker for the
target (:meth:`Target.marker_environment`, extras included); a requirement pip missed or
resolved to a version the target's requirement excludes is handed to pip again as a
requirement of its own, until the walk finds nothing missing; what the walk never reaches (what
only the machine running pip needed) is left out. Each distribution is pinned to the one file
pip chose for the target, so the file is exact evidence of what a test that installs from it
installed (:mod:`wheelgate.staging.installs`).

pip reads the run's pages, which a build job may write, so what it chose proves nothing by
itself: each chosen file must be one the run's index offers by its objects (the run's staged
files and nightly's, :mod:`wheelgate.staging.offer`), or nothing is pinned.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from wheelgate.core.manifest import ManifestFile, parse_distribution_filename
from wheelgate.staging.hermetic import hermetic_env
from wheelgate.staging.installs import archive_sha256, pip_report_installs
from wheelgate.staging.offer import RunOffer
from wheelgate.staging.targets import Target

#: A resolution reads one metadata file per distribution; a large closure over a slow link
#: stays well inside ten minutes.
RESOLVE_TIMEOUT_SECONDS = 600
#: Each round adds at least one requirement pip missed; real closures close in two or three.
MAX_RESOLUTIONS = 10
_SHA256 = re.compile(r"[0-9a-f]{64}")


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
    by_project: dict[str, dict[Version, list[str]]] = {}
    for f in files:
        dist = parse_distribution_filename(f.filename)
        by_project.setdefault(dist.project, {}).setdefault(dist.version, []).append(f.sha256)
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


def select_projects(
    projects: Mapping[str, StagedProject], names: Sequence[str]
) -> dict[str, StagedProject]:
    """The ``projects`` named by ``names`` (compared normalized); all of them when ``names``
    is empty. Raises ``ValueError`` naming a name the run did not stage."""
    if not names:
        return dict(projects)
    selected = {}
    for name in names:
        project = projects.get(canonicalize_name(name))
        if project is None:
            raise ValueError(
                f"{name!r} is not a project of the run here; it staged "
                f"{', '.join(sorted(projects)) or 'nothing'}"
            )
        selected[project.name] = project
    return selected


@dataclass(frozen=True)
class Resolved:
    """One distribution of pip's installation report: its name (normalized), version, the
    file pip chose (name and SHA-256, ``None`` when pip did not learn it) and its
    ``Requires-Dist``."""

    name: str
    version: str
    filename: str
    sha256: str | None
    requires: tuple[str, ...]


def resolved_distributions(report: object) -> dict[str, Resolved]:
    """Each distribution of pip's installation ``report``, by normalized name. Raises
    ``ValueError`` when it is not one."""
    installs = pip_report_installs(report)
    if installs is None:
        raise ValueError("pip's output is not an installation report")
    resolved: dict[str, Resolved] = {}
    for item in installs:
        metadata = item.get("metadata")
        if not isinstance(metadata, dict):
            raise ValueError("pip's installation report has an entry without metadata")
        name = canonicalize_name(str(metadata.get("name", "")))
        archive = archive_sha256(item)
        sha256 = archive[0].lower() if archive is not None else None
        info = item.get("download_info")
        url = str(info.get("url", "")) if isinstance(info, dict) else ""
        requires = metadata.get("requires_dist") or []
        resolved[name] = Resolved(
            name=name,
            version=str(metadata.get("version", "")),
            filename=url.rsplit("/", 1)[-1],
            sha256=sha256 if sha256 and _SHA256.fullmatch(sha256) else None,
            requires=tuple(str(r) for r in requires),
        )
    return resolved


@dataclass(frozen=True)
class Closure:
    """What the target needs of a resolution: each distribution it reaches (with the extras
    asked of it), and the requirements the resolution lacks or does not satisfy."""

    needed: dict[str, frozenset[str]]
    missing: tuple[str, ...]


def target_closure(
    roots: Sequence[str], resolved: Mapping[str, Resolved], environment: Mapping[str, str]
) -> Closure:
    """Walk ``Requires-Dist`` from ``roots`` through ``resolved``, each marker evaluated for
    ``environment`` with the extras asked of its distribution. A requirement whose project
    ``resolved`` lacks, or holds at a version the requirement excludes, is missing (without
    its marker, as a requirement pip can take). Raises ``ValueError`` for a requirement that
    is not PEP 508, or names a URL (an index cannot pin it)."""
    needed: dict[str, set[str]] = {}
    missing: list[str] = []
    queue: list[tuple[str, str, frozenset[str]]] = [(r, "", frozenset()) for r in roots]
    while queue:
        text, parent, extras = queue.pop(0)
        requirement = _requirement(text, parent)
        if requirement.marker is not None and not any(
            requirement.marker.evaluate({**environment, "extra": extra})
            for extra in sorted(extras | {""})
        ):
            continue
        name = canonicalize_name(requirement.name)
        found = resolved.get(name)
        version = _version(found.version) if found is not None else None
        if (
            found is None
            or version is None
            or not requirement.specifier.contains(version, prereleases=True)
        ):
            requirement.marker = None
            missing.append(str(requirement))
            continue
        asked = {canonicalize_name(e) for e in requirement.extras}
        if name in needed and asked <= needed[name]:
            continue
        new = name not in needed
        needed.setdefault(name, set()).update(asked)
        if new or asked:
            queue.extend((r, name, frozenset(needed[name])) for r in found.requires)
    return Closure(
        needed={name: frozenset(extras) for name, extras in needed.items()},
        missing=tuple(dict.fromkeys(missing)),
    )


def _requirement(text: str, parent: str) -> Requirement:
    try:
        requirement = Requirement(text)
    except InvalidRequirement as exc:
        raise ValueError(
            f"{parent or 'the run'} requires {text!r}, which is not PEP 508: {exc}"
        ) from None
    if requirement.url:
        raise ValueError(f"{parent} requires {text!r}, a URL, which no index can pin")
    return requirement


def pinned_requirements(
    projects: Mapping[str, StagedProject],
    resolved: Mapping[str, Resolved],
    closure: Closure,
    offer: RunOffer,
) -> str:
    """A requirements file pinning each distribution the target needs to the one file pip
    chose for it: a ``name==version`` line with one ``--hash``. Raises ``ValueError`` when pip
    resolved one of the run's projects at another version, chose a file without a SHA-256
    (it cannot be pinned), or chose a file that ``offer`` (the run's staged files and
    nightly's, derived from objects) does not hold: the run's pages link other bytes."""
    lines = []
    for name in sorted(closure.needed):
        found = resolved[name]
        own = projects.get(name)
        if own is not None and _version(found.version) != own.version:
            raise ValueError(
                f"pip resolved {name}=={found.version}, but the run staged {own.requirement}"
            )
        if found.sha256 is None:
            raise ValueError(
                f"pip resolved {name}=={found.version} to a file without a SHA-256; it cannot "
                "be pinned (does its index page give #sha256=?)"
            )
        if offer.judge(name, found.version, found.sha256) != "offered":
            raise ValueError(
                f"pip resolved {name}=={found.version} to {found.filename or 'a file'} (sha256 "
                f"{found.sha256}), which is neither a file the run staged nor one nightly "
                f"holds (offered for {name} {found.version}: "
                f"{offer.describe(name, found.version)}); the run's index page for {name} "
                "links other bytes than the run's files"
            )
        if own is not None and found.sha256 not in own.hashes:
            lines.append(f"# {name}: the target takes {found.filename}, which is not the run's")
        lines.append(f"{name}=={found.version} \\\n    --hash=sha256:{found.sha256}")
    return "\n".join(lines) + "\n"


#: Resolves requirements against an index with pip options: :func:`resolve_with_pip`.
Resolver = Callable[..., object]


def pin_for_target(
    index_url: str,
    projects: Mapping[str, StagedProject],
    target: Target,
    *,
    offer: RunOffer,
    resolve: Resolver | None = None,
    base_environment: Mapping[str, str] | None = None,
) -> str:
    """Requirements pinning, for ``target``, one file of each distribution ``projects`` need
    (module docstring), each one of the files ``offer`` holds. ``resolve`` (default
    :func:`resolve_with_pip`) is called as ``resolve(index_url, requirements, options=...)``;
    ``base_environment`` (default: this
    interpreter's, which is pip's) is what the target's markers start from.

    Raises ``ValueError`` when pip cannot resolve, a file cannot be pinned, or the target's
    requirements do not close within :data:`MAX_RESOLUTIONS` resolutions.
    """
    resolver = resolve_with_pip if resolve is None else resolve
    base = (
        {k: str(v) for k, v in default_environment().items()}
        if base_environment is None
        else base_environment
    )
    environment = target.marker_environment(base)
    roots = [p.requirement for p in projects.values()]
    added: list[str] = []
    for _ in range(MAX_RESOLUTIONS):
        try:
            report = resolver(index_url, [*roots, *added], options=target.pip_options())
        except ValueError as exc:
            raise ValueError(f"{exc}{_literal_platform_hint(target)}") from None
        resolved = resolved_distributions(report)
        closure = target_closure(roots, resolved, environment)
        left_out = [r for r in closure.missing if r in roots]
        if left_out:
            raise ValueError(f"pip's resolution leaves out the run's {', '.join(left_out)}")
        if not closure.missing:
            return pinned_requirements(projects, resolved, closure, offer)
        new = [r for r in closure.missing if r not in added]
        if not new:
            raise ValueError(
                f"pip resolved {', '.join(closure.missing)} to versions the target's "
                "requirements exclude"
            )
        added += new
    raise ValueError(
        f"the target's requirements did not close after {MAX_RESOLUTIONS} resolutions "
        f"(added: {', '.join(added)})"
    )


def _literal_platform_hint(target: Target) -> str:
    literal = [p for p in target.platforms if p.startswith("manylinux")]
    if target.preset is not None or not literal:
        return ""
    return (
        f" (pip takes --platform literally: {literal[0]} accepts no wheel of another manylinux "
        "tag or linux_*; give every tag the target takes, or a --target such as "
        "cp312-manylinux_2_28_x86_64)"
    )


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


def _version(value: str) -> Version | None:
    try:
        return Version(value)
    except InvalidVersion:
        return None
