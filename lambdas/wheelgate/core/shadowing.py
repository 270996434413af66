"""Tag shadowing: whether one more wheel of a released version changes what some interpreter
installs under ``==``. Pure.

pip and uv choose among the wheels of the version a pin matches by the interpreter's ordered
list of supported tags: the wheel whose best tag comes first wins, the higher build tag breaks
a tie, and what is still tied goes to whichever the index lists first (uv) or last (pip); an
sdist comes after every wheel. So a wheel joining a released version changes what
``==<version>`` installs wherever it ranks before, or level with, the wheel an interpreter
installed until then (:func:`shadowing`): ``lt-1.0-cp311-none-any.whl`` beside
``lt-1.0-py3-none-any.whl`` is what CPython 3.11 installs from then on.

Which interpreters: not a fixed list, but one of each kind that can decide. The order of a
handful of tags changes only where a Python, glibc, musl or macOS version crosses a version one
of the tags names, so the tags compared say which interpreters stand for all the others
(:func:`interpreters_for`). Covered: CPython 3.8 and later (with the GIL, free-threaded, and
debug builds where a debug ABI is named) and PyPy (which stands for every other
implementation as far as ``py`` tags go); glibc and musl Linux on any architecture, macOS on
x86_64 and arm64, Windows and any other platform a tag names; version numbers up to
:data:`MAX_VERSION`. Each is ranked as pip 26.3 ranks and as uv 0.13.9 ranks, which is how pip
ranked before its packaging moved ``linux_<arch>`` first (:class:`Installer`). Not covered:
Python 2 and CPython before 3.8, Android and iOS API levels (each such platform tag counts as
a platform of its own), 32-bit Python on a 64-bit ARM Linux (``armv8l``). A yanked wheel
counts as installable: pip and uv skip it unless every file the pin matches is yanked, which a
new wheel changes however it ranks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property, lru_cache
from typing import Literal

from packaging.tags import Tag, compatible_tags, cpython_tags, generic_tags, mac_platforms
from packaging.utils import BuildTag, NormalizedName, parse_wheel_filename
from packaging.version import Version


class Installer(StrEnum):
    """An order in which installers rank one interpreter's supported tags."""

    #: pip 26.3 (its packaging 26.3): ``linux_<arch>`` before the manylinux and musllinux tags,
    #: and the free-threaded stable ABI ``abi3t``.
    PIP = "pip"
    #: uv 0.13.9, and pip before its packaging moved ``linux_<arch>`` first: ``linux_<arch>``
    #: after them, no ``abi3t``.
    UV = "uv"


#: The highest Python minor, glibc minor, musl minor and macOS major version considered: a tag
#: naming a higher one is no interpreter's (and a file name cannot make the lists grow without
#: bound).
MAX_VERSION = 200
#: The oldest CPython considered (3.7 and older have their own ABI spelling, and are past their
#: end of life).
OLDEST_CPYTHON_MINOR = 8
#: PEP 600's legacy aliases, each listed right after the manylinux tag it stands for.
LEGACY_MANYLINUX = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
#: Platforms standing for every platform no tag names (the first one no tag names is used).
ELSEWHERE = ("win_amd64", "win_arm64", "win32", "freebsd_14_3_release_amd64")
#: A platform no tag names, for reading the order of interpreter and ABI tags from packaging.
_PLACEHOLDER = "wheelgate_placeholder"


@dataclass(frozen=True)
class Python:
    """An implementation (``cp``, ``pp``) of Python 3.<minor> and the ABIs it loads, most
    specific first (``("cp313td", "cp313t")`` for a free-threaded debug build)."""

    implementation: str
    minor: int
    abis: tuple[str, ...]

    @property
    def tag(self) -> str:
        return f"{self.implementation}3{self.minor}-{self.abis[0]}"


