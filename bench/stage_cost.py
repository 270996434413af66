"""S3 requests `wheelgate stage` sends for a run of 3 projects with 5 dependencies, into a
nightly directory of 42 and of 2,002 projects, side by side in one run.

Each directory holds the run's 3 projects (an earlier release of each), their 5 dependencies
(two levels deep, one behind a platform marker; every wheel with its PEP 658 metadata file)
and other projects nobody requires, up to 42 or 2,002 projects, each with its pages, as the
promoter leaves them. The local S3 (``wheelgate local --no-promoter``: moto server, real HTTP)
runs in its own process and is filled over HTTP; then, round by round, a new run stages one
wheel of each of its 3 projects through the real ``stage`` with a client that counts every
request it sends. The run's index must list the run's projects and the 5 dependencies, and
nothing else.

    .venv/bin/python bench/stage_cost.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from local_s3 import Object, counting_client, local_s3, page_objects, put_nightly, root_objects

from wheelgate.index.pages import IndexEntry, ProjectPage
from wheelgate.local.names import NIGHTLY_BUCKET, STAGING_BUCKET
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.staging.local_artifacts import inspect_files
from wheelgate.staging.stage import stage
from wheelgate.storage.bucket import Bucket

SIZES = (42, 2_002)
#: The run's projects and what each requires (name -> Requires-Dist).
RUN_PROJECTS = {
    "bench-torch": ["bench-filelock>=3", "bench-sympy"],
    "bench-vision": ["bench-torch", "bench-pillow"],
    "bench-audio": ["bench-torch", 'bench-soundfile; sys_platform == "win32"'],
}
#: Their dependencies in nightly; bench-sympy needs bench-mpmath (two levels deep).
DEPENDENCIES = {
    "bench-filelock": [],
    "bench-sympy": ["bench-mpmath>=1.1"],
    "bench-mpmath": [],
    "bench-pillow": [],
    "bench-soundfile": [],
}
FILES_PER_OTHER_PROJECT = 1
TIME = "2026-01-01T00:00:00.000000Z"


def metadata_text(name: str, version: str, requires: list[str]) -> bytes:
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    return ("\n".join([*lines, *(f"Requires-Dist: {r}" for r in requires)]) + "\n\n").encode()


def fill_directory(index: str, projects: int) -> None:
    """The directory's files (one byte each: stage never reads them), their metadata files and
    pages, written over HTTP."""
    objects: list[Object] = []
    released = {**RUN_PROJECTS, **DEPENDENCIES}
    others = [f"other{i:05d}" for i in range(projects - len(released))]
    for name in [*released, *others]:
        versions = 1 if name in released else FILES_PER_OTHER_PROJECT
        entries = []
        for v in range(versions):
            version = f"1.{v}"
            filename = f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
            metadata = metadata_text(name, version, released.get(name, []))
            objects.append((f"{index}/{filename}", b"x"))
            objects.append((f"{index}/{filename}.metadata", metadata))
            entries.append(
                IndexEntry(
                    filename,
                    f"../{filename}",
                    "a" * 64,
                    1,
                    TIME,
                    metadata_sha256=hashlib.sha256(metadata).hexdigest(),
                )
            )
        objects += page_objects(index, ProjectPage(name, tuple(entries)))
    objects += root_objects(index, sorted([*released, *others]))
    put_nightly(objects)


def one_round(
    ready: dict[str, Any], index: str, run: str, wheels: list[Path]
) -> tuple[Counter[str], float, list[str]]:
    counter: Counter[str] = Counter()
    s3 = counting_client(counter)
    started = time.perf_counter()
    stage(
        staging=Bucket(s3, STAGING_BUCKET),
        nightly=Bucket(s3, NIGHTLY_BUCKET),
        nightly_base_url=ready["nightly_url"],
        run_id=run,
        index=index,
        commit="7" * 40,
        artifacts=inspect_files(wheels),
    )
    elapsed = time.perf_counter() - started
    request = urllib.request.Request(
        f"{ready['staging_url']}runs/{run}/{index}/",
        headers={"Accept": "application/vnd.pypi.simple.v1+json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        listed = [p["name"] for p in json.load(response)["projects"]]
    return counter, elapsed, listed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    indexes = {n: f"bench/stage{n}" for n in SIZES}
    setup = {}
    results: dict[int, list[tuple[Counter[str], float, list[str]]]] = {n: [] for n in SIZES}
    with local_s3() as ready, tempfile.TemporaryDirectory() as tmp:
        for n, index in indexes.items():
            started = time.perf_counter()
            fill_directory(index, n)
            setup[n] = time.perf_counter() - started
        for r in range(args.rounds):
            for n, index in indexes.items():
                wheels = [
                    build_wheel(Path(tmp) / f"{n}-{r}", name, f"2.{r}", requires=requires)
                    for name, requires in RUN_PROJECTS.items()
                ]
                results[n].append(one_round(ready, index, f"bench-stage-{n}-{r}", wheels))
    print(
        f"`stage` of a run of {len(RUN_PROJECTS)} projects with {len(DEPENDENCIES)} "
        f"dependencies (median of {args.rounds} rounds)"
    )
    print(
        "| projects in the directory | requests | seconds | projects on the run's index "
        "| requests by operation |"
    )
    print("| ---: | ---: | ---: | ---: | --- |")
    for n, rounds in results.items():
        total = statistics.median(sum(c.values()) for c, _, _ in rounds)
        seconds = statistics.median(t for _, t, _ in rounds)
        listed = rounds[-1][2]
        by_op = ", ".join(f"{k} {v}" for k, v in sorted(rounds[-1][0].items()))
        print(f"| {n:,} | {total:,.0f} | {seconds:.2f} | {len(listed):,} | {by_op} |")
    counts = [statistics.median(sum(c.values()) for c, _, _ in results[n]) for n in SIZES]
    print(
        f"requests at {SIZES[1]:,} / at {SIZES[0]:,} projects: {counts[1] / counts[0]:.2f} "
        f"(setup: {setup[SIZES[0]]:.1f} s and {setup[SIZES[1]]:.1f} s, not timed)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
