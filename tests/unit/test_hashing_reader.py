"""A file hashed as it is read once, whatever the reader does with it."""

from __future__ import annotations

import hashlib
import io

import pytest

from wheelgate.storage.bucket import FileChangedError, HashingReader

DATA = bytes(range(256)) * 1000


def test_a_file_read_in_order_is_hashed_once_even_where_a_request_reads_it_again() -> None:
    reader = HashingReader(io.BytesIO(DATA), len(DATA))
    first = reader.read(100_000)
    # A retried part request seeks back and reads its body again: not hashed twice.
    reader.seek(50_000)
    again = reader.read(50_000)
    rest = reader.read()
    assert first[50_000:] == again
    assert first + rest == DATA
    assert reader.hexdigest() == hashlib.sha256(DATA).hexdigest()


def test_bytes_skipped_or_missing_are_a_changed_file() -> None:
    skipping = HashingReader(io.BytesIO(DATA), len(DATA))
    skipping.read(1000)
    skipping.seek(2000)
    skipping.read()
    with pytest.raises(FileChangedError, match="changed while it was uploaded"):
        skipping.hexdigest()
    # The file was shorter than it was when its size was taken.
    short = HashingReader(io.BytesIO(DATA[:-1]), len(DATA))
    short.read()
    with pytest.raises(FileChangedError, match=f"{len(DATA) - 1:,} of {len(DATA):,} bytes"):
        short.hexdigest()
