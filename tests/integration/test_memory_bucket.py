"""The in-memory bucket of the promotion unit tests (``tests/unit/memory_bucket.py``) behaves as
the S3 adapter does against the local S3: the same assertions run against both, so the fake
cannot drift from what the promoter relies on."""

from __future__ import annotations

import hashlib
import inspect
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.unit.memory_bucket import MemoryBucket, World
from wheelgate.core.objects import META_SHA256
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.errors import PreconditionFailed
from wheelgate.storage.limits import TransferLimits

MB = 1024 * 1024
#: The methods and attribute the promotion code calls on a bucket.
INTERFACE = (
    "head",
    "get",
    "put",
    "commit",
    "list",
    "sha256_of",
    "read_into",
    "copy_in",
    "range_reader",
    "sibling",
)


@pytest.fixture(params=["memory", "local S3"])
def bucket(request: pytest.FixtureRequest) -> Iterator[tuple[Any, str]]:
    """A bucket and a prefix of its own for one test."""
    prefix = f"conformance/{uuid.uuid4().hex}/"
    if request.param == "memory":
        yield World().bucket("staging"), prefix
    else:
        staging, _nightly = request.getfixturevalue("buckets")
        yield staging, prefix


def test_the_fake_has_the_adapters_signatures() -> None:
    for name in INTERFACE:
        real = inspect.signature(getattr(Bucket, name))
        fake = inspect.signature(getattr(MemoryBucket, name))
        assert list(real.parameters) == list(fake.parameters), name


def test_a_write_is_read_back_with_its_etag_checksum_and_metadata(bucket: tuple[Any, str]) -> None:
    store, prefix = bucket
    body = b"wheel bytes"
    etag = store.put(prefix + "a", body, content_type="x", metadata={"wheelgate-commit": "c"})
    head = store.head(prefix + "a")
    assert head is not None
    assert (head.etag, head.size) == (etag, len(body))
    assert head.s3_sha256 == hashlib.sha256(body).hexdigest()
    assert head.metadata["wheelgate-commit"] == "c"
    assert head.metadata[META_SHA256] == hashlib.sha256(body).hexdigest()
    assert store.get(prefix + "a") == (body, etag)
    assert store.head(prefix + "missing") is None
    assert store.get(prefix + "missing") is None


def test_conditional_writes_and_pinned_reads(bucket: tuple[Any, str]) -> None:
    store, prefix = bucket
    first = store.put(prefix + "a", b"one", content_type="x")
    with pytest.raises(PreconditionFailed):
        store.put(prefix + "a", b"two", content_type="x", if_none_match=True)
    with pytest.raises(PreconditionFailed):
        store.put(prefix + "gone", b"two", content_type="x", if_match=first)
    second = store.put(prefix + "a", b"two", content_type="x", if_match=first)
    with pytest.raises(PreconditionFailed):
        store.get(prefix + "a", if_match=first)
    assert store.get(prefix + "a", if_match=second) == (b"two", second)
    assert not store.commit(prefix + "a", b"three", etag=first, content_type="x")
    assert store.commit(prefix + "a", b"three", etag=second, content_type="x")
    assert not store.commit(prefix + "new", b"x", etag=second, content_type="x")
    assert store.commit(prefix + "new", b"x", etag=None, content_type="x")
    assert not store.commit(prefix + "new", b"y", etag=None, content_type="x")


def test_listings_with_and_without_subfolders(bucket: tuple[Any, str]) -> None:
    store, prefix = bucket
    for key in ("a", "b", "sub/c"):
        store.put(prefix + key, key.encode(), content_type="x")
    assert [o.key for o in store.list(prefix)] == [prefix + k for k in ("a", "b", "sub/c")]
    assert [o.key for o in store.list(prefix, direct=True)] == [prefix + "a", prefix + "b"]
    [listed] = [o for o in store.list(prefix) if o.key == prefix + "a"]
    assert (listed.size, listed.etag) == (1, store.head(prefix + "a").etag)


def test_hash_reads_and_ranged_reads_are_pinned(bucket: tuple[Any, str]) -> None:
    store, prefix = bucket
    body = bytes(range(256)) * 4
    etag = store.put(prefix + "a", body, content_type="x")
    assert store.sha256_of(prefix + "a", etag) == hashlib.sha256(body).hexdigest()
    reader = store.range_reader(prefix + "a", len(body), etag)
    assert reader.size == len(body)
    assert reader.read(10, 20) == body[10:30]
    assert reader.read(len(body) - 5, 100) == body[-5:]
    store.put(prefix + "a", b"other", content_type="x")
    with pytest.raises(PreconditionFailed):
        store.sha256_of(prefix + "a", etag)
    assert store.sibling(store.name).name == store.name


def test_a_copy_never_overwrites_and_pins_its_source(bucket: tuple[Any, str]) -> None:
    store, prefix = bucket
    body = b"wheel"
    etag = store.put(prefix + "src", body, content_type="x", metadata={"k": "v"})
    copied = store.copy_in(store, prefix + "src", etag, len(body), prefix + "dst")
    assert copied.sha256 == hashlib.sha256(body).hexdigest()
    head = store.head(prefix + "dst")
    assert head is not None
    assert head.etag == copied.etag
    assert head.metadata["k"] == "v"
    with pytest.raises(PreconditionFailed):
        store.copy_in(store, prefix + "src", etag, len(body), prefix + "dst")
    if isinstance(store, MemoryBucket):
        # S3 refuses a copy whose source is not the pinned version (CopySourceIfMatch, 412);
        # moto 5.2 ignores the header, so the local S3 cannot hold the fake to it.
        with pytest.raises(PreconditionFailed):
            store.copy_in(store, prefix + "src", '"0"', len(body), prefix + "other")
    replaced = store.copy_in(
        store, prefix + "src", etag, len(body), prefix + "third", metadata={"n": "m"}
    )
    third = store.head(prefix + "third")
    assert third is not None
    assert third.metadata == {"n": "m"}
    assert replaced.sha256 == copied.sha256


def test_a_multipart_copy_has_no_full_object_checksum(bucket: tuple[Any, str]) -> None:
    store, prefix = bucket
    small = TransferLimits(single_request_limit=5 * MB, copy_part_size=5 * MB)
    store = (
        World(limits=small).bucket(store.name)
        if isinstance(store, MemoryBucket)
        else Bucket(store.client, store.name, limits=small)
    )
    body = os.urandom(6 * MB)
    etag = store.put(prefix + "big", body, content_type="x")
    sha256 = hashlib.sha256(body).hexdigest()
    copied = store.copy_in(store, prefix + "big", etag, len(body), prefix + "copy", sha256=sha256)
    assert copied.sha256 is None
    assert copied.etag.endswith('-2"')
    head = store.head(prefix + "copy")
    assert head is not None
    assert head.s3_sha256 is None
    assert head.metadata[META_SHA256] == sha256
    assert store.sha256_of(prefix + "copy", head.etag) == sha256
