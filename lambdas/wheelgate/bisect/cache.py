"""The bisect's file cache: every file a bisect installs, kept by its SHA-256, so the same bytes
from staging and from nightly are stored (and downloaded) once, and a resumed bisect downloads
nothing it already has.

Layout under the cache directory: ``files/<sha256>/<filename>`` (installers take a wheel only
under its own name), ``tmp/`` for downloads in progress, and ``cache.json`` with each entry's
size and last use, and the counters (:class:`CacheCounters`). A download is renamed into
``files/`` only once its size and SHA-256 match (:mod:`wheelgate.bisect.download`).

The cache trusts nothing it finds: the directory must be one only this user can write
(:mod:`wheelgate.bisect.private_dir`), and every file is hashed again before it is used or
adopted; a file whose bytes do not match its SHA-256 is dropped and downloaded again.

One process's threads share a cache safely: a prefetch thread and the main thread asking for
the same file get one download. Past ``max_bytes`` the least recently used entries go first,
never a pinned one (the bisect's two ends) nor the one just stored.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from wheelgate.bisect.download import Downloader
from wheelgate.bisect.private_dir import private_directory
from wheelgate.bisect.run_installer import PlannedFile
from wheelgate.staging.local_artifacts import sha256_file

STATE_FILE = "cache.json"
FILES_DIR = "files"
TMP_DIR = "tmp"
STATE_SCHEMA = "wheelgate/bisect-cache/v1"
#: Names the cache directory in a refusal.
CACHE_ROLE = "the cache directory"


def default_cache_dir(environ: Mapping[str, str], home: Path) -> Path:
    """Where the cache lives unless told: ``$XDG_CACHE_HOME/wheelgate/bisect``, else
    ``<home>/.cache/wheelgate/bisect``."""
    base = environ.get("XDG_CACHE_HOME") or str(home / ".cache")
    return Path(base) / "wheelgate" / "bisect"


@dataclass
class CacheCounters:
    """What the cache did, over every process that used it: files downloaded and their bytes,
    and requests met from the cache."""

    downloads: int = 0
    hits: int = 0
    bytes_downloaded: int = 0


@dataclass(frozen=True)
class Fetched:
    """A planned file in the cache: its path, and whether this request downloaded it."""

    path: Path
    sha256: str
    size: int
    downloaded: bool


@dataclass
class _Entry:
    size: int
    #: The cache's clock at its last use (higher: more recent).
    used: int


class CacheStateError(ValueError):
    """A ``cache.json`` that is not the cache's (named by its path)."""


