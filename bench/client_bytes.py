"""Bytes a client downloads to resolve ``pkg==X`` with ``pip install --dry-run`` when the wheel
is large: the index pages and the PEP 658 ``.metadata`` files, never the wheel.

Runs the whole local stack in-process (``wheelgate local``'s code), promotes a run holding a
large wheel and its small dependency, then lets the test environment's pip (hermetic: no
global configuration, no cache) resolve against the nightly index while the index server
counts the body bytes it sends per key.

    .venv/bin/python bench/client_bytes.py [--wheel-mb 300]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import boto3

from wheelgate.local.names import NIGHTLY_BUCKET, STAGING_BUCKET
from wheelgate.local.sample_wheels import build_wheel, manifest_for
from wheelgate.local.stack import LocalWheelGate
from wheelgate.staging.hermetic import hermetic_env
from wheelgate.staging.local_artifacts import inspect_files
from wheelgate.staging.stage import stage
from wheelgate.storage.bucket import Bucket

INDEX = "v2/bytes"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel-mb", type=int, default=300)
    args = parser.parse_args()
    stack = LocalWheelGate()
    os.environ.update(stack.start())
    stack.run_promoter()
    s3 = boto3.client("s3")
    staging, nightly = Bucket(s3, STAGING_BUCKET), Bucket(s3, NIGHTLY_BUCKET)
    with tempfile.TemporaryDirectory() as tmp:
        big = build_wheel(
            Path(tmp),
            "bigtorch",
            "2.7.0",
            requires=["smalldep>=1"],
            payload_bytes=args.wheel_mb * 1024 * 1024,
        )
        dep = build_wheel(Path(tmp), "smalldep", "1.0")
        wheels = [big, dep]
        commit = "8" * 40
        stage(
            staging=staging,
            nightly=nightly,
            nightly_base_url=stack.nightly_url,
            run_id="bytes-1",
            index=INDEX,
            commit=commit,
            artifacts=inspect_files(wheels),
        )
        manifest = manifest_for("bytes-1", commit, INDEX, wheels)
        staging.put(
            "manifests/bytes-1.json", json.dumps(manifest).encode(), content_type="application/json"
        )
        deadline = time.monotonic() + 120
        while staging.get("records/bytes-1.json") is None:
            if time.monotonic() > deadline:
                raise SystemExit("promotion did not finish")
            time.sleep(0.5)
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        stack.nightly_server.bytes_sent.clear()
        report = Path(tmp) / "report.json"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "--python",
                str(venv / "bin" / "python"),
                "install",
                "--dry-run",
                "--report",
                str(report),
                "--index-url",
                f"{stack.nightly_url}{INDEX}/",
                "bigtorch==2.7.0",
            ],
            env=hermetic_env(),
            check=True,
            capture_output=True,
        )
        resolved = sorted(i["metadata"]["name"] for i in json.loads(report.read_text())["install"])
        sent = dict(stack.nightly_server.bytes_sent)
        wheel_size = big.stat().st_size
    stack.stop()
    total = sum(sent.values())
    pip_version = subprocess.run(
        [sys.executable, "-m", "pip", "--version"], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    print(f"pip {pip_version} install --dry-run bigtorch==2.7.0 (resolved: {', '.join(resolved)})")
    print(f"| {'object served':<58} | {'bytes':>11} |")
    print(f"|{'-' * 60}|{'-' * 13}|")
    for key, size in sorted(sent.items()):
        print(f"| {key:<58} | {size:>11,} |")
    print(f"| {'total downloaded':<58} | {total:>11,} |")
    print(f"| {'wheel size':<58} | {wheel_size:>11,} |")
    print(f"| {'downloaded / wheel size':<58} | {total / wheel_size:>10.4%} |")
    return 0 if total <= wheel_size // 100 else 1


if __name__ == "__main__":
    sys.exit(main())
