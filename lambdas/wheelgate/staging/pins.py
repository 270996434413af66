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
from dataclasses import dataclass, field
from typing import TypeVar

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import mac_platforms
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from wheelgate.core.manifest import ManifestFile, parse_distribution_filename
from wheelgate.staging.hermetic import hermetic_env
from wheelgate.staging.installs import archive_sha256, pip_report_installs
from wheelgate.staging.offer import RunOffer

T = TypeVar("T")
V = TypeVar("V")

#: A resolution reads one metadata file per distribution; a large closure over a slow link
#: stays well inside ten minutes.
RESOLVE_TIMEOUT_SECONDS = 600
#: Each round adds at least one requirement pip missed; real closures close in two or three.
MAX_RESOLUTIONS = 10
_SHA256 = re.compile(r"[0-9a-f]{64}")
#: What each of pip's target options may be (pip's own forms: ``3.12``, ``312``,
#: ``manylinux_2_28_x86_64``, ``cp``, ``cp312``), so that no value reads as another pip option,
#: and what the value is.
PIP_TARGET_VALUES = {
    "--python-version": (re.compile(r"[0-9]+(\.[0-9]+){0,2}"), "a Python version such as 3.12"),
    "--platform": (
        re.compile(r"[A-Za-z0-9][A-Za-z0-9_.]*"),
        "a platform tag such as manylinux_2_28_x86_64",
    ),
    "--implementation": (re.compile(r"cp|pp|ip|jy|py"), "an implementation: cp, pp, ip, jy or py"),
    "--abi": (re.compile(r"[A-Za-z0-9][A-Za-z0-9_]*"), "an ABI tag such as cp312"),
}
#: ``--target`` presets: ``cp3XX-<platform>``.
PRESET_PATTERN = re.compile(r"cp3([0-9]{1,2})-(.+)")
_MANYLINUX = re.compile(r"manylinux_2_([0-9]+)_(x86_64|i686|aarch64|ppc64le|s390x|armv7l)")
_MACOSX = re.compile(r"macosx_([0-9]+)_([0-9]+)_(arm64|x86_64)")
_WINDOWS_MACHINES = {"win_amd64": "AMD64", "win_arm64": "ARM64", "win32": "x86"}
#: Linux machines whose names hold an underscore come first, so ``x86_64`` is not ``64``.
_LINUX_MACHINES = ("x86_64", "aarch64", "ppc64le", "s390x", "armv7l", "i686", "ppc64")
#: The manylinux names from before PEP 600, each the alias of one glibc 2.x.
_LEGACY_MANYLINUX = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
#: The oldest glibc of a manylinux tag on each architecture (manylinux1 was x86 only, and
#: manylinux2014 the first for the others).
_OLDEST_GLIBC = {"x86_64": 5, "i686": 5}
_OLDEST_GLIBC_OTHERS = 17
_IMPLEMENTATIONS = {
    "cp": ("cpython", "CPython"),
    "pp": ("pypy", "PyPy"),
    "ip": ("ironpython", "IronPython"),
    "jy": ("jython", "Jython"),
}
#: Markers a tag cannot tell (the kernel's release and build string): empty for a target, so
#: that a marker comparing them is false rather than true for the machine running pip.
_UNKNOWN_MARKERS = ("platform_release", "platform_version")


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


def check_pip_value(option: str, value: str) -> str:
    """Return ``value`` if pip's target ``option`` (a key of :data:`PIP_TARGET_VALUES`) takes
    it; ``ValueError`` naming the option otherwise."""
    pattern, what = PIP_TARGET_VALUES[option]
    if not pattern.fullmatch(value):
        raise ValueError(f"{option}: {value!r} is not {what}")
    return value


def python_versions(value: str) -> tuple[str, str]:
    """``(python_version, python_full_version)`` markers of pip's ``--python-version``: ``3``
    is 3.0.0, ``3.12`` and ``312`` are 3.12.0, ``3.12.4`` itself."""
    parts = value.split(".") if "." in value or len(value) == 1 else [value[0], value[1:]]
    major, minor, micro = [*parts, "0", "0"][:3]
    return f"{int(major)}.{int(minor)}", f"{int(major)}.{int(minor)}.{int(micro)}"