@dataclass(frozen=True)
class Platform:
    """Where an interpreter runs: the platform tags it supports, most preferred first as uv
    orders them, and the one pip 26.3 moves to the front (``linux_<arch>``), if any. ``name``
    is its own, most specific tag."""

    name: str
    tags: tuple[str, ...]
    linux: str | None = None

    def ordered(self, installer: Installer) -> tuple[str, ...]:
        if installer is Installer.PIP and self.linux is not None:
            return (self.linux, *(t for t in self.tags if t != self.linux))
        return self.tags


@lru_cache(maxsize=1024)
def glibc_platform(arch: str, minor: int) -> Platform:
    """Linux with glibc 2.<minor> on ``arch``: each manylinux tag from 2.<minor> down to the
    oldest for the architecture (2.5 on x86, 2.17 elsewhere), its legacy alias right after it,
    then ``linux_<arch>`` (packaging's ``_manylinux``, for a given glibc)."""
    oldest = 5 if arch in {"x86_64", "i686"} else 17
    tags: list[str] = []
    for m in range(minor, oldest - 1, -1):
        tags.append(f"manylinux_2_{m}_{arch}")
        if m in LEGACY_MANYLINUX:
            tags.append(f"{LEGACY_MANYLINUX[m]}_{arch}")
    linux = f"linux_{arch}"
    return Platform(tags[0] if tags else linux, (*tags, linux), linux=linux)


@lru_cache(maxsize=1024)
def musl_platform(arch: str, minor: int) -> Platform:
    """Linux with musl 1.<minor> on ``arch``: musllinux 1.<minor> down to 1.0, then
    ``linux_<arch>``."""
    tags = [f"musllinux_1_{m}_{arch}" for m in range(minor, -1, -1)]
    linux = f"linux_{arch}"
    return Platform(tags[0], (*tags, linux), linux=linux)


@lru_cache(maxsize=1024)
def mac_platform(version: tuple[int, int], arch: str) -> Platform:
    """macOS ``version`` on ``arch`` (``x86_64``, ``arm64``), as packaging lists it."""
    return Platform(f"macosx_{version[0]}_{version[1]}_{arch}", tuple(mac_platforms(version, arch)))


def single_platform(tag: str) -> Platform:
    """A platform that supports one platform tag (Windows, FreeBSD...)."""
    return Platform(tag, (tag,))


@lru_cache(maxsize=1024)
def _blocks(python: Python, installer: Installer) -> dict[tuple[str, str, bool], int]:
    """The position of each (interpreter, ABI, ``any`` platform or not) in ``python``'s tag
    list: packaging lists every platform of one pair before the next pair, so a tag ranks by
    (its pair's position, its platform's position)."""
    version = (3, python.minor)
    platforms = [_PLACEHOLDER]
    if python.implementation == "cp":
        tags = [
            *cpython_tags(version, python.abis, platforms),
            *compatible_tags(version, f"cp3{python.minor}", platforms),
        ]
    else:
        tags = [
            *generic_tags(f"pp3{python.minor}", python.abis, platforms),
            *compatible_tags(version, "pp3", platforms),
        ]
    order: dict[tuple[str, str, bool], int] = {}
    for tag in tags:
        if installer is Installer.UV and tag.abi == "abi3t":
            continue
        order.setdefault((tag.interpreter, tag.abi, tag.platform == "any"), len(order))
    return order


@lru_cache(maxsize=1024)
def _positions(platform: Platform, installer: Installer) -> dict[str, int]:
    return {tag: n for n, tag in enumerate(platform.ordered(installer))}


#: A tag's rank for an interpreter: lower is preferred.
Rank = tuple[int, int]


