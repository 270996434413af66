"""Full build of a 100,000-file index: WheelGate's renderer against dumb-pypi's full build.

Both get the same file list (names, sha256, requires-python, upload time, core-metadata hash)
and write their pages to a fresh directory; the table reports wall time for each, best of
``--repeat`` runs, measured side by side in one run. dumb-pypi runs from its own virtualenv
(``build/bench-dumb``, created on first use from the package index).

    .venv/bin/python bench/index_render.py [--files 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from wheelgate.index.pages import IndexEntry, render_index_directory

ROOT = Path(__file__).resolve().parents[1]
DUMB_VENV = ROOT / "build" / "bench-dumb"
TAGS = [
    "cp310-cp310-manylinux_2_28_x86_64",
    "cp311-cp311-manylinux_2_28_x86_64",
    "cp312-cp312-manylinux_2_28_x86_64",
    "cp313-cp313-manylinux_2_28_x86_64",
    "py3-none-any",
]


def file_list(count: int, seed: int = 7) -> list[dict[str, str]]:
    """``count`` plausible nightly wheels over count/50 projects, deterministic."""
    rng = random.Random(seed)
    files = []
    projects = max(1, count // 50)
    for i in range(count):
        project = f"pkg{i % projects:05d}"
        version = f"2.{(i // projects) // len(TAGS)}.0.dev2026{i % 97:04d}"
        tag = TAGS[(i // projects) % len(TAGS)]
        files.append(
            {
                "filename": f"{project}-{version}-{tag}.whl",
                "hash": f"sha256={rng.getrandbits(256):064x}",
                "requires_python": ">=3.10",
                "upload_timestamp": 1796000000 + i,
                "core_metadata": f"sha256={rng.getrandbits(256):064x}",
            }
        )
    return files


def ensure_dumb_pypi() -> Path:
    binary = DUMB_VENV / "bin" / "dumb-pypi"
    if not binary.exists():
        subprocess.run([sys.executable, "-m", "venv", str(DUMB_VENV)], check=True)
        subprocess.run(
            [str(DUMB_VENV / "bin" / "pip"), "install", "--quiet", "dumb-pypi"], check=True
        )
    return binary


def run_wheelgate(files: list[dict[str, str]], out: Path) -> float:
    started = time.perf_counter()
    entries = [
        IndexEntry(
            filename=f["filename"],
            url=f"../{f['filename']}",
            sha256=f["hash"].removeprefix("sha256="),
            size=1000,
            upload_time=time.strftime(
                "%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(int(f["upload_timestamp"]))
            ),
            requires_python=f["requires_python"],
            metadata_sha256=f["core_metadata"].removeprefix("sha256="),
        )
        for f in files
    ]
    pages = render_index_directory(entries)
    for relative, text in pages.items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return time.perf_counter() - started


def run_dumb_pypi(binary: Path, package_list: Path, out: Path, *extra: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [
            str(binary),
            "--package-list-json",
            str(package_list),
            "--output-dir",
            str(out),
            "--packages-url",
            "../../",
            "--no-generate-timestamp",
            *extra,
        ],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    files = file_list(args.files)
    binary = ensure_dumb_pypi()
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="wheelgate-bench-") as tmp:
        package_list = Path(tmp) / "packages.jsonl"
        package_list.write_text("".join(json.dumps(f) + "\n" for f in files))
        cases = {
            "wheelgate (HTML + JSON pages)": lambda out: run_wheelgate(files, out),
            "dumb-pypi full build": lambda out: run_dumb_pypi(binary, package_list, out),
            "dumb-pypi, no per-release JSON": lambda out: run_dumb_pypi(
                binary, package_list, out, "--no-per-release-json"
            ),
        }
        for attempt in range(args.repeat):
            for name, case in cases.items():  # interleaved: the machine's noise hits all alike
                out = Path(tmp) / f"out-{attempt}-{len(results.get(name, []))}-{hash(name)}"
                results.setdefault(name, []).append(case(out))
                shutil.rmtree(out, ignore_errors=True)
    ours = min(results["wheelgate (HTML + JSON pages)"])
    print(
        f"Full build of a {args.files:,}-file index ({args.files // 50:,} projects), "
        f"best of {args.repeat}"
    )
    print(f"| {'builder':<32} | {'seconds':>8} | {'vs wheelgate':>12} |")
    print(f"|{'-' * 34}|{'-' * 10}|{'-' * 14}|")
    for name, times in results.items():
        best = min(times)
        print(f"| {name:<32} | {best:8.2f} | {best / ours:11.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
