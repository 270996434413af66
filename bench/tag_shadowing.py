"""What the tag-shadowing rule costs a promotion: ``TagBook`` judging thousands of set files
against a nightly archive of thousands of released wheels.

A project with ``--versions`` released versions, each with 5 CPython wheels on 6 platforms (30
wheels: manylinux x86_64 and aarch64, musllinux, macOS x86_64 and arm64, Windows), then three
sets judged file by file: wheels of new versions (the usual promotion), wheels joining every
released version that no interpreter would switch to (a new Python, a new platform, a pure
fallback: each judged against all 30 released wheels on every interpreter), and wheels that
shadow (refused at the first interpreter found). CPU seconds, best of ``--repeat``.

    .venv/bin/python bench/tag_shadowing.py [--versions 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from wheelgate.core.release_rules import TagBook

PYTHONS = [f"cp3{m}-cp3{m}" for m in range(9, 14)]
PLATFORMS = [
    "manylinux_2_17_x86_64.manylinux2014_x86_64",
    "manylinux_2_28_aarch64",
    "musllinux_1_2_x86_64",
    "macosx_11_0_arm64",
    "macosx_10_9_x86_64",
    "win_amd64",
]
SHA_A, SHA_B = "a" * 64, "b" * 64


def released(versions: int) -> list[tuple[str, str]]:
    return [
        (f"torch-2.{v}.0-{p}-{q}.whl", SHA_A)
        for v in range(versions)
        for p in PYTHONS
        for q in PLATFORMS
    ]


def joining(versions: int) -> list[str]:
    """Wheels no interpreter that installed a released wheel would switch to."""
    names = []
    for v in range(versions):
        names += [f"torch-2.{v}.0-cp314-cp314-{q}.whl" for q in PLATFORMS]
        names += [f"torch-2.{v}.0-{p}-linux_riscv64.whl" for p in PYTHONS]
        names += [f"torch-2.{v}.0-{p}-win_arm64.whl" for p in PYTHONS]
        names.append(f"torch-2.{v}.0-py3-none-any.whl")
    return names


def shadowing(versions: int) -> list[str]:
    """Wheels a glibc 2.34 x86_64 machine would install instead of the released ones."""
    return [
        f"torch-2.{v}.0-{p}-manylinux_2_34_x86_64.whl" for v in range(versions) for p in PYTHONS
    ]


def new_versions(versions: int) -> list[str]:
    return [
        f"torch-3.{v}.0-{p}-{q}.whl" for v in range(versions) for p in PYTHONS for q in PLATFORMS
    ]


def judge(
    archive: Sequence[tuple[str, str]], names: Sequence[str], repeat: int
) -> tuple[float, int]:
    """Best CPU seconds of judging ``names`` with a fresh book (caches warm after the first
    run, as in a promoter container), and how many were refused."""
    best, refused = float("inf"), 0
    for _ in range(repeat):
        started = time.process_time()
        book = TagBook(archive, allow_build_tag_rereleases=False)
        refused = sum(book.conflict(n, SHA_B, index="v2/x") is not None for n in names)
        best = min(best, time.process_time() - started)
    return best, refused


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--versions", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    archive = released(options.versions)
    print(f"{len(archive):,} released wheels, {options.versions} versions\n")
    print("| set | files | refused | CPU seconds | per file (ms) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, names in (
        ("wheels of new versions", new_versions(options.versions)),
        ("wheels joining released versions, none shadowing", joining(options.versions)),
        ("wheels joining released versions, each shadowing", shadowing(options.versions)),
    ):
        seconds, refused = judge(archive, names, options.repeat)
        print(
            f"| {label} | {len(names):,} | {refused:,} | {seconds:.2f} "
            f"| {1000 * seconds / len(names):.2f} |"
        )


if __name__ == "__main__":
    main()
