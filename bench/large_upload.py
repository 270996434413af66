"""A multi-gigabyte file through the multipart path, side by side in one run on the local S3:
`wheelgate stage` against boto3's `upload_file`, and the promoter's multipart copy
(`Bucket.copy_in`) against boto3's managed copy, each in a process of its own whose wall time
and peak RSS (``wait4``'s ``ru_maxrss``) are measured.

The local S3 is ``wheelgate local --no-promoter`` in its own process (moto server, which local
mode lets hold multi-GB objects on disk: ``wheelgate.local.large_objects``). The file is
random bytes named as an sdist, so `stage` reads no wheel metadata from it; it is written to
``--dir`` and deleted at the end, as is every object once measured. Rounds alternate the
contenders so machine noise hits them alike; with ``--compare-with DIR`` (the ``lambdas/`` of
another checkout, e.g. the code before a change) `stage` and the promoter's copy also run from
that code, in the same rounds.

    .venv/bin/python bench/large_upload.py [--gib 6] [--rounds 1] [--compare-with DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import boto3
from local_s3 import local_s3

from wheelgate.local.names import STAGING_BUCKET
from wheelgate.storage.limits import SINGLE_REQUEST_LIMIT

GIB = 1024**3
INDEX = "bench/large"
#: A bucket of the bench's own for the copies (nightly's Object Lock would keep them).
COPY_BUCKET = "wheelgate-bench-copies"
GOAL_TIME_RATIO = 1.1
GOAL_RSS_MB = 300

UPLOAD_FILE = """
import sys, boto3
boto3.client("s3").upload_file(sys.argv[1], sys.argv[2], sys.argv[3])
"""
MANAGED_COPY = """
import sys, boto3
boto3.client("s3").copy({"Bucket": sys.argv[1], "Key": sys.argv[2]}, sys.argv[3], sys.argv[4])
"""
STAGE = """
import os, sys, boto3
from pathlib import Path
from wheelgate.local.stack import NIGHTLY_BUCKET, STAGING_BUCKET, install_moto_compatibility
from wheelgate.staging.local_artifacts import inspect_files
from wheelgate.staging.stage import stage
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.limits import TransferLimits
install_moto_compatibility()
s3 = boto3.client("s3")
limits = TransferLimits(single_request_limit=int(sys.argv[4]))
stage(
    staging=Bucket(s3, STAGING_BUCKET, limits=limits),
    nightly=Bucket(s3, NIGHTLY_BUCKET, limits=limits),
    nightly_base_url=os.environ["WHEELGATE_NIGHTLY_BASE_URL"],
    run_id=sys.argv[1],
    index=sys.argv[2],
    commit="7" * 40,
    artifacts=inspect_files([Path(sys.argv[3])]),
)
"""
PROMOTER_COPY = """
import sys, boto3
from wheelgate.local.stack import install_moto_compatibility
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.limits import TransferLimits
install_moto_compatibility()
s3 = boto3.client("s3")
limits = TransferLimits(single_request_limit=int(sys.argv[5]))
source, target = Bucket(s3, sys.argv[1]), Bucket(s3, sys.argv[3], limits=limits)
head = source.head(sys.argv[2])
target.copy_in(source, head.key, head.etag, head.size, sys.argv[4])
"""


def write_file(path: Path, size: int) -> None:
    chunk = 64 * 1024 * 1024
    with path.open("wb") as handle:
        for start in range(0, size, chunk):
            handle.write(os.urandom(min(chunk, size - start)))


def measured(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Run ``argv``; its wall seconds and peak RSS in MB (10^6 bytes). The bytes the last one
    wrote (the file, the server's parts and objects) are flushed to disk first, so no
    contender pays for another's write-back."""
    os.sync()
    started = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    stderr = process.stderr.read().decode() if process.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[:4]} failed: {stderr[-2000:]}")
    return elapsed, usage.ru_maxrss * 1024 / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gib", type=float, default=6.0, help="file size in GiB (default 6)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--compare-with", type=Path, help="lambdas/ of another checkout")
    parser.add_argument(
        "--single-request-limit",
        type=int,
        default=SINGLE_REQUEST_LIMIT,
        help="bytes above which stage and the promoter go multipart (default: S3's, 5 GiB)",
    )
    args = parser.parse_args()
    size = int(args.gib * GIB)
    # The file, the staged object, and the parts moto holds until an upload completes.
    needed = 3 * size
    free = shutil.disk_usage(args.dir).free
    if free < needed:
        raise SystemExit(f"{args.dir} has {free / GIB:.1f} GiB free; this needs {needed / GIB:.1f}")
    contenders: dict[str, list[tuple[float, float]]] = {}
    with local_s3(), tempfile.TemporaryDirectory(dir=args.dir) as work:
        env = dict(os.environ)
        s3: Any = boto3.client("s3")
        s3.create_bucket(Bucket=COPY_BUCKET)
        path = Path(work) / "bench_large-1.0.tar.gz"
        write_file(path, size)
        python = [sys.executable, "-c"]
        trees = {"": env}
        if args.compare_with:
            before = {**env, "PYTHONPATH": str(args.compare_with.resolve())}
            trees[f" ({args.compare_with})"] = before
        for r in range(args.rounds):
            key = f"bench/upload-file-{r}"
            result = measured([*python, UPLOAD_FILE, str(path), STAGING_BUCKET, key], env)
            contenders.setdefault("boto3 upload_file", []).append(result)
            for label, tree in trees.items():
                run = f"bench-large-{r}-{len(label)}"
                stage = [*python, STAGE, run, INDEX, str(path), str(args.single_request_limit)]
                contenders.setdefault(f"wheelgate stage{label}", []).append(measured(stage, tree))
                staged = f"runs/{run}/{INDEX}/{path.name}"
                copy = [STAGING_BUCKET, staged, COPY_BUCKET, f"copy-{r}-{len(label)}"]
                copy.append(str(args.single_request_limit))
                contenders.setdefault(f"promoter copy_in{label}", []).append(
                    measured([*python, PROMOTER_COPY, *copy], tree)
                )
                s3.delete_object(Bucket=COPY_BUCKET, Key=copy[3])
                s3.delete_object(Bucket=STAGING_BUCKET, Key=staged)
                s3.delete_object(Bucket=STAGING_BUCKET, Key=staged + ".sha256")
            copy = [STAGING_BUCKET, key, COPY_BUCKET, f"managed-{r}"]
            contenders.setdefault("boto3 managed copy", []).append(
                measured([*python, MANAGED_COPY, *copy], env)
            )
            s3.delete_object(Bucket=COPY_BUCKET, Key=copy[3])
            s3.delete_object(Bucket=STAGING_BUCKET, Key=key)
    limit = "S3's" if args.single_request_limit == SINGLE_REQUEST_LIMIT else "lowered to"
    print(
        f"{args.gib:g} GiB ({size:,} bytes) through the multipart path (single-request limit "
        f"{limit} {args.single_request_limit:,} bytes), median of {args.rounds}"
    )
    print("| contender | seconds | MB/s | peak RSS MB | time / boto3's |")
    print("| --- | ---: | ---: | ---: | ---: |")
    medians = {
        name: (statistics.median(t for t, _ in runs), max(m for _, m in runs))
        for name, runs in contenders.items()
    }
    for name, (seconds, rss) in medians.items():
        base = "boto3 upload_file" if "copy" not in name else "boto3 managed copy"
        ratio = seconds / medians[base][0]
        print(f"| {name} | {seconds:.1f} | {size / 1e6 / seconds:.0f} | {rss:.0f} | {ratio:.2f} |")
    stage_s, stage_rss = medians["wheelgate stage"]
    ratio = stage_s / medians["boto3 upload_file"][0]
    met = ratio <= GOAL_TIME_RATIO and stage_rss <= GOAL_RSS_MB
    print(
        f"goal (stage <= {GOAL_TIME_RATIO} x upload_file's time, peak RSS <= {GOAL_RSS_MB} MB): "
        f"{'met' if met else 'NOT met'} ({ratio:.2f} x, {stage_rss:.0f} MB)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