def platform_markers(platform: str) -> dict[str, str]:
    """The markers a platform tag implies: ``sys_platform``, ``platform_system``,
    ``os_name`` and ``platform_machine``. Raises ``ValueError`` for a tag of another system
    than Linux (``manylinux*``, ``musllinux*``, ``linux_*``), Windows and macOS, or a macOS tag
    of several machines (``universal2``)."""
    if platform.startswith(("manylinux", "musllinux", "linux_")):
        machine = next(
            (m for m in _LINUX_MACHINES if platform.endswith("_" + m)), platform.rsplit("_", 1)[-1]
        )
        return _system("linux", "Linux", "posix", machine)
    if platform in _WINDOWS_MACHINES:
        return _system("win32", "Windows", "nt", _WINDOWS_MACHINES[platform])
    machine = platform.split("_", 3)[-1]
    if platform.startswith("macosx_") and machine in ("arm64", "x86_64"):
        return _system("darwin", "Darwin", "posix", machine)
    raise ValueError(
        f"cannot tell the environment markers of platform {platform!r}: give a Linux "
        "(manylinux, musllinux, linux), Windows (win_amd64, win_arm64, win32) or one-machine "
        "macOS (macosx_X_Y_arm64, macosx_X_Y_x86_64) tag, or a --target"
    )


def _system(sys_platform: str, system: str, os_name: str, machine: str) -> dict[str, str]:
    return {
        "sys_platform": sys_platform,
        "platform_system": system,
        "os_name": os_name,
        "platform_machine": machine,
    }


def manylinux_platforms(glibc_minor: int, arch: str) -> list[str]:
    """Every platform tag a glibc 2.``glibc_minor`` Linux on ``arch`` installs, best first, as
    an installer running there lists them: ``manylinux_2_N`` down to the oldest, each legacy
    alias (``manylinux2014`` = 2.17, ``manylinux2010`` = 2.12, ``manylinux1`` = 2.5) after its
    PEP 600 name, and ``linux_<arch>`` last. pip's ``--platform`` takes each tag literally, so
    ``manylinux_2_28_x86_64`` alone refuses a ``manylinux_2_17`` wheel."""
    oldest = _OLDEST_GLIBC.get(arch, _OLDEST_GLIBC_OTHERS)
    tags = []
    for minor in range(glibc_minor, oldest - 1, -1):
        tags.append(f"manylinux_2_{minor}_{arch}")
        legacy = _LEGACY_MANYLINUX.get(minor)
        if legacy is not None:
            tags.append(f"{legacy}_{arch}")
    return [*tags, f"linux_{arch}"]


@dataclass(frozen=True)
class Target:
    """The environment pins are for: pip's target options (none: the environment running
    wheelgate) and, for a ``--target`` preset, its name."""

    python_version: str | None = None
    platforms: tuple[str, ...] = ()
    implementation: str | None = None
    abis: tuple[str, ...] = ()
    preset: str | None = None
    #: The platform markers of a preset (whose platforms may name several machines, as
    #: ``universal2`` does); otherwise they are implied by ``platforms``.
    markers: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_other(self) -> bool:
        """Whether pip resolves for another environment than the one running it."""
        return bool(self.python_version or self.platforms or self.implementation or self.abis)

    def pip_options(self) -> list[str]:
        """pip's options resolving for this target. pip takes them with ``--dry-run`` only for
        binary distributions (``--only-binary=:all:``)."""
        options = [] if self.python_version is None else ["--python-version", self.python_version]
        for platform in self.platforms:
            options += ["--platform", platform]
        if self.implementation is not None:
            options += ["--implementation", self.implementation]
        for abi in self.abis:
            options += ["--abi", abi]
        return [*options, "--only-binary=:all:"] if options else []

    def marker_environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """The environment markers of this target: ``base`` (the environment running pip)
        with what the target says instead. Raises ``ValueError`` for platforms whose markers
        disagree (two systems) or cannot be told (:func:`platform_markers`)."""
        environment = {k: v for k, v in base.items() if isinstance(v, str)}
        if self.platforms and not self.markers:
            implied = [platform_markers(p) for p in self.platforms]
            if any(markers != implied[0] for markers in implied):
                raise ValueError(
                    "--platform tags of different systems or machines "
                    f"({', '.join(self.platforms)}): give the tags of one target"
                )
            environment.update(implied[0])
        if self.python_version is not None:
            short, full = python_versions(self.python_version)
            environment.update(python_version=short, python_full_version=full)
            environment["implementation_version"] = full
        if self.implementation in _IMPLEMENTATIONS:
            name, python = _IMPLEMENTATIONS[self.implementation]
            environment.update(implementation_name=name, platform_python_implementation=python)
        if self.is_other:
            environment.update(dict.fromkeys(_UNKNOWN_MARKERS, ""))
        environment.update(self.markers)
        return environment

    def describe(self) -> str:
        if self.preset is not None:
            return f"target {self.preset}"
        if not self.is_other:
            return "the environment that ran wheelgate pins"
        return "pip " + " ".join(self.pip_options()[:-1])


