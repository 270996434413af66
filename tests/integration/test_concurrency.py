"""Concurrent writers into one index directory never lose an entry (S3 conditional writes).

``WHEELGATE_RACE_ROUNDS`` (default 1) runs each race that many times, each round in a
directory of its own: ``bench/under_load.py`` runs them so beside CPU-burning processes.
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
import pytest

from tests.integration.conftest import LocalProcess
from wheelgate.core.layout import STAGING
from wheelgate.index.pages import IndexEntry
from wheelgate.index.store import IndexStore
from wheelgate.local.names import NIGHTLY_BUCKET, STAGING_BUCKET
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.local.stack import LocalWheelGate
from wheelgate.promotion.publish import add_missing
from wheelgate.staging.local_artifacts import inspect_files
from wheelgate.staging.stage import stage
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.conditional import Put, Rendered, StateUpdate, read_modify_write

WRITERS = 8
#: Rounds of each race (``bench/under_load.py`` sets it).
ENV_ROUNDS = "WHEELGATE_RACE_ROUNDS"


def repeats() -> range:
    """The rounds each race runs: ``WHEELGATE_RACE_ROUNDS``, 1 when unset."""
    return range(int(os.environ.get(ENV_ROUNDS, "1")))


def entry(name: str, version: str) -> IndexEntry:
    filename = f"{name}-{version}-py3-none-any.whl"
    return IndexEntry(
        filename=filename,
        url=f"../{filename}",
        sha256="a" * 64,
        size=1,
        upload_time="2026-11-30T00:00:00.000000Z",
    )


@pytest.fixture(scope="module")
def nightly(stack: LocalWheelGate) -> Bucket:
    return Bucket(boto3.client("s3"), NIGHTLY_BUCKET)


@pytest.mark.parametrize("round_", repeats())
def test_eight_writers_on_one_project_page_lose_nothing(nightly: Bucket, round_: int) -> None:
    index = f"conc/one-page-{round_}"
    entries = [entry("shared", f"1.{i}") for i in range(WRITERS * 3)]

    def write(i: int) -> None:
        # Each writer has its own store (as separate Lambda invocations would).
        store = IndexStore(Bucket(boto3.client("s3"), NIGHTLY_BUCKET))
        store.update_project(index, "shared", add_missing(entries[i::WRITERS]))

    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        list(pool.map(write, range(WRITERS)))

    store = IndexStore(nightly)
    page, _ = store.read_project(index, "shared")
    assert {e.filename for e in page.entries} == {e.filename for e in entries}
    html = nightly.get(f"{index}/shared/index.html")
    assert html is not None
    # The HTML page converged on the final JSON page too.
    assert all(e.filename in html[0].decode() for e in entries)


@pytest.mark.parametrize("round_", repeats())
def test_eight_writers_adding_projects_keep_every_root_entry(nightly: Bucket, round_: int) -> None:
    index = f"conc/root-{round_}"

    def write(i: int) -> None:
        store = IndexStore(Bucket(boto3.client("s3"), NIGHTLY_BUCKET))
        store.update_project(index, f"proj{i}", add_missing([entry(f"proj{i}", "1.0")]))
        store.add_projects(index, [f"proj{i}"])

    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        list(pool.map(write, range(WRITERS)))
    projects, _ = IndexStore(nightly).read_root(index)
    assert projects == tuple(sorted(f"proj{i}" for i in range(WRITERS)))
    root_html = nightly.get(f"{index}/index.html")
    assert root_html is not None
    assert all(f'href="proj{i}/"' in root_html[0].decode() for i in range(WRITERS))


@pytest.mark.parametrize("round_", repeats())
def test_eight_build_jobs_of_one_run_staging_into_one_directory(
    stack: LocalWheelGate, tmp_path: Path, round_: int
) -> None:
    # Given eight build jobs of one run, each staging one torch wheel into the same directory
    # at once (one page of the run's index to share)...
    index = f"conc/stage-{round_}"
    run_id = f"conc-run-{round_}"
    wheels = [build_wheel(tmp_path / str(i), "torch", f"2.{i}.0") for i in range(WRITERS)]

    def job(i: int) -> None:
        s3 = boto3.client("s3")
        stage(
            staging=Bucket(s3, STAGING_BUCKET),
            nightly=Bucket(s3, NIGHTLY_BUCKET),
            nightly_base_url=stack.nightly_url,
            run_id=run_id,
            index=index,
            commit="c" * 40,
            artifacts=inspect_files([wheels[i]]),
        )

    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        list(pool.map(job, range(WRITERS)))
    # Then the run's project page lists every one of them.
    staging = Bucket(boto3.client("s3"), STAGING_BUCKET)
    found = staging.get(f"{STAGING.run_pages_prefix(run_id)}{index}/torch/index.json")
    assert found is not None
    listed = {f["filename"] for f in json.loads(found[0])["files"]}
    assert listed == {w.name for w in wheels}


COUNTER_WRITERS, COUNTER_UPDATES = 16, 200


@pytest.mark.parametrize("round_", repeats())
@pytest.mark.slow
def test_sixteen_writers_lose_no_conditional_update_of_one_key(
    local: LocalProcess, round_: int
) -> None:
    # Given 16 writers, each adding one to a counter object 200 times through the page
    # writers' read-modify-write loop (If-Match on the ETag read), against the local S3 in its
    # own process (``wheelgate local``)...
    key = f"conc/counter-{round_}-{time.time_ns()}.json"
    nightly = local.env["WHEELGATE_NIGHTLY_BUCKET"]

    def decide(count: int) -> StateUpdate[None]:
        body = json.dumps({"count": count + 1}).encode()
        return StateUpdate(None, True, lambda: Rendered(Put(key, body, "application/json")))

    def read(bucket: Bucket) -> tuple[int, str | None]:
        found = bucket.get(key)
        return (0, None) if found is None else (json.loads(found[0])["count"], found[1])

    def writer(_: int) -> int:
        bucket = Bucket(local.client("s3"), nightly)
        for _update in range(COUNTER_UPDATES):
            # Sixteen writers on one key lose often: no giving up.
            read_modify_write(bucket, lambda: read(bucket), decide, max_attempts=10_000)
        return COUNTER_UPDATES

    with ThreadPoolExecutor(max_workers=COUNTER_WRITERS) as pool:
        done = sum(pool.map(writer, range(COUNTER_WRITERS)))
    # Then every update that reported success is in the final count: none was lost.
    assert done == COUNTER_WRITERS * COUNTER_UPDATES
    assert read(Bucket(local.client("s3"), nightly))[0] == done
