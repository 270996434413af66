"""Two page writers of one project at once, one of them stopped between its read and its write.

Every pair of writers that can meet on a project's pages (promotion, yank, unyank, rebuild, and
two promotions) runs with one writer held at the first page write after its read, of the
archive page or of the listing page, while the other runs to the end; then the held one goes
on. Whatever the order, both changes must be on both pages, in both formats. Against the local
S3 over HTTP, without the directory's lease (the lease keeps promotions, yanks and rebuilds of
one directory apart; these tests show the pages stay right should two meet anyway).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from html import unescape
from typing import Any

import boto3
import pytest

from tests.integration.test_concurrency import repeats
from wheelgate.core.layout import NIGHTLY, PAGES
from wheelgate.core.records import PromotionRecord, RecordEntry, State
from wheelgate.core.setting_values import RetentionRule
from wheelgate.core.settings import PromoterSettings
from wheelgate.index.pages import IndexEntry, upload_time
from wheelgate.index.rebuild import rebuild, scan_nightly
from wheelgate.index.store import IndexStore
from wheelgate.index.yank import SCHEMA_YANK_V1, YankRequest
from wheelgate.local.names import NIGHTLY_BUCKET, STAGING_BUCKET
from wheelgate.local.stack import LocalWheelGate
from wheelgate.promotion.publish import Publisher
from wheelgate.status.state import STATE_KEY, page_key, parse_state
from wheelgate.status.store import StatusStore
from wheelgate.storage.bucket import Bucket

PROJECT = "racer"
#: Released before the race, listed; ``OLD`` yanked.
KEPT, OLD = "racer-1.0-py3-none-any.whl", "racer-0.9-py3-none-any.whl"
NEW, OTHER = "racer-1.1-py3-none-any.whl", "racer-1.2-py3-none-any.whl"
HELD_SECONDS = 60


class HeldBucket(Bucket):
    """A bucket whose first write of a key ending in ``suffix`` waits until :meth:`go`: its
    writer has read the page and is about to write it."""

    def __init__(self, client: Any, name: str, suffix: str) -> None:
        super().__init__(client, name)
        self.suffix = suffix
        self.held = threading.Event()
        self._go = threading.Event()

    def go(self) -> None:
        self._go.set()

    def put(self, key: str, body: bytes, **options: Any) -> str:
        if key.endswith(self.suffix) and not self.held.is_set():
            self.held.set()
            if not self._go.wait(HELD_SECONDS):
                raise TimeoutError(f"held at {key} and never let go")
        return super().put(key, body, **options)


Writer = Callable[[Bucket, str], None]


def _settings() -> PromoterSettings:
    return PromoterSettings(
        staging_bucket=STAGING_BUCKET,
        nightly_bucket=NIGHTLY_BUCKET,
        nightly_base_url="http://n/",
        trusted_reporter_id="AROAREPORTER",
        allowed_indexes=frozenset(),
        verdict_key_arn="arn:aws:kms:us-east-1:000000000000:key/unused",
    )


def _publisher(bucket: Bucket) -> Publisher:
    return Publisher(settings=_settings(), nightly_pages=IndexStore(bucket), invalidator=None)


def _released(bucket: Bucket, index: str, filename: str) -> IndexEntry:
    """Put ``filename`` in nightly (as a copy would) and return its page entry."""
    body = f"the bytes of {filename}".encode()
    key = NIGHTLY.artifact(index, filename)
    bucket.put(key, body, content_type="application/octet-stream")
    return IndexEntry.for_file(
        filename,
        key=key,
        page_dir=PAGES.project_dir(index, PROJECT),
        sha256=hashlib.sha256(body).hexdigest(),
        size=len(body),
        uploaded=upload_time(datetime.now(UTC)),
        metadata=None,
    )


def promote(filename: str) -> Writer:
    def write(bucket: Bucket, index: str) -> None:
        entry = _released(bucket, index, filename)
        _publisher(bucket).publish_entries([(index, PROJECT, entry)], at=datetime.now(UTC))

    return write


def yank(filename: str, reason: str = "") -> Writer:
    def write(bucket: Bucket, index: str) -> None:
        request = YankRequest.model_validate(
            {
                "schema": SCHEMA_YANK_V1,
                "run_id": "yank-race",
                "index": index,
                "filename": filename,
                "yanked": bool(reason),
                "reason": reason,
            }
        )
        _publisher(bucket).yank(request, at=datetime.now(UTC))

    return write


def run_rebuild(bucket: Bucket, index: str) -> None:
    rebuild(
        target=bucket,
        index=index,
        scanned=scan_nightly(bucket, index),
        dry_run=False,
        rule=RetentionRule(),
        now=datetime.now(UTC),
    )


#: name: (first writer, second writer, what both pages must list after them: yank states).
PAIRS: dict[str, tuple[Writer, Writer, dict[str, str | bool]]] = {
    "promote x yank": (promote(NEW), yank(KEPT, "broken"), {KEPT: "broken", NEW: False}),
    "promote x unyank": (promote(NEW), yank(OLD), {OLD: False, NEW: False}),
    "promote x rebuild": (promote(NEW), run_rebuild, {NEW: False}),
    "yank x unyank": (yank(KEPT, "broken"), yank(OLD), {KEPT: "broken", OLD: False}),
    "promote x promote": (promote(NEW), promote(OTHER), {NEW: False, OTHER: False}),
}
EXPECTED_BEFORE: dict[str, str | bool] = {KEPT: False, OLD: "old"}


def listed(bucket: Bucket, index: str, *, archive: bool) -> dict[str, str | bool]:
    """File name -> yank state on the project's JSON page; the HTML page must say the same."""
    json_page = bucket.get(PAGES.project_page(index, PROJECT, json=True, archive=archive))
    html_page = bucket.get(PAGES.project_page(index, PROJECT, archive=archive))
    assert json_page is not None
    assert html_page is not None
    from_json = {f["filename"]: f["yanked"] for f in json.loads(json_page[0])["files"]}
    from_html = {
        unescape(name): (unescape(yanked[1]) if yanked else False)
        for attrs, name in re.findall(r"<a ([^>]*)>([^<]+)</a>", html_page[0].decode())
        for yanked in [re.search(r'data-yanked="([^"]*)"', attrs)]
    }
    assert from_html == from_json, f"HTML and JSON pages differ ({'archive' if archive else ''})"
    return from_json


