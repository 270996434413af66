"""Streaming sync: ``wheelgate deps sync`` of one large file keeps its memory flat.

Generates a file locally (default 1 GiB of random bytes), serves it from a local HTTPS server
standing in for a third-party host, starts the local S3 in its own process
(``bench/local_s3.py``: its RSS is not ours), and runs ``wheelgate deps sync`` as a subprocess
whose peak RSS is read from ``wait4``'s rusage. For comparison it also measures ``deps plan``
on the same file (same imports and clients, no transfer): the difference is what streaming
costs. Prints a table; docs/benchmarks.md ("Streaming sync") records a run.

    .venv/bin/python bench/deps_stream.py [--mb 1024]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from local_s3 import local_s3

from tests.integration.thirdparty import ThirdPartyServer

BUCKET = "bench-cache"


def make_file(path: Path, size: int) -> str:
    digest = hashlib.sha256()
    chunk = 8 * 1024 * 1024
    with path.open("wb") as out:
        left = size
        while left:
            data = os.urandom(min(chunk, left))
            digest.update(data)
            out.write(data)
            left -= len(data)
    return digest.hexdigest()


def run_measured(argv: list[str], env: dict[str, str]) -> tuple[int, str, float, float]:
    """Exit code, stdout, wall seconds and peak RSS (MiB) of a child process."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - started
        out.seek(0)
        text = out.read().decode()
    # Linux reports ru_maxrss in KiB.
    return process.returncode, text, wall, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=1024, help="file size in MiB")
    args = parser.parse_args()
    size = args.mb * 1024 * 1024
    with local_s3() as ready:
        env = {**os.environ, **ready["env"]}
        with tempfile.TemporaryDirectory() as tmp:
            directory = Path(tmp)
            source = directory / "big.bin"
            started = time.monotonic()
            sha256 = make_file(source, size)
            print(f"generated {args.mb} MiB in {time.monotonic() - started:.1f} s", file=sys.stderr)
            server = ThirdPartyServer(directory).start()
            server.files["big.bin"] = source
            import boto3

            s3 = boto3.client(
                "s3",
                endpoint_url=env["AWS_ENDPOINT_URL"],
                region_name=env["AWS_DEFAULT_REGION"],
                aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
            )
            s3.create_bucket(Bucket=BUCKET)
            deps = directory / "deps.yml"
            deps.write_text(
                json.dumps(
                    {
                        "schema": "wheelgate/deps/v1",
                        "validation": {
                            "hosts": ["127.0.0.1"],
                            "buckets": {BUCKET: {"prefixes": ["bench/"]}},
                        },
                        "files": [
                            {
                                "url": server.url("big.bin"),
                                "key": "bench/big.bin",
                                "sha256": sha256,
                                "size": size,
                                "bucket": BUCKET,
                            }
                        ],
                    }
                )
            )
            common = ["--json", "--ca-bundle", str(server.cert), "--workdir", tmp]
            wheelgate = [sys.executable, "-m", "wheelgate", "deps"]
            results: list[dict[str, Any]] = []
            for label, action in (
                ("plan (baseline, no transfer)", "plan"),
                ("sync (download + upload)", "sync"),
                ("sync again (skipped)", "sync"),
            ):
                argv = [*wheelgate, action, str(deps)]
                argv += common if action == "sync" else ["--json"]
                code, out, wall, rss = run_measured(argv, env)
                row = json.loads(out)["rows"][0]
                results.append(
                    {
                        "run": label,
                        "code": code,
                        "action": row["action"],
                        "wall": wall,
                        "rss": rss,
                        "moved": size if row["action"] == "uploaded" else 0,
                    }
                )
            head = s3.head_object(Bucket=BUCKET, Key="bench/big.bin")
            assert head["ContentLength"] == size
            assert head["Metadata"]["wheelgate-sha256"] == sha256
            server.stop()
    print(f"\nfile: {args.mb} MiB, one PutObject with ChecksumSHA256, HTTPS download\n")
    print("| run | exit | action | wall s | throughput MB/s | peak RSS MiB |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in results:
        throughput = f"{r['moved'] / r['wall'] / 1e6:,.0f}" if r["moved"] else "-"
        print(
            f"| {r['run']} | {r['code']} | {r['action']} | {r['wall']:.1f} | {throughput} "
            f"| {r['rss']:.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
