"""The run history bisect keeps beside its file cache: read through while the staging
distribution answers, read from the cache when it cannot be reached, never for a missing key."""

from __future__ import annotations

from pathlib import Path

import pytest

from wheelgate.bisect.history_cache import CachingHistorySource
from wheelgate.storage.errors import StorageUnavailable


class Distribution:
    """A staging distribution that serves ``documents`` until it is ``down``."""

    def __init__(self, documents: dict[str, bytes]) -> None:
        self.documents = documents
        self.down = False
        self.gets = 0

    def get(self, key: str) -> bytes | None:
        self.gets += 1
        if self.down:
            raise StorageUnavailable(
                operation="GET", target=key, endpoint="http://s", error="URLError", detail="down"
            )
        return self.documents.get(key)


def test_a_history_read_once_is_read_from_the_cache_when_staging_cannot_be_reached(
    tmp_path: Path,
) -> None:
    staging = Distribution({"history/v2/x/index.json": b"head"})
    source = CachingHistorySource(staging, tmp_path)
    assert source.get("history/v2/x/index.json") == b"head"
    assert not source.offline
    staging.down = True
    assert source.get("history/v2/x/index.json") == b"head"
    assert source.offline


def test_a_document_never_read_is_still_an_error_when_staging_cannot_be_reached(
    tmp_path: Path,
) -> None:
    staging = Distribution({})
    staging.down = True
    with pytest.raises(StorageUnavailable):
        CachingHistorySource(staging, tmp_path).get("history/v2/x/index.json")


def test_a_missing_document_is_missing_and_the_cache_keeps_no_stale_copy_of_it(
    tmp_path: Path,
) -> None:
    staging = Distribution({"history/v2/x/index.json": b"head"})
    source = CachingHistorySource(staging, tmp_path)
    source.get("history/v2/x/index.json")
    del staging.documents["history/v2/x/index.json"]
    assert source.get("history/v2/x/index.json") is None
    staging.down = True
    with pytest.raises(StorageUnavailable):
        source.get("history/v2/x/index.json")