@dataclass(frozen=True)
class Interpreter:
    """A Python on a platform, its tags ranked as ``installer`` ranks them."""

    python: Python
    platform: Platform
    installer: Installer

    @property
    def tag(self) -> str:
        """Its most specific tag (``cp311-cp311-manylinux_2_28_x86_64``), to name it."""
        return f"{self.python.tag}-{self.platform.name}"

    @cached_property
    def _blocks(self) -> dict[tuple[str, str, bool], int]:
        return _blocks(self.python, self.installer)

    @cached_property
    def _positions(self) -> dict[str, int]:
        return _positions(self.platform, self.installer)

    def rank(self, tag: Tag) -> Rank | None:
        """Where ``tag`` is in this interpreter's list, ``None`` when it is not supported."""
        anywhere = tag.platform == "any"
        block = self._blocks.get((tag.interpreter, tag.abi, anywhere))
        if block is None:
            return None
        if anywhere:
            return (block, 0)
        position = self._positions.get(tag.platform)
        return None if position is None else (block, position)

    def best(self, tags: Iterable[Tag]) -> tuple[Rank, Tag] | None:
        """The best ranked of ``tags`` and its rank, ``None`` when none is supported."""
        ranked = [(rank, tag) for tag in tags if (rank := self.rank(tag)) is not None]
        return min(ranked, key=lambda pair: pair[0]) if ranked else None


_NAMED_MINOR = re.compile(r"(?:cp|py|pp)3(\d+)")
_CPYTHON_ABI = re.compile(r"cp3(\d+)([a-z]*)")
_PYPY_ABI = re.compile(r"pypy3(\d+)_pp\d+")
_MANYLINUX = re.compile(r"manylinux_2_(\d+)_(.+)")
_LEGACY = re.compile(r"(manylinux(?:1|2010|2014))_(.+)")
_MUSLLINUX = re.compile(r"musllinux_1_(\d+)_(.+)")
_LINUX = re.compile(r"linux_(.+)")
_MACOS = re.compile(r"macosx_(\d+)_(\d+)_(.+)")
_LEGACY_MINOR = {name: minor for minor, name in LEGACY_MANYLINUX.items()}


def _bounded(number: str) -> int | None:
    """``number`` when it is at most :data:`MAX_VERSION` (a version no tag may exceed)."""
    return (
        int(number) if len(number) <= len(str(MAX_VERSION)) and int(number) <= MAX_VERSION else None
    )


def _pythons(tags: Iterable[Tag]) -> list[Python]:
    """One Python of each kind whose order of ``tags`` differs: every minor a tag names and the
    one after it (the order changes only where the minor reaches a named one), and 3.8; of
    each, CPython, free-threaded from 3.13, a debug build where a debug ABI is named, and PyPy
    (which stands for every implementation but CPython) with each PyPy ABI named and one no
    tag names."""
    minors: set[int] = set()
    debug: set[tuple[int, bool]] = set()
    pypy_abis: dict[int, set[str]] = {}
    for tag in tags:
        if (named := _NAMED_MINOR.fullmatch(tag.interpreter)) and (
            minor := _bounded(named[1])
        ) is not None:
            minors.add(minor)
        if (abi := _CPYTHON_ABI.fullmatch(tag.abi)) and (minor := _bounded(abi[1])) is not None:
            minors.add(minor)
            if "d" in abi[2]:
                debug.add((minor, "t" in abi[2]))
        if (abi := _PYPY_ABI.fullmatch(tag.abi)) and (minor := _bounded(abi[1])) is not None:
            minors.add(minor)
            pypy_abis.setdefault(minor, set()).add(tag.abi)
    candidates = sorted(
        m
        for m in {OLDEST_CPYTHON_MINOR, *minors, *(m + 1 for m in minors)}
        if OLDEST_CPYTHON_MINOR <= m <= MAX_VERSION
    )
    pythons: list[Python] = []
    for m in candidates:
        pythons.append(Python("cp", m, (f"cp3{m}",)))
        if (m, False) in debug:
            pythons.append(Python("cp", m, (f"cp3{m}d", f"cp3{m}")))
        if m >= 13:
            pythons.append(Python("cp", m, (f"cp3{m}t",)))
            if (m, True) in debug:
                pythons.append(Python("cp", m, (f"cp3{m}td", f"cp3{m}t")))
    for m in sorted({*candidates, *pypy_abis}):
        known = pypy_abis.get(m, set())
        unknown = next(
            f"pypy3{m}_pp{n}" for n in range(73, 74 + len(known)) if f"pypy3{m}_pp{n}" not in known
        )
        pythons.extend(Python("pp", m, (abi,)) for abi in (*sorted(known), unknown))
    return pythons


