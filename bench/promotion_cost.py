"""S3 requests and time to promote N files of P projects into a directory that already holds
M files of other projects, for M = 1,000 and M = 100,000, side by side in one run; and the
requests `wheelgate stage` made to stage them (it writes the run's index: a page pair for every
project of the directory, so its cost follows the directory's project count).

The local S3 (``wheelgate local``: moto server, real HTTP) runs in its own process, so the
objects it holds do not slow the measured process; it is filled over HTTP, then each promotion
runs the real promoter with clients that count every request it sends (S3, and KMS for the
verdicts it signs). Rounds alternate between the two directories so machine noise hits both
alike.

    .venv/bin/python bench/promotion_cost.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from local_s3 import Object, counting_client, local_s3, page_objects, put_nightly, root_objects

from wheelgate.core.env_names import ENV_TRUSTED_REPORTER_ID
from wheelgate.core.settings import PromoterSettings
from wheelgate.index.pages import IndexEntry, ProjectPage
from wheelgate.local.names import (
    LOCAL_REPORTER_ID,
    LOCAL_REPORTER_PRINCIPAL,
    NIGHTLY_BUCKET,
    STAGING_BUCKET,
)
from wheelgate.local.sample_wheels import build_wheel, manifest_for
from wheelgate.promotion.compose import build_service
from wheelgate.promotion.event import ManifestEvent
from wheelgate.staging.local_artifacts import inspect_files
from wheelgate.staging.stage import stage
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.signing import KmsSigner

N_FILES = 20
PROJECTS = ("torch", "torchvision")
FILES_PER_OTHER_PROJECT = 50


def fill_directory(index: str, m_files: int) -> None:
    """M released files of M/50 other projects, with their pages, written over HTTP."""
    projects = [f"other{i:05d}" for i in range(m_files // FILES_PER_OTHER_PROJECT)]
    objects: list[Object] = []
    for p in projects:
        entries = []
        for v in range(FILES_PER_OTHER_PROJECT):
            name = f"{p}-1.{v}-py3-none-any.whl"
            objects.append((f"{index}/{name}", b"x"))
            entries.append(
                IndexEntry(name, f"../{name}", "a" * 64, 1, "2026-01-01T00:00:00.000000Z")
            )
        objects += page_objects(index, ProjectPage(p, tuple(entries)))
    objects += root_objects(index, [*projects, *PROJECTS])
    put_nightly(objects)


def one_round(
    nightly_url: str, index: str, run: str, wheels: list[Path]
) -> tuple[Counter[str], float, int]:
    staged: Counter[str] = Counter()
    s3 = counting_client(staged)
    staging, nightly = Bucket(s3, STAGING_BUCKET), Bucket(s3, NIGHTLY_BUCKET)
    commit = "7" * 40
    stage(
        staging=staging,
        nightly=nightly,
        nightly_base_url=nightly_url,
        run_id=run,
        index=index,
        commit=commit,
        artifacts=inspect_files(wheels),
    )

    manifest = manifest_for(run, commit, index, wheels)
    staging.put(
        f"manifests/{run}.json", json.dumps(manifest).encode(), content_type="application/json"
    )
    counter: Counter[str] = Counter()
    client = counting_client(counter)
    settings = PromoterSettings.from_env(os.environ)
    promoter = build_service(
        settings=settings,
        staging=Bucket(client, STAGING_BUCKET),
        nightly=Bucket(client, NIGHTLY_BUCKET),
        # Each file's verdict is signed by the local stack's KMS key (counted with S3's).
        signer=KmsSigner(counting_client(counter, "kms"), settings.verdict_key_arn or ""),
    )
    started = time.perf_counter()
    decision = promoter.handle(ManifestEvent(f"manifests/{run}.json", LOCAL_REPORTER_PRINCIPAL))
    record = None if decision is None else decision.record
    elapsed = time.perf_counter() - started
    if record is None or record.state.value != "promoted":
        raise SystemExit(f"promotion failed: {record}")
    return counter, elapsed, sum(staged.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    sizes = {1_000: "bench/m1k", 100_000: "bench/m100k"}
    setup = {}
    results: dict[int, list[tuple[Counter[str], float, int]]] = {m: [] for m in sizes}
    with local_s3() as ready, tempfile.TemporaryDirectory() as tmp:
        # This process runs the promoter itself, which trusts the local reporter's manifests.
        os.environ[ENV_TRUSTED_REPORTER_ID] = LOCAL_REPORTER_ID
        for m, index in sizes.items():
            started = time.perf_counter()
            fill_directory(index, m)
            setup[m] = time.perf_counter() - started
        for r in range(args.rounds):
            for m, index in sizes.items():
                wheels = [
                    build_wheel(Path(tmp) / f"{m}-{r}", PROJECTS[i % 2], f"2.{r}.{i}")
                    for i in range(N_FILES)
                ]
                results[m].append(one_round(ready["nightly_url"], index, f"bench-{m}-{r}", wheels))
    p = len(PROJECTS)
    print(
        f"Promote N={N_FILES} files of P={p} projects into a directory holding M other files "
        f"(median of {args.rounds} rounds; bound 11N + 7P + 12 = {11 * N_FILES + 7 * p + 12})"
    )
    header = f"| {'M other files':>13} | {'requests':>8} | {'seconds':>8} |"
    print(f"{header} {'requests by operation':<60} | {'stage requests':>14} |")
    print(f"|{'-' * 15}|{'-' * 10}|{'-' * 10}|{'-' * 62}|{'-' * 16}|")
    medians = {}
    for m, rounds in results.items():
        total = statistics.median(sum(c.values()) for c, _, _ in rounds)
        seconds = statistics.median(t for _, t, _ in rounds)
        staging_requests = statistics.median(s for _, _, s in rounds)
        medians[m] = seconds
        ops = rounds[-1][0]
        by_op = ", ".join(f"{k} {v}" for k, v in sorted(ops.items()))
        print(
            f"| {m:>13,} | {total:>8.0f} | {seconds:8.3f} | {by_op:<60} "
            f"| {staging_requests:>14.0f} |"
        )
    print(
        f"time ratio M=100,000 / M=1,000: {medians[100_000] / medians[1_000]:.2f} "
        f"(setup: {setup[1_000]:.1f} s and {setup[100_000]:.1f} s, not timed)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
