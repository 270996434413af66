"""S3 requests, time and bytes to import 10,000 existing wheels into one nightly directory.

A release bucket laid out like the seed's (wheels directly under ``v2/gfx94X-dcgpu/``, small
synthetic but real wheels with a stored payload, and a PEP 503 page per project written by
another tool, some files yanked there) is imported by the real promoter, through the same
request ``wheelgate import`` writes, three ways in one run: a dry run (the CLI's preview), the
import, and the same import asked again (everything gathered and released: what a resumed
import pays for the part already done). The local S3 (``wheelgate local --no-promoter``: moto
server, real HTTP) runs in its own process; every request the promoter sends is counted, and
so are the bytes each GetObject of a wheel returned, against the bytes copied server-side.

    .venv/bin/python bench/import_cost.py [--files 10000] [--projects 20]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from local_s3 import local_s3

from wheelgate.core.env_names import ENV_BREAK_GLASS_ID, ENV_IMPORT_SOURCES
from wheelgate.core.import_rules import new_import_request
from wheelgate.core.layout import STAGING
from wheelgate.core.settings import PromoterSettings
from wheelgate.index.store import IndexStore
from wheelgate.local.names import NIGHTLY_BUCKET, STAGING_BUCKET
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.promotion.compose import build_service
from wheelgate.promotion.event import ManifestEvent
from wheelgate.promotion.importing.preview import preview
from wheelgate.promotion.service import PromotionService
from wheelgate.storage.bucket import Bucket

SOURCE_BUCKET = "bench-old-release"
PREFIX = "v2/gfx94X-dcgpu/"
INDEX = "v2/gfx94X-dcgpu"
BREAK_GLASS_ID = "AROABENCHBREAKGLASS01"
#: Stored (uncompressed) payload of each wheel: large beside its METADATA, so that the bytes
#: ranged reads return show against the bytes a copy moves.
PAYLOAD = 32 * 1024
#: One file in this many is yanked on the source's own pages.
YANKED_EVERY = 50
#: A second, small source of larger wheels: what a GetObject returns of a wheel is bounded by
#: its zip directory's tail (64 KiB) and its METADATA and WHEEL, whatever the wheel's size.
LARGE_PREFIX, LARGE_INDEX, LARGE_FILES, LARGE_PAYLOAD = "v2/large/", "v2/large", 20, 8 * 1024**2


@dataclass
class Counted:
    """Requests by operation, and the wheel bytes GetObject returned (whole or ranged)."""

    requests: Counter[str] = field(default_factory=Counter)
    wheel_bytes_read: int = 0
    whole_wheel_reads: int = 0

    def client(self) -> Any:
        client = boto3.client("s3", config=Config(max_pool_connections=32))

        def count(model: Any, **_: Any) -> None:
            self.requests[model.name] += 1

        def read(http_response: Any, parsed: dict[str, Any], model: Any, **_: Any) -> None:
            if model.name != "GetObject":
                return
            key = str(getattr(http_response, "url", ""))
            if ".whl" in key and ".whl.metadata" not in key:
                self.wheel_bytes_read += int(parsed.get("ContentLength", 0))
                if "ContentRange" not in parsed:
                    self.whole_wheel_reads += 1

        client.meta.events.register("before-call.s3", count)
        client.meta.events.register("after-call.s3", read)
        return client


def build_source(
    tmp: Path, files: int, projects: int, prefix: str = PREFIX, payload: int = PAYLOAD
) -> int:
    """Write ``files`` wheels of ``projects`` projects with '+' in their versions under
    ``prefix`` of the source bucket, and the other tool's PEP 503 page per project. Returns the
    wheels' total size."""
    s3 = boto3.client("s3", config=Config(max_pool_connections=32))
    s3.create_bucket(Bucket=SOURCE_BUCKET)
    per_project = files // projects

    def one(n: int) -> tuple[str, str, int]:
        project, version = f"oldpkg{n % projects:02d}", f"2.{n // projects}.0+rocm6.{n % 7}"
        path = build_wheel(tmp / str(n), project, version, payload_bytes=payload)
        body = path.read_bytes()
        path.unlink()
        # Uploaded as an old script did: no checksum (S3 has none of the file's SHA-256).
        s3.put_object(Bucket=SOURCE_BUCKET, Key=prefix + path.name, Body=body)
        return project, path.name, len(body)

    with ThreadPoolExecutor(max_workers=16) as pool:
        written = list(pool.map(one, range(per_project * projects)))
    anchors: dict[str, list[str]] = {}
    for n, (project, name, _) in enumerate(written):
        yanked = ' data-yanked="bad build"' if n % YANKED_EVERY == 0 else ""
        href = "../" + name.replace("+", "%2B")
        anchors.setdefault(project, []).append(f'<a href="{href}"{yanked}>{name}</a><br>')
    for project, links in anchors.items():
        page = "<html><body>\n" + "\n".join(links) + "\n</body></html>\n"
        s3.put_object(Bucket=SOURCE_BUCKET, Key=f"{prefix}{project}/index.html", Body=page)
    return sum(size for _, _, size in written)