def _platforms(tags: Iterable[Tag]) -> list[Platform]:
    """One platform of each kind whose set of supported ``tags`` differs: for each Linux
    architecture a tag names, glibc at each manylinux version named and musl at each
    musllinux version named (the order is fixed; what a version supports grows with it), and
    one older than all of them; macOS on x86_64 and arm64 at each version named; each other
    platform named; and one platform no tag names."""
    glibc: dict[str, set[int]] = {}
    musl: dict[str, set[int]] = {}
    mac: set[tuple[int, int]] = set()
    others: dict[str, None] = {}
    named = {tag.platform for tag in tags} - {"any"}
    for platform in sorted(named):
        if found := _MANYLINUX.fullmatch(platform):
            if (minor := _bounded(found[1])) is not None:
                glibc.setdefault(found[2], set()).add(minor)
        elif found := _LEGACY.fullmatch(platform):
            glibc.setdefault(found[2], set()).add(_LEGACY_MINOR[found[1]])
        elif found := _MUSLLINUX.fullmatch(platform):
            if (minor := _bounded(found[1])) is not None:
                musl.setdefault(found[2], set()).add(minor)
        elif found := _LINUX.fullmatch(platform):
            glibc.setdefault(found[1], set())
        elif found := _MACOS.fullmatch(platform):
            major, minor = _bounded(found[1]), _bounded(found[2])
            if major is not None and minor is not None:
                mac.add((major, minor) if major == 10 else (major, 0))
        else:
            others[platform] = None
    platforms: list[Platform] = []
    for arch in sorted(glibc.keys() | musl.keys()):
        platforms += [glibc_platform(arch, m) for m in sorted(glibc.get(arch, ()))]
        platforms += [musl_platform(arch, m) for m in sorted(musl.get(arch, ()))]
        linux = f"linux_{arch}"
        platforms.append(Platform(linux, (linux,), linux=linux))
    if mac:
        platforms += [mac_platform(v, "x86_64") for v in sorted(mac)]
        arm = {v for v in mac if v >= (11, 0)} | {(11, 0)}
        platforms += [mac_platform(v, "arm64") for v in sorted(arm)]
    platforms += [single_platform(p) for p in others]
    elsewhere = next((p for p in ELSEWHERE if p not in named), None)
    platforms.append(single_platform(elsewhere) if elsewhere else Platform("any platform", ()))
    return list(dict.fromkeys(platforms))


@lru_cache(maxsize=256)
def _standing_for(tags: frozenset[Tag]) -> tuple[Interpreter, ...]:
    """:func:`interpreters_for` ``tags``, built once for each set of tags (a project's versions
    mostly have the same tags, so the interpreters and their rank tables are reused)."""
    pythons = _pythons(tags)
    return tuple(
        Interpreter(python, platform, installer)
        for platform in _platforms(tags)
        for python in pythons
        for installer in _INSTALLERS
    )


_INSTALLERS = tuple(Installer)


def interpreters_for(tags: Iterable[Tag], supporting: Iterable[Tag] = ()) -> Iterator[Interpreter]:
    """Interpreters that stand for every interpreter as far as the order of ``tags`` goes: for
    any interpreter, one of these supports the same of ``tags`` in the same order, under
    the same :class:`Installer`. With ``supporting``, only those that support one of those
    tags."""
    wanted = frozenset(supporting)
    for interpreter in _standing_for(frozenset(tags)):
        if not wanted or any(interpreter.rank(t) is not None for t in wanted):
            yield interpreter


