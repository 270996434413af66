"""Bisect trusts nothing it did not write itself: directories someone else owns or can write
are refused, a cached file whose bytes changed is dropped and downloaded again, and temporary
files never follow a planted symlink. Each test first shows the hostile setup is in place.

Running as root, another user's ownership is made with ``os.chown`` to uid 65534 (nobody)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from tests.unit.test_bisect_cache import DictDownloader, planned
from tests.unit.test_bisect_history_cache import Distribution
from wheelgate.bisect.cache import STATE_FILE, BisectCache
from wheelgate.bisect.history_cache import CachingHistorySource
from wheelgate.bisect.private_dir import UnsafeDirectory, check_private, private_directory
from wheelgate.cli.local import write_env_file

NOBODY = 65534
BODY = b"torch-2.7.0-cp312-cp312-linux_x86_64.whl" * 4
WHEEL = planned("torch-2.7.0-cp312-cp312-linux_x86_64.whl", BODY)
HEAD = "history/v2/x/index.json"


def writable_by_others(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o777)
    assert path.stat().st_mode & stat.S_IWOTH
    return path


def owned_by_nobody(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, NOBODY, NOBODY)
    assert path.stat().st_uid == NOBODY != os.geteuid()
    return path


def test_a_new_directory_is_made_private(tmp_path: Path) -> None:
    made = private_directory(tmp_path / "a" / "session", "the session directory")
    assert stat.S_IMODE(made.stat().st_mode) == 0o700


def test_a_directory_others_can_write_is_refused_naming_it_and_the_fix(tmp_path: Path) -> None:
    shared = writable_by_others(tmp_path / "shared")
    with pytest.raises(UnsafeDirectory) as refused:
        private_directory(shared, "the session directory")
    assert f"the session directory {shared} can be written by other users" in str(refused.value)
    assert f"chmod go-w {shared}" in str(refused.value)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a directory away")
def test_a_directory_another_user_owns_is_refused(tmp_path: Path) -> None:
    theirs = owned_by_nobody(tmp_path / "theirs")
    with pytest.raises(UnsafeDirectory, match="owned by uid 65534, not by you"):
        check_private(theirs, "the cache directory")


def test_a_directory_inside_one_others_can_write_is_refused(tmp_path: Path) -> None:
    shared = writable_by_others(tmp_path / "scratch")
    with pytest.raises(UnsafeDirectory) as refused:
        private_directory(shared / "mine", "the cache directory")
    assert f"lies in {shared}, which other users can write" in str(refused.value)


def test_a_private_directory_in_a_sticky_one_like_tmp_is_accepted(tmp_path: Path) -> None:
    sticky = writable_by_others(tmp_path / "tmp")
    sticky.chmod(0o1777)
    assert private_directory(sticky / "mine", "the cache directory").is_dir()


def test_a_cache_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    shared = writable_by_others(tmp_path / "cache")
    with pytest.raises(UnsafeDirectory, match="the cache directory"):
        BisectCache(shared, downloader=DictDownloader({}))


def poisoned_cache(tmp_path: Path) -> tuple[BisectCache, DictDownloader, Path]:
    """A cache holding WHEEL, whose stored bytes were then overwritten."""
    downloader = DictDownloader({WHEEL.url: BODY})
    cache = BisectCache(tmp_path / "cache", downloader=downloader)
    stored = cache.fetch(WHEEL).path
    stored.write_bytes(b"evil" * 10)
    assert hashlib.sha256(stored.read_bytes()).hexdigest() != WHEEL.sha256
    return cache, downloader, stored


def test_a_cache_hit_whose_bytes_changed_is_dropped_and_downloaded_again(tmp_path: Path) -> None:
    cache, downloader, _ = poisoned_cache(tmp_path)
    fetched = cache.fetch(WHEEL)
    assert fetched.downloaded
    assert hashlib.sha256(fetched.path.read_bytes()).hexdigest() == WHEEL.sha256
    assert len(downloader.calls) == 2


def test_a_changed_file_is_not_offered_as_cached(tmp_path: Path) -> None:
    cache, _, _ = poisoned_cache(tmp_path)
    assert cache.cached(WHEEL) is None


def test_a_planted_file_is_not_adopted_by_a_new_cache(tmp_path: Path) -> None:
    # Given a file under the wheel's SHA-256 that no download put there, and no state naming it
    planted = tmp_path / "cache" / "files" / WHEEL.sha256 / WHEEL.filename
    planted.parent.mkdir(parents=True)
    planted.write_bytes(b"planted" * 10)
    # When a cache opens the directory and the wheel is asked for
    downloader = DictDownloader({WHEEL.url: BODY})
    cache = BisectCache(tmp_path / "cache", downloader=downloader)
    assert WHEEL.sha256 not in cache
    # Then the real bytes are downloaded
    assert cache.fetch(WHEEL).downloaded
    assert planted.read_bytes() == BODY


def test_the_cache_state_is_written_through_a_new_name_not_a_planted_symlink(
    tmp_path: Path,
) -> None:
    # Given a symlink where the cache once wrote its state's temporary file
    cache = BisectCache(tmp_path / "cache", downloader=DictDownloader({WHEEL.url: BODY}))
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "cache" / "cache.json.part").symlink_to(victim)
    assert (tmp_path / "cache" / "cache.json.part").resolve() == victim
    # When the cache saves its state
    cache.fetch(WHEEL)
    # Then the victim is untouched and the state is a file of its own
    assert victim.read_text() == "precious"
    assert not (tmp_path / "cache" / STATE_FILE).is_symlink()


def test_the_env_file_is_written_through_a_new_name_not_a_planted_symlink(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / ".wheelgate.env.partial").symlink_to(victim)
    assert (tmp_path / ".wheelgate.env.partial").resolve() == victim
    write_env_file(tmp_path / "wheelgate.env", {"A": "b"})
    assert victim.read_text() == "precious"
    assert "export A=b" in (tmp_path / "wheelgate.env").read_text()


def offline_copy(tmp_path: Path) -> tuple[CachingHistorySource, Distribution]:
    """A history head read once, then staging out of reach."""
    staging = Distribution({HEAD: b"head"})
    source = CachingHistorySource(staging, tmp_path / "history")
    source.get(HEAD)
    staging.down = True
    return source, staging


def test_the_cached_history_in_a_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    source, _ = offline_copy(tmp_path)
    shared = writable_by_others(tmp_path / "history" / "history" / "v2" / "x")
    (shared / "index.json").write_bytes(b"planted")
    with pytest.raises(UnsafeDirectory, match="cached run history"):
        source.get(HEAD)
    assert not source.offline


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file away")
def test_a_cached_history_document_another_user_owns_is_refused(tmp_path: Path) -> None:
    source, _ = offline_copy(tmp_path)
    planted = tmp_path / "history" / HEAD
    os.chown(planted, NOBODY, NOBODY)
    assert planted.stat().st_uid == NOBODY
    with pytest.raises(UnsafeDirectory, match="owned by uid 65534"):
        source.get(HEAD)


def test_missing_parents_are_made_private_too_whatever_the_umask(tmp_path: Path) -> None:
    # Given a umask that makes new directories group-writable (user private groups)
    before = os.umask(0o002)
    try:
        made = private_directory(tmp_path / "new" / "parents" / "cache", "the cache directory")
    finally:
        os.umask(before)
    for directory in (made, made.parent, made.parent.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