@dataclass
class Scene:
    """A directory where ``KEPT`` and ``OLD`` (yanked) are released and listed; for a rebuild,
    ``KEPT`` has dropped off both pages (a damaged index the rebuild repairs)."""

    index: str
    nightly: Bucket

    @classmethod
    def make(cls, nightly: Bucket, index: str, *, damaged: bool) -> Scene:
        entries = [_released(nightly, index, name) for name in (KEPT, OLD)]
        publisher = _publisher(nightly)
        publisher.publish_entries([(index, PROJECT, e) for e in entries], at=datetime.now(UTC))
        yank(OLD, "old")(nightly, index)
        if damaged:
            store = IndexStore(nightly)
            for pages in (store, store.archive_view()):
                pages.update_project(
                    index, PROJECT, lambda current: tuple(e for e in current if e.filename != KEPT)
                )
        return cls(index, nightly)


@pytest.fixture(scope="module")
def nightly(stack: LocalWheelGate) -> Bucket:
    return Bucket(boto3.client("s3"), NIGHTLY_BUCKET)


@pytest.fixture
def index(request: pytest.FixtureRequest) -> str:
    digest = hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:12]
    return f"races/{digest}"


def race(nightly: Bucket, index: str, held: Writer, free: Writer, page: str) -> None:
    """Run ``held`` until its first write of ``page`` after its read, ``free`` to the end, then
    ``held`` to the end."""
    suffix = PAGES.project_page(index, PROJECT, archive=page == "archive")
    bucket = HeldBucket(boto3.client("s3"), NIGHTLY_BUCKET, suffix)
    with ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(held, bucket, index)
        assert bucket.held.wait(HELD_SECONDS), "the held writer never reached its write"
        free(Bucket(boto3.client("s3"), NIGHTLY_BUCKET), index)
        bucket.go()
        first.result(timeout=HELD_SECONDS)


@pytest.mark.parametrize("round_", repeats())
@pytest.mark.parametrize("page", ["archive", "listing"])
@pytest.mark.parametrize("held_one", ["first", "second"])
@pytest.mark.parametrize("pair", list(PAIRS))
def test_two_writers_of_one_project_both_land_on_both_pages(
    nightly: Bucket, index: str, pair: str, held_one: str, page: str, round_: int
) -> None:
    # Given a project with two released files, one of them yanked...
    first, second, changes = PAIRS[pair]
    scene = Scene.make(nightly, index, damaged=pair.endswith("rebuild"))
    held, free = (first, second) if held_one == "first" else (second, first)
    # When one writer is held between reading a page and writing it while the other runs...
    race(nightly, scene.index, held, free, page)
    # Then the listing and the archive, HTML and JSON, carry both writers' changes.
    expected = {**EXPECTED_BEFORE, **changes}
    assert listed(nightly, scene.index, archive=True) == expected
    assert listed(nightly, scene.index, archive=False) == expected


def _decision(run_id: str) -> PromotionRecord:
    at = upload_time(datetime.now(UTC))
    entry = RecordEntry(at=at, state=State.REJECTED, reason="tests-failed", message=run_id)
    return PromotionRecord(
        run_id=run_id,
        state=State.REJECTED,
        reason="tests-failed",
        message=run_id,
        decided_at=at,
        history=[entry],
    )


@pytest.mark.parametrize("round_", repeats())
def test_two_decisions_on_the_status_page_both_stay(stack: LocalWheelGate, round_: int) -> None:
    # Given two promoters recording a decision each, one held after reading the state...
    staging = Bucket(boto3.client("s3"), STAGING_BUCKET)
    runs = [f"status-race-{round_}-{n}-{datetime.now(UTC).timestamp()}" for n in (1, 2)]
    held = HeldBucket(boto3.client("s3"), STAGING_BUCKET, page_key())
    with ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(StatusStore(held).update, _decision(runs[0]))
        assert held.held.wait(HELD_SECONDS)
        StatusStore(staging).update(_decision(runs[1]))
        held.go()
        first.result(timeout=HELD_SECONDS)
    # Then the state and the overview page show both rejections.
    state = parse_state(staging.get(STATE_KEY)[0])  # type: ignore[index]
    assert set(runs) <= {r.run_id for r in state.rejections}
    overview = staging.get(page_key())[0].decode()  # type: ignore[index]
    assert all(run in overview for run in runs)