def promoter(counted: Counted) -> PromotionService:
    client = counted.client()
    return build_service(
        settings=PromoterSettings.from_env(os.environ),
        staging=Bucket(client, STAGING_BUCKET),
        nightly=Bucket(client, NIGHTLY_BUCKET),
    )


def request_import(prefix: str, index: str) -> str:
    """Write the request ``wheelgate import`` writes for ``prefix`` into ``index``; its key."""
    request = new_import_request(
        f"s3://{SOURCE_BUCKET}/{prefix}", index, None, now=datetime.now(UTC)
    )
    key = STAGING.manifest(request.run_id)
    boto3.client("s3").put_object(Bucket=STAGING_BUCKET, Key=key, Body=request.to_json().encode())
    return key


def timed(run: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = run()
    return result, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--projects", type=int, default=20)
    parser.add_argument("--no-extras", action="store_true", help="the import alone")
    args = parser.parse_args()
    with local_s3():
        os.environ[ENV_BREAK_GLASS_ID] = BREAK_GLASS_ID
        os.environ[ENV_IMPORT_SOURCES] = json.dumps([f"{SOURCE_BUCKET}/v2/"])
        with tempfile.TemporaryDirectory() as tmp:
            (total_bytes, setup) = timed(lambda: build_source(Path(tmp), args.files, args.projects))
            large_bytes = build_source(
                Path(tmp) / "large", LARGE_FILES, 2, LARGE_PREFIX, LARGE_PAYLOAD
            )
        rows = []
        if not args.no_extras:
            # A dry run: what `wheelgate import --dry-run` reads.
            counted = Counted()
            request = new_import_request(
                f"s3://{SOURCE_BUCKET}/{PREFIX}", INDEX, None, now=datetime.now(UTC)
            )
            client = counted.client()
            found, seconds = timed(
                lambda: preview(
                    request,
                    source=Bucket(client, SOURCE_BUCKET),
                    nightly_pages=IndexStore(Bucket(client, NIGHTLY_BUCKET)),
                    allow_build_tag_rereleases=False,
                )
            )
            rows.append(("dry run", counted, seconds, 0, len(found.accepted)))
        # The import, then the same import asked again (everything done already), then the
        # large wheels.
        runs = [("import", PREFIX, INDEX)]
        if not args.no_extras:
            runs.append(("asked again (all done)", PREFIX, INDEX))
        runs.append((f"{LARGE_PAYLOAD // 1024**2} MiB wheels", LARGE_PREFIX, LARGE_INDEX))
        for label, prefix, index in runs:
            counted = Counted()
            service = promoter(counted)
            event = ManifestEvent(request_import(prefix, index), f"AWS:{BREAK_GLASS_ID}:bench")
            decision, seconds = timed(lambda service=service, event=event: service.handle(event))
            record = None if decision is None else decision.record
            if record is None or record.state.value != "promoted":
                raise SystemExit(f"{label} failed: {record}")
            [outcome] = record.sets
            copied = [f for f in outcome.files if f.action == "imported"]
            # A gathered copy into staging and a release copy into nightly per new file.
            moved = 2 * sum(f.size for f in copied)
            rows.append((label, counted, seconds, moved, len(outcome.files)))
    print(
        f"Import {args.files:,} wheels of {args.projects} projects ({total_bytes / 1e6:,.1f} MB, "
        f"{PAYLOAD // 1024} KiB stored payload each) from a release bucket into one directory "
        f"(source written in {setup:.0f} s, not timed); then {LARGE_FILES} wheels of "
        f"{LARGE_PAYLOAD // 1024**2} MiB ({large_bytes / 1e6:,.1f} MB) into another"
    )
    print(
        "| run | files | requests | per file | seconds | wheel bytes copied server-side | "
        "wheel bytes read (GetObject) | whole-wheel GETs | requests by operation |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for label, counted, seconds, moved, files in rows:
        total = sum(counted.requests.values())
        by_op = ", ".join(f"{k} {v:,}" for k, v in sorted(counted.requests.items()))
        print(
            f"| {label} | {files:,} | {total:,} | {total / files:.2f} | {seconds:.1f} | "
            f"{moved:,} | {counted.wheel_bytes_read:,} | {counted.whole_wheel_reads} | {by_op} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