def target_preset(name: str) -> Target:
    """The :class:`Target` of preset ``name``: ``cp3XX-<platform>`` with platform
    ``manylinux_2_N_<arch>`` (every manylinux tag a glibc 2.N machine takes, and
    ``linux_<arch>``: :func:`manylinux_platforms`), ``win_amd64``, ``win_arm64`` or
    ``macosx_X_Y_<arm64|x86_64>`` (every macOS tag that machine takes). Raises
    ``ValueError`` for another name."""
    match = PRESET_PATTERN.fullmatch(name)
    platform = match.group(2) if match else ""
    manylinux, macosx = _MANYLINUX.fullmatch(platform), _MACOSX.fullmatch(platform)
    if manylinux is not None:
        platforms = manylinux_platforms(int(manylinux.group(1)), manylinux.group(2))
    elif macosx is not None:
        major, minor, arch = int(macosx.group(1)), int(macosx.group(2)), macosx.group(3)
        platforms = list(mac_platforms((major, minor), arch))
    elif platform in ("win_amd64", "win_arm64"):
        platforms = [platform]
    else:
        raise ValueError(
            f"{name!r} is not a target: cp3XX-manylinux_2_N_<arch> (arch x86_64, i686, "
            "aarch64, ppc64le, s390x, armv7l), cp3XX-win_amd64, cp3XX-win_arm64 or "
            "cp3XX-macosx_X_Y_<arm64|x86_64>, e.g. cp312-manylinux_2_28_x86_64"
        )
    assert match is not None
    version = f"3.{int(match.group(1))}"
    return Target(
        python_version=version,
        platforms=tuple(platforms),
        implementation="cp",
        abis=(f"cp3{int(match.group(1))}",),
        preset=name,
        markers=platform_markers(platform),
    )


def target_from_options(
    *,
    preset: str | None,
    python_version: str | None,
    platforms: Sequence[str],
    implementation: str | None,
    abis: Sequence[str],
) -> Target:
    """The :class:`Target` of ``wheelgate pins``'s options: a ``--target`` preset, or pip's
    own options. Raises ``ValueError`` naming the option whose value is refused, or both when
    a preset is given with pip's options."""
    if preset is not None:
        if python_version or platforms or implementation or abis:
            raise ValueError(
                "--target sets the Python version, platforms, implementation and ABI itself; "
                "give it without --python-version, --platform, --implementation and --abi"
            )
        return _option("--target", preset, target_preset)
    target = Target(
        python_version=(
            None if python_version is None else check_pip_value("--python-version", python_version)
        ),
        platforms=tuple(check_pip_value("--platform", p) for p in platforms),
        implementation=(
            None if implementation is None else check_pip_value("--implementation", implementation)
        ),
        abis=tuple(check_pip_value("--abi", a) for a in abis),
    )
    _option("--platform", target, lambda t: t.marker_environment({}))
    return target


def _option(option: str, value: T, check: Callable[[T], V]) -> V:
    try:
        return check(value)
    except ValueError as exc:
        raise ValueError(f"{option}: {exc}") from None


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
