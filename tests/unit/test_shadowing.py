"""Tag shadowing: a wheel joining a released version is found to change what some interpreter
installs exactly when it does.

The rule (``wheelgate.core.shadowing``) derives, from the tags it compares, a few interpreters
standing for all the others, and ranks tags by (interpreter and ABI, platform). The property
test holds it to the definition, checked the slow way: over a fixed, broad grid of interpreters
(CPython 3.8-3.15, free-threaded and debug builds, PyPy; glibc, musl, macOS, Windows, an
unnamed platform), each with the full list of tags packaging gives it in the installer's order,
a new wheel changes what is installed iff some interpreter that installed one of the released
wheels would now install it (or may, on a tie). The generated tags stay within what the grid
covers: every version they name and the one after it are in the grid.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pytest
from packaging.tags import compatible_tags, cpython_tags, generic_tags, parse_tag, sys_tags
from packaging.utils import BuildTag

from wheelgate.core.shadowing import (
    Installer,
    Interpreter,
    Platform,
    Python,
    Wheel,
    glibc_platform,
    mac_platform,
    musl_platform,
    shadowing,
    single_platform,
)

# -- the grid -------------------------------------------------------------------------------

GRID_PYTHONS = (
    *(Python("cp", m, (f"cp3{m}",)) for m in range(8, 16)),
    *(Python("cp", m, (f"cp3{m}t",)) for m in range(13, 16)),
    Python("cp", 12, ("cp312d", "cp312")),
    *(Python("pp", m, (f"pypy3{m}_pp73",)) for m in range(8, 16)),
    Python("pp", 10, ("pypy310_pp74",)),
)
GRID_PLATFORMS = (
    *(glibc_platform("x86_64", g) for g in (4, 5, 12, 17, 28, 34)),
    *(glibc_platform("aarch64", g) for g in (16, 17, 28)),
    glibc_platform("riscv64", 31),
    *(musl_platform("x86_64", m) for m in (0, 1, 2)),
    *(mac_platform(v, "x86_64") for v in ((10, 8), (10, 9), (10, 15), (11, 0), (14, 0))),
    *(mac_platform(v, "arm64") for v in ((11, 0), (14, 0))),
    *map(single_platform, ("win_amd64", "win32", "win_arm64", "freebsd_14_3_release_amd64")),
)


@dataclass(frozen=True)
class GridInterpreter:
    """An interpreter of the grid: every tag it supports, by its position in its full list."""

    name: str
    positions: dict[str, int]


def full_list(python: Python, platform: Platform, installer: Installer) -> list[str]:
    """Every tag ``python`` supports on ``platform``, as ``installer`` lists them: packaging's
    own list (pip 26.3's), less ``abi3t`` for uv."""
    platforms = list(platform.ordered(installer))
    version = (3, python.minor)
    if python.implementation == "cp":
        own = cpython_tags(version, python.abis, platforms)
        pure = compatible_tags(version, f"cp3{python.minor}", platforms)
    else:
        own = generic_tags(f"pp3{python.minor}", python.abis, platforms)
        pure = compatible_tags(version, "pp3", platforms)
    listed = [*own, *pure]
    return [str(t) for t in listed if installer is Installer.PIP or t.abi != "abi3t"]


@pytest.fixture(scope="module")
def grid() -> tuple[GridInterpreter, ...]:
    """Every interpreter of the grid (built once: a second or so)."""
    found = []
    for python in GRID_PYTHONS:
        for platform in GRID_PLATFORMS:
            for installer in Installer:
                tags = full_list(python, platform, installer)
                positions = {tag: n for n, tag in reversed(list(enumerate(tags)))}
                found.append(
                    GridInterpreter(f"{python.tag}-{platform.name} {installer}", positions)
                )
    return tuple(found)


def preference(
    interpreter: GridInterpreter, tags: Sequence[str], build: BuildTag
) -> tuple[int, BuildTag] | None:
    """How an installer prefers a wheel with ``tags`` and ``build`` there (higher first): its
    best tag's position, then its build tag; ``None`` when it is not installable."""
    found = [interpreter.positions[t] for t in tags if t in interpreter.positions]
    return (-min(found), build) if found else None


def installs_on_grid(
    grid: Sequence[GridInterpreter],
    new: Wheel,
    released: Sequence[Wheel],
    *,
    allow_build_tag_rereleases: bool,
) -> str | None:
    """The first grid interpreter on which pip's or uv's choice among ``released`` may become
    ``new`` (other bytes than every wheel it may have installed before): its best tag comes
    first, or level with a higher build tag (unless the setting allows it), or level with the
    same build tag (then the index's order decides)."""
    new_tags = [str(t) for t in new.tags]
    released_tags = [(w, [str(t) for t in w.tags]) for w in released]
    for interpreter in grid:
        new_key = preference(interpreter, new_tags, new.build)
        if new_key is None:
            continue
        keys = [
            (k, w) for w, tags in released_tags if (k := preference(interpreter, tags, w.build))
        ]
        if not keys:
            continue
        top = max(k for k, _ in keys)
        before = {w.sha256 for k, w in keys if k == top}
        if new.sha256 in before or new_key < top:
            continue
        if new_key > top and new_key[0] == top[0] and allow_build_tag_rereleases:
            continue
        return interpreter.name
    return None


# -- generated wheels -----------------------------------------------------------------------

#: (interpreter, ABI) pairs and platforms of the generated wheels: the versions they name, and
#: the one after each, are in the grid.
PAIRS = (
    ("py3", "none"), ("py2.py3", "none"), ("py38", "none"), ("py311", "none"),
    ("py312", "none"), ("cp38", "cp38"), ("cp310", "cp310"), ("cp311", "cp311"),
    ("cp312", "cp312"), ("cp313", "cp313"), ("cp314", "cp314"), ("cp38", "abi3"),
    ("cp311", "abi3"), ("cp312", "abi3"), ("cp311", "none"), ("cp313", "none"),
    ("cp313", "cp313t"), ("cp314", "cp314t"), ("cp313", "abi3t"), ("cp312", "cp312d"),
    ("pp310", "pypy310_pp73"), ("pp310", "none"), ("pp3", "none"),
)  # fmt: skip
PLATFORMS = (
    "any", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
    "manylinux_2_17_x86_64.manylinux2014_x86_64", "manylinux1_x86_64", "manylinux2010_x86_64",
    "manylinux_2_28_x86_64", "manylinux_2_34_x86_64", "linux_x86_64", "musllinux_1_1_x86_64",
    "musllinux_1_2_x86_64", "manylinux_2_17_aarch64", "manylinux_2_28_aarch64", "linux_aarch64",
    "macosx_10_9_x86_64", "macosx_10_9_universal2", "macosx_10_15_x86_64", "macosx_11_0_arm64",
    "macosx_14_0_arm64", "macosx_11_0_universal2", "macosx_14_0_x86_64", "win_amd64", "win32",
    "win_arm64",
)  # fmt: skip
#: Bytes: a few values, so that a new wheel sometimes has a released wheel's bytes.
SHAS = ("a" * 64, "b" * 64, "c" * 64, "d" * 64, "e" * 64)


def generated_wheel(rng: random.Random, taken: set[str]) -> Wheel:
    while True:
        interpreter, abi = rng.choice(PAIRS)
        # Pure-Python pairs mostly with "any", the others mostly with a platform.
        platform = "any" if abi == "none" and rng.random() < 0.5 else rng.choice(PLATFORMS)
        build = rng.choice(("", "", "", "1-", "2-"))
        name = f"lt-1.0-{build}{interpreter}-{abi}-{platform}.whl"
        if name not in taken:
            taken.add(name)
            return Wheel.of(name, rng.choice(SHAS))


def generated_cases(seed: int, count: int) -> Iterator[tuple[Wheel, list[Wheel], bool]]:
    rng = random.Random(seed)  # noqa: S311 (reproducible cases, not secrets)
    for _ in range(count):
        taken: set[str] = set()
        released = [generated_wheel(rng, taken) for _ in range(rng.randint(1, 4))]
        yield generated_wheel(rng, taken), released, rng.random() < 0.3


@pytest.mark.parametrize("seed", range(3))
def test_a_new_wheel_shadows_exactly_where_some_grid_interpreter_would_switch(
    grid: tuple[GridInterpreter, ...], seed: int
) -> None:
    outcomes = {True: 0, False: 0}
    for new, released, allow in generated_cases(seed, 400):
        found = shadowing(new, released, allow_build_tag_rereleases=allow)
        expected = installs_on_grid(grid, new, released, allow_build_tag_rereleases=allow)
        assert (found is not None) == (expected is not None), (
            f"{new.filename} after {[w.filename for w in released]} (allow={allow}): "
            f"rule says {found}, the grid says {expected}"
        )
        outcomes[found is not None] += 1
    # Both outcomes are common: the property is not held by a rule that always says the same.
    assert min(outcomes.values()) > 50, outcomes


# -- the examples ---------------------------------------------------------------------------


def shadows(new: str, *released: str, allow: bool = False, same_bytes: bool = False) -> bool:
    wheels = [Wheel.of(name, "a" * 64) for name in released]
    joining = Wheel.of(new, "a" * 64 if same_bytes else "b" * 64)
    return shadowing(joining, wheels, allow_build_tag_rereleases=allow) is not None


@pytest.mark.parametrize(
    ("new", "released"),
    [
        # CPython 3.11 prefers an interpreter-specific pure wheel to py3-none-any.
        ("lt-1.0-cp311-none-any.whl", ["lt-1.0-py3-none-any.whl"]),
        # ...under a local label too.
        ("lt-2.0+rocm6.3-cp311-none-any.whl", ["lt-2.0+rocm6.3-py3-none-any.whl"]),
        # CPython 3.13 prefers cp313-cp313 to the cp312-abi3 wheel it installed.
        (
            "lt-1.0-cp313-cp313-manylinux_2_17_x86_64.whl",
            ["lt-1.0-cp312-abi3-manylinux_2_17_x86_64.whl"],
        ),
        # A newer glibc prefers the newer manylinux tag; pip 26.3 puts linux_<arch> first.
        (
            "lt-1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
            ["lt-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"],
        ),
        ("lt-1.0-cp311-cp311-linux_x86_64.whl", ["lt-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"]),
        # macOS 11 and later on x86_64 prefer an 11.0 universal2 wheel to a 10.9 x86_64 one.
        (
            "lt-1.0-cp311-cp311-macosx_11_0_universal2.whl",
            ["lt-1.0-cp311-cp311-macosx_10_9_x86_64.whl"],
        ),
        # A platform wheel after a pure one: every CPython 3.12 on glibc x86_64 switches.
        ("lt-1.0-cp312-cp312-manylinux_2_17_x86_64.whl", ["lt-1.0-py3-none-any.whl"]),
        # An Apple silicon Mac installed the pure wheel: a universal2 one ranks first there.
        (
            "lt-1.0-cp311-cp311-macosx_10_9_universal2.whl",
            ["lt-1.0-cp311-cp311-macosx_10_9_x86_64.whl", "lt-1.0-py3-none-any.whl"],
        ),
        # Level with the released wheel: the index's order decides, so it may switch.
        ("lt-1.0-py2.py3-none-any.whl", ["lt-1.0-py3-none-any.whl"]),
    ],
)
def test_a_wheel_an_interpreter_would_install_instead_shadows(
    new: str, released: list[str]
) -> None:
    assert shadows(new, *released)


@pytest.mark.parametrize(
    ("new", "released"),
    [
        # A new architecture or operating system: no interpreter had a wheel of it.
        (
            "lt-1.0-cp311-cp311-manylinux_2_17_aarch64.whl",
            ["lt-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"],
        ),
        ("lt-1.0-cp311-cp311-win_amd64.whl", ["lt-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"]),
        ("lt-1.0-cp311-cp311-macosx_11_0_arm64.whl", ["lt-1.0-cp311-cp311-macosx_10_9_x86_64.whl"]),
        (
            "lt-1.0-cp311-cp311-musllinux_1_2_x86_64.whl",
            ["lt-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"],
        ),
        # A pure fallback after platform wheels: it ranks after each of them where they install.
        (
            "lt-1.0-py3-none-any.whl",
            ["lt-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", "lt-1.0-cp311-cp311-win_amd64.whl"],
        ),
        # Another Python, where the released wheels are not installable.
        (
            "lt-1.0-cp313-cp313-manylinux_2_17_x86_64.whl",
            ["lt-1.0-cp312-cp312-manylinux_2_17_x86_64.whl"],
        ),
        # An older manylinux tag ranks after the released one wherever both install.
        (
            "lt-1.0-cp311-cp311-manylinux_2_17_x86_64.whl",
            ["lt-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"],
        ),
    ],
)
def test_a_wheel_no_interpreter_would_switch_to_does_not(new: str, released: list[str]) -> None:
    assert not shadows(new, *released)


def test_a_build_tag_decides_only_where_the_deployment_allows_build_tag_rereleases() -> None:
    new, released = "lt-1.0-1-py2.py3-none-any.whl", "lt-1.0-py3-none-any.whl"
    assert shadows(new, released)
    assert not shadows(new, released, allow=True)
    # The setting lets a build tag decide, never a better tag.
    assert shadows("lt-1.0-1-cp311-none-any.whl", released, allow=True)


def test_the_same_bytes_under_another_name_change_nothing() -> None:
    assert not shadows("lt-1.0-cp311-none-any.whl", "lt-1.0-py3-none-any.whl", same_bytes=True)


def test_the_refusal_names_an_interpreter_that_would_switch_and_both_tags() -> None:
    new = Wheel.of("lt-1.0-cp311-none-any.whl", "b" * 64)
    found = shadowing(
        new, [Wheel.of("lt-1.0-py3-none-any.whl", "a" * 64)], allow_build_tag_rereleases=False
    )
    assert found is not None
    assert found.released == "lt-1.0-py3-none-any.whl"
    assert found.interpreter.tag.startswith("cp311-cp311-")
    assert (str(found.new_tag), str(found.released_tag), found.how) == (
        "cp311-none-any",
        "py3-none-any",
        "tag",
    )


# -- the interpreters ranked as installers rank them ------------------------------------------


def test_this_interpreter_ranks_its_tags_as_packaging_does() -> None:
    # The interpreter running the tests, modelled: CPython 3.x on this machine's platform.
    host = [str(t) for t in sys_tags()]
    best = host[0].split("-")
    if not (
        best[0].startswith("cp")
        and host[0].endswith("x86_64")
        and any("manylinux" in t for t in host)
    ):
        pytest.skip("modelled for CPython on glibc x86_64 Linux")
    glibc = max(int(t.split("_")[2]) for t in host if "-manylinux_2_" in t)
    interpreter = Interpreter(
        Python("cp", int(best[0][3:]), (best[1],)), glibc_platform("x86_64", glibc), Installer.PIP
    )
    ranks = [interpreter.rank(next(iter(parse_tag(t)))) for t in host]
    assert None not in ranks
    assert ranks == sorted(ranks)  # type: ignore[type-var]


def test_platform_lists_are_packagings_for_a_given_glibc_musl_and_macos() -> None:
    assert glibc_platform("aarch64", 18).ordered(Installer.UV) == (
        "manylinux_2_18_aarch64",
        "manylinux_2_17_aarch64",
        "manylinux2014_aarch64",
        "linux_aarch64",
    )
    assert glibc_platform("x86_64", 5).ordered(Installer.PIP) == (
        "linux_x86_64",
        "manylinux_2_5_x86_64",
        "manylinux1_x86_64",
    )
    assert musl_platform("aarch64", 1).ordered(Installer.PIP) == (
        "linux_aarch64",
        "musllinux_1_1_aarch64",
        "musllinux_1_0_aarch64",
    )
    assert mac_platform((11, 0), "arm64").tags[:3] == (
        "macosx_11_0_arm64",
        "macosx_11_0_universal2",
        "macosx_10_16_universal2",
    )
