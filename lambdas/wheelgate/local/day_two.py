"""``make demo``'s day-two stages: the break-glass role overrides the run its tests rejected,
and imports releases of an existing bucket, on the stack ``wheelgate local --break-glass
--import-source`` started (:data:`LOCAL_OPTIONS`)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Protocol

from wheelgate.local.sample_wheels import build_wheel
from wheelgate.storage.http import fetch


class Demo(Protocol):
    """What these stages use of the demo (:class:`wheelgate.local.demo.Demo`)."""

    env: dict[str, str]
    nightly_url: str

    def step(self, name: str, ok: bool, started: float) -> None: ...

    def wheelgate(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]: ...


#: The bucket of the embedded S3 the demo imports from, and its prefix of releases.
LEGACY_BUCKET = "demo-legacy-releases"
LEGACY_PREFIX = "v2/"
#: What the demo's ``wheelgate local`` needs for these stages.
LOCAL_OPTIONS = ("--break-glass", "--import-source", f"{LEGACY_BUCKET}/{LEGACY_PREFIX}")


def _nightly_lists(demo: Demo, index: str, project: str, filename: str) -> bool:
    url = f"{demo.nightly_url}{index}/{project}/"
    page = fetch(url)
    return page is not None and filename in page.decode()


def override(demo: Demo, run: str, index: str, filename: str) -> None:
    """The break-glass role promotes ``run`` despite its failed test; the record names it and
    nightly lists ``filename``."""
    started = time.monotonic()
    done = demo.wheelgate(
        *("promote", "--override", "--run-id", run, "--json", "--wait", "60"),
        *("--reason", "GPU runners down since 02:00; smoke-tested by hand"),
    )
    record = json.loads(demo.wheelgate("status", run, "--json", check=False).stdout)
    by = (record.get("override") or {}).get("by", "")
    demo.step(
        f"day two: run {run} promoted on a break-glass override by {by}",
        done.returncode == 0
        and record["state"] == "promoted"
        and _nightly_lists(demo, index, "demo-torch", filename),
        started,
    )


def import_releases(demo: Demo, wheels: Path, index: str) -> None:
    """Two releases of an existing bucket come into nightly through ``wheelgate import``."""
    import boto3

    started = time.monotonic()
    env = demo.env
    s3 = boto3.client(
        "s3",
        endpoint_url=env["AWS_ENDPOINT_URL"],
        region_name=env["AWS_DEFAULT_REGION"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
    )
    s3.create_bucket(Bucket=LEGACY_BUCKET)
    names = []
    for version in ("2.5.0", "2.6.0"):
        built = build_wheel(wheels, "demo-torch", version, requires=["demo-filelock>=3"])
        s3.upload_file(str(built), LEGACY_BUCKET, f"{LEGACY_PREFIX}{built.name}")
        names.append(built.name)
    source = f"s3://{LEGACY_BUCKET}/{LEGACY_PREFIX}"
    done = demo.wheelgate("import", "--from", source, "--index", index, "--json", "--wait", "60")
    demo.step(
        f"day two: {', '.join(names)} imported from {source} by the break-glass role",
        done.returncode == 0
        and all(_nightly_lists(demo, index, "demo-torch", name) for name in names),
        started,
    )
