"""The bisect's file cache (wheelgate.bisect.cache): one copy per SHA-256, one download however
many ask, counters that outlive the process, and a size limit that keeps the pinned ends.

The downloads here come from a dictionary (the cache is the subject, not HTTP): the real
downloads, over HTTP from the local stack, are tests/integration/test_bisect_install.py's."""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path

import pytest

from wheelgate.bisect.cache import BisectCache, CacheCounters, CacheStateError
from wheelgate.bisect.download import Downloader
from wheelgate.bisect.run_installer import PlannedFile


class DictDownloader(Downloader):
    """Serves URLs from a dictionary and counts each download; ``gate`` (when set) holds every
    download until it is opened."""

    def __init__(self, bodies: dict[str, bytes], gate: threading.Event | None = None) -> None:
        super().__init__()
        self.bodies = bodies
        self.gate = gate
        self.calls: list[str] = []

    def download(self, file: PlannedFile, destination: Path) -> int:
        self.calls.append(file.url)
        if self.gate is not None:
            assert self.gate.wait(10)
        destination.write_bytes(self.bodies[file.url])
        return len(self.bodies[file.url])


def planned(name: str, body: bytes, where: str = "staging") -> PlannedFile:
    return PlannedFile(name, hashlib.sha256(body).hexdigest(), len(body), f"http://{where}/{name}")


def cache_of(tmp_path: Path, *files: PlannedFile, **options: int) -> BisectCache:
    bodies = {f.url: f.filename.encode() * (f.size // len(f.filename)) for f in files}
    return BisectCache(tmp_path / "cache", downloader=DictDownloader(bodies), **options)


def test_the_same_bytes_from_staging_and_nightly_are_stored_and_downloaded_once(
    tmp_path: Path,
) -> None:
    body = b"a-1.0-py3-none-any.whl" * 10
    staged, promoted = (
        planned("a-1.0-py3-none-any.whl", body),
        planned("a-1.0-py3-none-any.whl", body, "nightly"),
    )
    cache = cache_of(tmp_path, staged, promoted)

    first, second = cache.fetch(staged), cache.fetch(promoted)

    assert (first.downloaded, second.downloaded) == (True, False)
    assert first.path == second.path
    assert first.path.read_bytes() == body
    assert cache.counters == CacheCounters(downloads=1, hits=1, bytes_downloaded=len(body))


def test_counters_and_files_outlive_the_cache_that_downloaded_them(tmp_path: Path) -> None:
    file = planned("a-1.0-py3-none-any.whl", b"a-1.0-py3-none-any.whl" * 3)
    cache_of(tmp_path, file).fetch(file)

    resumed = cache_of(tmp_path, file)
    again = resumed.fetch(file)

    assert not again.downloaded
    assert resumed.counters == CacheCounters(downloads=1, hits=1, bytes_downloaded=file.size)


def test_past_its_size_limit_the_cache_evicts_the_least_recently_used_unpinned_file(
    tmp_path: Path,
) -> None:
    # Given four files of 22 bytes in a cache of 70: the oldest (a) pinned, b used since c
    a, b, c, d = (
        planned(f"{n}-1.0-py3-none-any.whl", f"{n}-1.0-py3-none-any.whl".encode()) for n in "abcd"
    )
    cache = cache_of(tmp_path, a, b, c, d, max_bytes=70)
    cache.pin([a.sha256])
    for file in (a, b, c, b):
        cache.fetch(file)

    # When a fourth file is stored
    cache.fetch(d)

    # Then c, the least recently used of the unpinned ones, is gone, and a is kept
    assert [f.sha256 in cache for f in (a, b, c, d)] == [True, True, False, True]
    assert not (tmp_path / "cache" / "files" / c.sha256).exists()
    assert cache.stored_bytes == 66


def test_two_threads_fetching_the_same_file_download_it_once(tmp_path: Path) -> None:
    file = planned("a-1.0-py3-none-any.whl", b"a-1.0-py3-none-any.whl")
    gate = threading.Event()
    downloader = DictDownloader({file.url: b"a-1.0-py3-none-any.whl"}, gate)
    cache = BisectCache(tmp_path / "cache", downloader=downloader)
    results: list[bool] = []
    threads = [
        threading.Thread(target=lambda: results.append(cache.fetch(file).downloaded))
        for _ in range(2)
    ]
    # Given both threads asking while the first download is held open
    for thread in threads:
        thread.start()
    while not downloader.calls:
        time.sleep(0.01)
    time.sleep(0.2)

    # When it completes
    gate.set()
    for thread in threads:
        thread.join(10)

    assert sorted(results) == [False, True]
    assert cache.counters.downloads == 1


def test_a_state_file_that_is_not_the_caches_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "cache.json").write_text('{"schema": "other"}')

    with pytest.raises(CacheStateError, match=r"cache\.json is not a bisect cache's state"):
        BisectCache(tmp_path / "cache")
