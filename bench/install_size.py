"""Seconds and megabytes to install the wheelgate command: the old base install (every
dependency, now the ``local`` extra) against the new base install, side by side in one run.

Each install goes into a fresh venv made without pip (``venv --without-pip``; its creation is
timed on its own), with this environment's pip (``pip --python VENV``) and, when it is here,
uv (``uv pip install --python VENV``), both with their ordinary configuration and caches. Three
targets: the checkout with the ``local`` extra (what the old base install pulled), the
checkout alone (both build wheelgate's wheel first, as the GitHub setup action does), and the
base install from an already built wheel (as from a package index). The index is warm: round 0
installs every combination once and is not counted; rounds 1..N follow, interleaved so that
machine noise hits every combination alike, and the table shows medians. Sizes are the bytes
of the files an install added to site-packages (MB = 10^6 bytes); pip also writes ``.pyc``
files and uv does not unless asked, so that share is shown. "Wheels MB" is what a runner with
a cold cache downloads: the files ``pip download`` fetches for the same requirement.

    .venv/bin/python bench/install_size.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The issue's goal for the base install with a warm index.
GOAL_SECONDS, GOAL_MB = 10.0, 40.0
MB = 1e6
#: What the package's build reads; copied out so that building leaves the checkout as it was.
#: (setup.py lays out the packages; it ships stacks/ as wheelgate.cdk)
SOURCES = ("pyproject.toml", "setup.py", "README.md", "lambdas/wheelgate", "stacks")


@dataclass(frozen=True)
class Target:
    label: str
    spec: str
    #: Whether ``pip download`` of the spec says what a cold runner downloads for it.
    downloads: bool = True


@dataclass(frozen=True)
class Installer:
    name: str
    command: Callable[[Path, str], list[str]]


@dataclass(frozen=True)
class Run:
    venv_seconds: float
    seconds: float
    bytes_added: int
    pyc_bytes: int
    distributions: int
    largest: list[tuple[str, int]]


def run_quietly(command: list[str]) -> None:
    """Run ``command``; its output (pip warns about this machine's extra indexes) is shown
    only when it fails."""
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise SystemExit(f"failed: {' '.join(command)}")


def copy_sources(dest: Path) -> Path:
    dest.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
            shutil.copytree(REPO / name, dest / name, ignore=ignore)
        else:
            shutil.copy2(REPO / name, dest / name)
    return dest


def build_wheel(source: Path, dest: Path) -> tuple[Path, float]:
    """wheelgate's wheel built from ``source`` into ``dest``, and the seconds it took."""
    started = time.perf_counter()
    run_quietly([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(dest), str(source)])
    seconds = time.perf_counter() - started
    (wheel,) = dest.glob("wheelgate-*.whl")
    return wheel, seconds


def pip_install(python: Path, spec: str) -> list[str]:
    return [sys.executable, "-m", "pip", "--python", str(python), "install", spec]


def find_uv() -> str | None:
    """uv beside this Python (requirements-dev.txt installs it), else on PATH."""
    return shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")


def uv_install(uv: str) -> Callable[[Path, str], list[str]]:
    return lambda python, spec: [uv, "pip", "install", "--python", str(python), spec]


def site_packages(venv: Path) -> Path:
    paths = sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})
    return Path(paths["purelib"])


def files(root: Path) -> dict[Path, int]:
    return {p: p.lstat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink()}


