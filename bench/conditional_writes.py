"""Lost conditional updates on the local S3: moto's server as it is, and as local mode runs it.

W writers each add one to a counter object N times with the page writers' read-modify-write
loop (:func:`wheelgate.storage.conditional.read_modify_write`: GET, then PUT with ``If-Match``
on the ETag read, ``If-None-Match: *`` for the first). Two moto servers run side by side, each
in its own process: one as installed, one with local mode's per-key atomic conditional writes
(:mod:`wheelgate.local.atomic_writes`). Every conditional PUT is traced (key, If-Match sent,
status, ETag returned). A lost update is a PUT that reported success but whose increment is not
in the final count; on an S3 whose check and write are one step, no two successful PUTs of one
key ever carry the same condition. A read or write the server fails (a 500: moto closes a
replaced object's buffer under a concurrent GET) counts as a server error, and its update is
tried again. Optional CPU-burning neighbour processes load the machine.

    .venv/bin/python bench/conditional_writes.py [--writers 16] [--updates 200] [--burners 2]
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config

from wheelgate.core.errors import TransientError
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.conditional import Put, Rendered, StateUpdate, read_modify_write

BUCKET = "bench-conditional"
SERVERS = ("moto as installed", "local mode (atomic per key)")


def serve(atomic: bool) -> None:
    """Run a moto server in this process and print its port."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    if atomic:
        from wheelgate.local import atomic_writes

        atomic_writes.install()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    print(server.get_host_and_port()[1], flush=True)
    threading.Event().wait()


@dataclass
class Trace:
    """Every conditional PUT: (key, If-Match, If-None-Match, status, ETag returned)."""

    writes: list[tuple[str, str | None, str | None, int, str | None]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def before(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["traced"] = (params.get("Key"), params.get("IfMatch"), params.get("IfNoneMatch"))

    def after(
        self, http_response: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any
    ) -> None:
        key, if_match, if_none_match = context.get("traced", (None, None, None))
        if if_match is None and if_none_match is None:
            return
        with self.lock:
            self.writes.append(
                (key, if_match, if_none_match, http_response.status_code, parsed.get("ETag"))
            )

    def same_condition_twice(self) -> int:
        """Conditions (key and ETag, or key and ``*``) under which more than one PUT won."""
        won = Counter((k, m, n) for k, m, n, status, _ in self.writes if status == 200)
        return sum(1 for count in won.values() if count > 1)


def client(port: int, trace: Trace) -> Any:
    session = boto3.session.Session(
        aws_access_key_id="bench", aws_secret_access_key="bench", region_name="us-east-1"
    )
    session.events.register("before-parameter-build.s3.PutObject", trace.before)
    session.events.register("after-call.s3.PutObject", trace.after)
    return session.client(
        "s3", endpoint_url=f"http://127.0.0.1:{port}", config=Config(max_pool_connections=64)
    )


def no_wait(_seconds: float) -> None:
    """Writers retry at once: the most contention one key can see."""


def one_round(port: int, key: str, writers: int, updates: int) -> dict[str, Any]:
    trace = Trace()
    s3 = client(port, trace)
    bucket = Bucket(s3, BUCKET)

    def read() -> tuple[int, str | None]:
        found = bucket.get(key)
        return (0, None) if found is None else (json.loads(found[0])["count"], found[1])

    def decide(count: int) -> StateUpdate[None]:
        body = json.dumps({"count": count + 1}).encode()
        return StateUpdate(None, True, lambda: Rendered(Put(key, body, "application/json")))

    errors = Counter[str]()

    def writer(_: int) -> int:
        done = 0
        while done < updates:
            try:
                read_modify_write(bucket, read, decide, max_attempts=100_000, sleep=no_wait)
            except TransientError:
                errors["errors"] += 1  # the update is retried: it reported no success
                continue
            done += 1
        return done

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=writers) as pool:
        reported = sum(pool.map(writer, range(writers)))
    elapsed = time.perf_counter() - started
    final = read()[0]
    return {
        "reported": reported,
        "final": final,
        "lost": reported - final,
        "puts": len(trace.writes),
        "twice": trace.same_condition_twice(),
        "errors": errors["errors"],
        "seconds": elapsed,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--updates", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--burners", type=int, default=0, help="CPU-burning neighbour processes")
    parser.add_argument("--serve", choices=["plain", "atomic"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve == "atomic")
        return 0
    children = [
        subprocess.Popen(
            [sys.executable, __file__, "--serve", mode], stdout=subprocess.PIPE, text=True
        )
        for mode in ("plain", "atomic")
    ]
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.burners)
    ]
    try:
        ports = [int(child.stdout.readline()) for child in children]  # type: ignore[union-attr]
        for port in ports:
            boto3.client(
                "s3",
                endpoint_url=f"http://127.0.0.1:{port}",
                aws_access_key_id="bench",
                aws_secret_access_key="bench",
                region_name="us-east-1",
            ).create_bucket(Bucket=BUCKET)
        totals: dict[str, Counter[str]] = {name: Counter() for name in SERVERS}
        seconds: dict[str, float] = dict.fromkeys(SERVERS, 0.0)
        for r in range(args.rounds):
            # Alternate which server goes first, so machine noise hits both alike.
            order = list(zip(SERVERS, ports, strict=True))
            for name, port in order if r % 2 == 0 else order[::-1]:
                result = one_round(port, f"counter-{r}.json", args.writers, args.updates)
                seconds[name] += result.pop("seconds")
                totals[name].update(result)
    finally:
        processes: list[subprocess.Popen[Any]] = [*children, *burners]
        for process in processes:
            process.terminate()
            process.wait(timeout=10)
    print(
        f"{args.writers} writers x {args.updates} conditional updates of one key, "
        f"{args.rounds} round(s), {args.burners} CPU-burning neighbour(s)\n"
    )
    header = (
        "server",
        "updates reported",
        "in final count",
        "lost",
        "PUTs",
        "won twice",
        "server errors",
        "s",
    )
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for name in SERVERS:
        t = totals[name]
        row = (name, t["reported"], t["final"], t["lost"], t["puts"], t["twice"], t["errors"])
        print("| " + " | ".join(map(str, row)) + f" | {seconds[name]:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