class BisectCache:
    """Files by SHA-256 under ``directory``, at most ``max_bytes`` of them (``None``: no
    limit), downloaded with ``downloader``. Raises :class:`CacheStateError` when the state
    file cannot be read as the cache's, and
    :class:`~wheelgate.bisect.private_dir.UnsafeDirectory` when someone else owns or can write
    the directory."""

    def __init__(
        self,
        directory: Path,
        *,
        max_bytes: int | None = None,
        downloader: Downloader | None = None,
    ) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.downloader = downloader or Downloader()
        self._lock = threading.Lock()
        self._inflight: dict[str, threading.Event] = {}
        self._pinned: set[str] = set()
        private_directory(directory, CACHE_ROLE)
        (directory / FILES_DIR).mkdir(mode=0o700, exist_ok=True)
        (directory / TMP_DIR).mkdir(mode=0o700, exist_ok=True)
        self._counters, self._entries, self._clock = self._load()

    @property
    def counters(self) -> CacheCounters:
        with self._lock:
            return CacheCounters(**asdict(self._counters))

    @property
    def stored_bytes(self) -> int:
        with self._lock:
            return sum(e.size for e in self._entries.values())

    def __contains__(self, sha256: object) -> bool:
        with self._lock:
            return sha256 in self._entries

    def pin(self, sha256s: Iterable[str]) -> None:
        """Keep these files whatever the size limit (until :meth:`unpin`)."""
        with self._lock:
            self._pinned.update(sha256s)

    def unpin(self, sha256s: Iterable[str]) -> None:
        with self._lock:
            self._pinned.difference_update(sha256s)

    def cached(self, file: PlannedFile) -> Path | None:
        """``file``'s path when the cache holds its bytes, hashed again now (counting no hit),
        else ``None``."""
        with self._lock:
            return self._lookup(file)

    def fetch(self, file: PlannedFile) -> Fetched:
        """``file`` in the cache: found (a hit) or downloaded now (one download however many
        threads ask). Raises :class:`~wheelgate.bisect.run_installer.SkipRun` when it cannot be
        downloaded (:meth:`Downloader.download`)."""
        while True:
            with self._lock:
                found = self._lookup(file)
                if found is not None:
                    self._counters.hits += 1
                    self._save()
                    return Fetched(found, file.sha256, self._entries[file.sha256].size, False)
                waiting = self._inflight.get(file.sha256)
                if waiting is None:
                    mine = self._inflight[file.sha256] = threading.Event()
                    break
            # Another thread is downloading these bytes: its result is ours (or, if it failed,
            # this thread tries for itself).
            waiting.wait()
        try:
            return self._download(file)
        finally:
            with self._lock:
                del self._inflight[file.sha256]
            mine.set()

    def _download(self, file: PlannedFile) -> Fetched:
        handle, name = tempfile.mkstemp(dir=self.directory / TMP_DIR, suffix=".part")
        os.close(handle)
        part = Path(name)
        try:
            size = self.downloader.download(file, part)
            target = self.directory / FILES_DIR / file.sha256 / file.filename
            target.parent.mkdir(exist_ok=True)
            os.replace(part, target)
        finally:
            part.unlink(missing_ok=True)
        with self._lock:
            self._clock += 1
            self._entries[file.sha256] = _Entry(size, self._clock)
            self._counters.downloads += 1
            self._counters.bytes_downloaded += size
            self._evict(keep=file.sha256)
            self._save()
        return Fetched(target, file.sha256, size, True)

    def _lookup(self, file: PlannedFile) -> Path | None:
        entry = self._entries.get(file.sha256)
        if entry is None:
            return None
        folder = self.directory / FILES_DIR / file.sha256
        path = folder / file.filename
        if not path.is_file():
            present = sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []
            if not present:
                # Removed behind the cache's back: forget it, download again.
                del self._entries[file.sha256]
                return None
            # The same bytes under another name (the installer needs the plan's): a link.
            try:
                os.link(present[0], path)
            except OSError:
                shutil.copyfile(present[0], path)
        if not _holds(path, file.sha256):
            # Changed behind the cache's back: never used; downloaded again.
            del self._entries[file.sha256]
            shutil.rmtree(folder, ignore_errors=True)
            return None
        self._clock += 1
        entry.used = self._clock
        return path

    def _evict(self, *, keep: str) -> None:
        if self.max_bytes is None:
            return
        total = sum(e.size for e in self._entries.values())
        candidates = sorted(
            (e.used, sha)
            for sha, e in self._entries.items()
            if sha != keep and sha not in self._pinned
        )
        for _, sha in candidates:
            if total <= self.max_bytes:
                break
            total -= self._entries.pop(sha).size
            shutil.rmtree(self.directory / FILES_DIR / sha, ignore_errors=True)

    def _load(self) -> tuple[CacheCounters, dict[str, _Entry], int]:
        path = self.directory / STATE_FILE
        counters, entries, clock = CacheCounters(), {}, 0
        if path.is_file():
            try:
                state = json.loads(path.read_text())
                if state.get("schema") != STATE_SCHEMA:
                    raise ValueError(f"schema is {state.get('schema')!r}, not {STATE_SCHEMA}")
                counters = CacheCounters(**state["counters"])
                entries = {sha: _Entry(**e) for sha, e in state["entries"].items()}
                clock = int(state["clock"])
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise CacheStateError(
                    f"{path} is not a bisect cache's state ({exc}); remove the cache directory "
                    "or give another one"
                ) from None
        # A file renamed into place by a process stopped before it saved the state is whole
        # (only verified bytes are renamed): adopt it once its bytes hash to its folder's name.
        for folder in (self.directory / FILES_DIR).iterdir():
            files = [p for p in folder.iterdir() if p.is_file()] if folder.is_dir() else []
            if not files or folder.name in entries:
                continue
            if _holds(files[0], folder.name):
                entries[folder.name] = _Entry(files[0].stat().st_size, 0)
            else:
                shutil.rmtree(folder, ignore_errors=True)
        gone = [sha for sha in entries if not (self.directory / FILES_DIR / sha).is_dir()]
        for sha in gone:
            del entries[sha]
        return counters, entries, clock

    def _save(self) -> None:
        state = {
            "schema": STATE_SCHEMA,
            "counters": asdict(self._counters),
            "clock": self._clock,
            "entries": {sha: asdict(e) for sha, e in sorted(self._entries.items())},
        }
        # A new temporary name each time (a fixed one could be a planted symlink), renamed,
        # so a process killed mid-write leaves the previous state, never half of one.
        handle, partial = tempfile.mkstemp(dir=self.directory, prefix=".cache-", suffix=".part")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(json.dumps(state, indent=1) + "\n")
            os.replace(partial, self.directory / STATE_FILE)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise


def _holds(path: Path, sha256: str) -> bool:
    """Whether the bytes at ``path`` hash to ``sha256`` (read now)."""
    try:
        return sha256_file(path) == sha256
    except OSError:
        return False