def install_once(installer: Installer, target: Target, work: Path) -> Run:
    venv = work / "venv"
    started = time.perf_counter()
    run_quietly([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    venv_seconds = time.perf_counter() - started
    site = site_packages(venv)
    before = files(site)
    dists_before = len(list(site.glob("*.dist-info")))
    started = time.perf_counter()
    run_quietly(installer.command(venv / "bin" / "python", target.spec))
    seconds = time.perf_counter() - started
    added = {p: size for p, size in files(site).items() if p not in before}
    by_top: Counter[str] = Counter()
    for path, size in added.items():
        top = path.relative_to(site).parts[0]
        if not top.endswith((".dist-info", ".pth")):
            by_top[top] += size
    run = Run(
        venv_seconds=venv_seconds,
        seconds=seconds,
        bytes_added=sum(added.values()),
        pyc_bytes=sum(size for p, size in added.items() if p.suffix == ".pyc"),
        distributions=len(list(site.glob("*.dist-info"))) - dists_before,
        largest=by_top.most_common(3),
    )
    shutil.rmtree(venv)
    return run


def download_bytes(target: Target, work: Path) -> int:
    """The bytes of the files ``pip download`` fetches for the target (from the warm cache
    here; a runner without one fetches them from the index)."""
    dest = work / "download"
    run_quietly([sys.executable, "-m", "pip", "download", "--dest", str(dest), target.spec])
    total = sum(files(dest).values())
    shutil.rmtree(dest)
    return total


def version(command: list[str]) -> str:
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.split()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="timed rounds after the warm-up")
    parser.add_argument("--no-uv", action="store_true", help="pip only")
    args = parser.parse_args()

    installers = [Installer("pip", pip_install)]
    uv = None if args.no_uv else find_uv()
    if uv is not None:
        installers.append(Installer("uv", uv_install(uv)))
    runs: dict[tuple[str, str], list[Run]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="wheelgate-install-size-") as tmp:
        work = Path(tmp)
        source = copy_sources(work / "checkout")
        builds = [build_wheel(source, work / "dist") for _ in range(args.runs + 1)]
        wheel = builds[0][0]
        build_seconds = statistics.median(seconds for _, seconds in builds[1:])
        targets = (
            Target("before: checkout `.[local]` (the old base install)", f"{source}[local]"),
            Target("after: checkout `.` (the base install)", str(source)),
            Target("after: built wheel (as from an index)", str(wheel), downloads=False),
        )
        base_installs = targets[1:]
        combos = [(i, t) for i in installers for t in targets]
        for round_ in range(args.runs + 1):
            for installer, target in combos:
                run = install_once(installer, target, work)
                if round_:
                    runs[installer.name, target.label].append(run)
            print(f"round {round_}{' (warm-up)' if not round_ else ''} done", file=sys.stderr)
        downloads = {t.label: download_bytes(t, work) for t in targets if t.downloads}

    tools = [f"pip {version([sys.executable, '-m', 'pip', '--version'])}"]
    if uv is not None:
        tools.append(f"uv {version([uv, '--version'])}")
    print(
        f"Python {sys.version.split()[0]}, {', '.join(tools)}, {os.cpu_count()} CPUs; "
        f"median of {args.runs} runs with a warm index"
    )
    print()
    print(
        "| install | installer | seconds | min-max s | site-packages MB | of which .pyc MB "
        "| distributions | wheels MB |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for installer, target in combos:
        measured = runs[installer.name, target.label]
        seconds = statistics.median(r.seconds for r in measured)
        fastest, slowest = min(r.seconds for r in measured), max(r.seconds for r in measured)
        added = statistics.median(r.bytes_added for r in measured)
        pyc = statistics.median(r.pyc_bytes for r in measured)
        downloaded = downloads.get(target.label)
        wheels_mb = "-" if downloaded is None else f"{downloaded / MB:.1f}"
        print(
            f"| {target.label} | {installer.name} | {seconds:.1f} | {fastest:.1f}-{slowest:.1f} "
            f"| {added / MB:.1f} "
            f"| {pyc / MB:.1f} | {measured[-1].distributions} | {wheels_mb} |"
        )
    venv_seconds = statistics.median(r.venv_seconds for rs in runs.values() for r in rs)
    print()
    print(f"venv creation (not counted above): {venv_seconds:.1f} s")
    print(f"building wheelgate's wheel from the checkout (counted above): {build_seconds:.1f} s")
    for installer, target in ((i, t) for i in installers for t in base_installs):
        measured = runs[installer.name, target.label]
        seconds = statistics.median(r.seconds for r in measured)
        added = statistics.median(r.bytes_added for r in measured) / MB
        met = seconds < GOAL_SECONDS and added < GOAL_MB
        largest = ", ".join(f"{name} {size / MB:.1f}" for name, size in measured[-1].largest)
        print(
            f"{installer.name}, {target.label}: {seconds:.1f} s, {added:.1f} MB, goal "
            f"(under {GOAL_SECONDS:.0f} s and {GOAL_MB:.0f} MB) {'met' if met else 'not met'}; "
            f"largest MB: {largest}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
