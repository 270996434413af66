"""The run history kept beside bisect's file cache, so a run installed once installs again with
the staging distribution out of reach (on a plane, behind a VPN that dropped).

Every history document read is written to the cache directory; when the distribution cannot be
reached at all (not a missing document: an error of the connection or the server), the cached
copy is read instead and :attr:`CachingHistorySource.offline` says so. A cached history may
lack the newest runs, never show a run other than the promoter wrote it: it is read only from a
directory only this user can write (:mod:`wheelgate.bisect.private_dir`), where no one else
can plant a run.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from wheelgate.bisect.private_dir import check_private_file, private_directory
from wheelgate.history.reader import HistorySource
from wheelgate.storage.errors import StorageUnavailable

#: Names the cached history's directory in a refusal.
HISTORY_ROLE = "the cached run history's directory"


class CachingHistorySource:
    """``inner`` (the staging distribution), its documents kept under ``directory`` by key."""

    def __init__(self, inner: HistorySource, directory: Path) -> None:
        self.inner = inner
        self.directory = directory
        #: Whether a document came from the cache because ``inner`` could not be reached.
        self.offline = False

    @property
    def gets(self) -> int:
        return self.inner.gets

    def get(self, key: str) -> bytes | None:
        """The document at ``key``: from ``inner``, else (unreachable) from the cache. Raises
        ``inner``'s :class:`StorageUnavailable` when it is unreachable and the cache has no copy,
        and :class:`~wheelgate.bisect.private_dir.UnsafeDirectory` when the copy lies where
        someone else can write."""
        path = self.directory / key
        try:
            body = self.inner.get(key)
        except StorageUnavailable:
            if not path.is_file():
                raise
            check_private_file(path, HISTORY_ROLE)
            self.offline = True
            return path.read_bytes()
        if body is None:
            path.unlink(missing_ok=True)  # gone from staging: never served from the cache
        else:
            self._keep(path, body)
        return body

    @staticmethod
    def _keep(path: Path, body: bytes) -> None:
        private_directory(path.parent, HISTORY_ROLE)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".history-")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(body)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