@dataclass(frozen=True)
class Wheel:
    """A wheel as installers compare it: its project, version (local label included), build
    tag and tags, and its bytes' SHA-256 (``None`` where not known)."""

    filename: str
    sha256: str | None
    project: NormalizedName
    version: Version
    build: BuildTag
    tags: frozenset[Tag]

    @classmethod
    def of(cls, filename: str, sha256: str | None) -> Wheel:
        """Raises ``ValueError`` when ``filename`` is not a wheel's."""
        project, version, build, tags = parse_wheel_filename(filename)
        return cls(filename, sha256, project, version, build, tags)


@dataclass(frozen=True)
class Shadowing:
    """``new`` is what ``installer`` would install on ``interpreter`` instead of ``released``:
    ``new_tag`` ranks before ``released_tag`` (``how="tag"``), or level with it and the new
    build tag is higher (``"build tag"``), or level with it under the same build tag, which
    leaves the choice to the index's order (``"tie"``)."""

    new: str
    released: str
    interpreter: Interpreter
    new_tag: Tag
    released_tag: Tag
    how: Literal["tag", "build tag", "tie"]


def _preferred(a: tuple[Rank, BuildTag], b: tuple[Rank, BuildTag]) -> bool:
    """Whether an installer prefers a wheel ranked ``a`` (rank, build tag) to one ranked
    ``b``."""
    return a[0] < b[0] or (a[0] == b[0] and a[1] > b[1])


def shadowing_on(
    interpreter: Interpreter,
    new: Wheel,
    released: Sequence[Wheel],
    *,
    allow_build_tag_rereleases: bool,
) -> Shadowing | None:
    """How ``new`` changes what ``interpreter`` installs among the ``released`` wheels of its
    version, if it does: only where one of them was installable there, and never when ``new``
    has the bytes of the wheel it would displace. With ``allow_build_tag_rereleases``, a new
    build tag may decide (the deployment lets a release be rebuilt under a new build tag)."""
    found = interpreter.best(new.tags)
    if found is None:
        return None
    new_rank, new_tag = found
    best: tuple[Rank, BuildTag] | None = None
    installed: list[tuple[Wheel, Tag]] = []
    for wheel in released:
        ranked = interpreter.best(wheel.tags)
        if ranked is None:
            continue
        key = (ranked[0], wheel.build)
        if best is None or _preferred(key, best):
            best, installed = key, [(wheel, ranked[1])]
        elif key == best:
            installed.append((wheel, ranked[1]))
    if best is None:
        return None
    if new.sha256 is not None and any(w.sha256 == new.sha256 for w, _ in installed):
        return None
    how: Literal["tag", "build tag", "tie"]
    if new_rank < best[0]:
        how = "tag"
    elif new_rank == best[0] and new.build > best[1]:
        if allow_build_tag_rereleases:
            return None
        how = "build tag"
    elif new_rank == best[0] and new.build == best[1]:
        how = "tie"
    else:
        return None
    wheel, tag = installed[0]
    return Shadowing(new.filename, wheel.filename, interpreter, new_tag, tag, how)


def shadowing(
    new: Wheel, released: Sequence[Wheel], *, allow_build_tag_rereleases: bool
) -> Shadowing | None:
    """The first interpreter (of :func:`interpreters_for` the wheels' tags) on which the wheel
    ``new`` joining the ``released`` wheels of its version would change what is installed
    (:func:`shadowing_on`), or ``None`` when it changes nothing anywhere."""
    if not released:
        return None
    tags = new.tags.union(*(wheel.tags for wheel in released))
    for interpreter in interpreters_for(tags, new.tags):
        found = shadowing_on(
            interpreter, new, released, allow_build_tag_rereleases=allow_build_tag_rereleases
        )
        if found is not None:
            return found
    return None
