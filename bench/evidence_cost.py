"""What holding an environment's evidence to bytes costs ``wheelgate report``, side by side
with the RECORD-only look it refines, for staged wheels of several sizes in one run.

For each size, a wheel of that many bytes (incompressible payload, as a GPU library is) is
staged into the local S3 (``wheelgate local --no-promoter``: moto server, real HTTP). Then,
round by round, the two reads ``report``'s environment route makes of a matched wheel are
timed with a client that counts its requests:

- *RECORD look*: the ranged reads of the wheel's zip directory, RECORD and WHEEL (what
  matching an environment with a RECORD needs, and all it read before);
- *verified*: the one GET that streams the wheel, checks its SHA-256 and holds its RECORD to
  every member's bytes (``staging/wheelbytes.py``), which is what now makes the evidence.

    .venv/bin/python bench/evidence_cost.py [--sizes-mib 16 128 512] [--rounds 3]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from local_s3 import counting_client, local_s3

from wheelgate.core.layout import STAGING
from wheelgate.core.wheelmeta import WheelArchive
from wheelgate.local.names import STAGING_BUCKET
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.staging.wheelbytes import read_verified_wheel
from wheelgate.storage.bucket import Bucket

INDEX = "v2/bench"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes-mib", type=int, nargs="+", default=[16, 128, 512])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    rows = []
    with local_s3(), tempfile.TemporaryDirectory() as work:
        counter: Counter[str] = Counter()
        staging = Bucket(counting_client(counter), STAGING_BUCKET)
        for size in args.sizes_mib:
            wheel = build_wheel(
                Path(work) / str(size), "bench-gpu", "1.0", payload_bytes=size << 20
            )
            digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
            key = STAGING.artifact(f"bench-{size}", INDEX, wheel.name)
            staging.client.upload_file(str(wheel), STAGING_BUCKET, key)
            looks, verifies = [], []
            for _ in range(args.rounds):
                counter.clear()
                started = time.perf_counter()
                head = staging.head(key)
                assert head is not None
                archive = WheelArchive(
                    staging.range_reader(key, head.size, head.etag),
                    wheel.name,
                )
                archive.read_dist_info("RECORD", 64 << 20)
                archive.read_dist_info("WHEEL", 64 << 10)
                looks.append((time.perf_counter() - started, sum(counter.values())))
                counter.clear()
                started = time.perf_counter()
                verified = read_verified_wheel(staging, key, wheel.name, digest)
                verifies.append((time.perf_counter() - started, sum(counter.values())))
                assert verified.content.rows
            rows.append((size, looks, verifies))
    print(
        f"{'wheel':>9} | {'RECORD look s':>13} | {'requests':>8} | {'verified s':>10} | "
        f"{'requests':>8} | {'MiB/s':>6}"
    )
    print(f"{'-' * 9}-+-{'-' * 13}-+-{'-' * 8}-+-{'-' * 10}-+-{'-' * 8}-+-{'-' * 6}")
    for size, looks, verifies in rows:
        look = statistics.median(t for t, _ in looks)
        verify = statistics.median(t for t, _ in verifies)
        print(
            f"{size:>5} MiB | {look:>13.3f} | {looks[0][1]:>8} | {verify:>10.2f} | "
            f"{verifies[0][1]:>8} | {size / verify:>6.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
