"""What the benchmarks share: local mode's S3 in a process of its own, a client that counts the
requests it sends, and a nightly directory's objects and pages written over HTTP.

The scripts run as ``.venv/bin/python bench/<name>.py``, so this module is imported by its
own name (``bench/`` is the first entry of their ``sys.path``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import boto3
from botocore.config import Config

from wheelgate.index.pages import (
    ProjectPage,
    render_project_html,
    render_project_json,
    render_root_html,
    render_root_json,
)
from wheelgate.local.names import NIGHTLY_BUCKET
from wheelgate.local.stack import install_moto_compatibility

#: An object to write: its key and its bytes.
Object = tuple[str, bytes]


@contextmanager
def local_s3() -> Iterator[dict[str, Any]]:
    """``wheelgate local --no-promoter`` (moto server, real HTTP) in a process of its own, so
    the objects it holds do not weigh on the measured one; yields its ready line (``env``,
    ``nightly_url``...). This process's environment, and boto3's default session with local
    mode's request fix-ups, point at it until the server is stopped."""
    local = subprocess.Popen(
        [sys.executable, "-m", "wheelgate", "local", "--no-promoter"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert local.stdout is not None
        ready: dict[str, Any] = json.loads(local.stdout.readline())
        os.environ.update(ready["env"])
        install_moto_compatibility()
        yield ready
    finally:
        local.terminate()
        try:
            local.wait(timeout=60)
        except subprocess.TimeoutExpired:
            local.kill()


def counting_client(counter: Counter[str], service: str = "s3") -> Any:
    """A client of ``service`` (of the default session) that counts each request it sends by
    operation."""
    client = boto3.client(service)  # type: ignore[call-overload]

    def count(model: Any, **_: Any) -> None:
        counter[model.name] += 1

    client.meta.events.register(f"before-call.{service}", count)
    return client


def page_objects(index: str, page: ProjectPage) -> list[Object]:
    """A project's page pair in directory ``index``."""
    return [
        (f"{index}/{page.name}/index.json", render_project_json(page).encode()),
        (f"{index}/{page.name}/index.html", render_project_html(page).encode()),
    ]


def root_objects(index: str, projects: Sequence[str]) -> list[Object]:
    """Directory ``index``'s root page pair naming ``projects``."""
    return [
        (f"{index}/index.json", render_root_json(projects).encode()),
        (f"{index}/index.html", render_root_html(projects).encode()),
    ]


def put_nightly(objects: Sequence[Object], workers: int = 24) -> None:
    """Write ``objects`` to the local nightly bucket, ``workers`` at a time."""
    s3 = boto3.client("s3", config=Config(max_pool_connections=32))

    def put(item: Object) -> None:
        s3.put_object(Bucket=NIGHTLY_BUCKET, Key=item[0], Body=item[1], ChecksumAlgorithm="SHA256")

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(put, objects))
