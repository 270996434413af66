"""The environment pins are for (``wheelgate pins --target`` or pip's own target options): a
:class:`Target`, the pip options that resolve for it and the environment markers it implies.

pip takes ``--python-version``, ``--platform``, ``--implementation`` and ``--abi`` for wheel
tags and ``Requires-Python`` only; :meth:`Target.marker_environment` says what the target's
markers are, so that :mod:`wheelgate.staging.pins` can walk its requirements for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from packaging.tags import mac_platforms

T = TypeVar("T")
V = TypeVar("V")

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
