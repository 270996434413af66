"""Local mode only: the embedded S3's conditional writes made atomic per key, as S3's are.

S3 checks a write's condition (``If-Match``, ``If-None-Match: *``) and makes the write as one
step: of two writers that read one ETag, exactly one wins. moto's server (5.2) checks the
condition, then builds and stores the new object in separate steps of a request thread, with
nothing held between them, so under load two writers with the same condition can both succeed
and the first one's update is lost. A traced run of the concurrency tests under two CPU-burning
processes showed it: two PutObject requests with the same ``If-Match`` (or
``If-None-Match: *``) both answered 200, and the root page lost a project each time
(``bench/conditional_writes.py`` shows it side by side).

:func:`install` wraps the handlers of the requests that create an object version (PutObject,
CopyObject, CompleteMultipartUpload) in a lock per bucket and key, so each one's check and
write happen together. It also applies a CopyObject's own ``If-None-Match`` and ``If-Match``
(conditions on the destination, which S3 honours and moto ignores), inside the same lock.
Parts of a multipart upload are not locked: they write no object version. GetObject takes the
same lock: in a bucket without versioning moto closes the replaced object's buffer as the new
one is stored, and a GET reading it at that moment failed with a 500 ("I/O operation on closed
file"), where S3 returns the old bytes or the new ones.

It patches moto's classes in this process; ``wheelgate local`` and the test stacks install it
before the server starts. Nothing in the promoter's code path imports this module.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import Any

_guard = threading.Lock()
_locks: dict[tuple[str, str], threading.RLock] = {}
_INSTALLED = "_wheelgate_atomic_writes"


@contextmanager
def _key_lock(bucket: str, key: str) -> Iterator[None]:
    """Hold the lock of one object key; locks are kept for the process's life (local mode
    writes a few thousand keys at most)."""
    with _guard:
        lock = _locks.setdefault((bucket, key), threading.RLock())
    with lock:
        yield


def _destination_conditions(response: Any, key_name: str) -> None:
    """Apply a CopyObject's ``If-None-Match: *`` and ``If-Match`` to its destination, as S3
    does (moto checks only the source's ``x-amz-copy-source-if-*``)."""
    from moto.s3.exceptions import MissingKey, PreconditionFailed

    if_none_match = response.headers.get("If-None-Match")
    if_match = response.headers.get("If-Match")
    if not if_none_match and not if_match:
        return
    current = response.backend.get_object(response.bucket_name, key_name)
    if if_none_match == "*" and current is not None:
        raise PreconditionFailed("If-None-Match")
    if if_match:
        if current is None:
            raise MissingKey(key=key_name)
        if if_match.replace('"', "") != current.etag.replace('"', ""):
            raise PreconditionFailed("If-Match")


def install() -> None:
    """Make moto's PutObject, CopyObject and CompleteMultipartUpload check their conditions
    and write, and its GetObject read, under one lock per key (idempotent)."""
    from moto.s3.responses import S3Response

    if getattr(S3Response, _INSTALLED, False):
        return
    get: Callable[..., Any] = S3Response._key_response_get
    put: Callable[..., Any] = S3Response._key_response_put
    post: Callable[..., Any] = S3Response._key_response_post

    @wraps(get)
    def locked_get(self: Any, query: dict[str, Any], key_name: str) -> Any:
        with _key_lock(self.bucket_name, key_name):
            return get(self, query, key_name)

    @wraps(put)
    def locked_put(self: Any, query: dict[str, Any], key_name: str) -> Any:
        if query.get("uploadId"):
            return put(self, query, key_name)  # a part: no object version yet
        with _key_lock(self.bucket_name, key_name):
            copy = "x-amz-copy-source" in self.headers
            if copy and not any(q in query for q in ("tagging", "acl", "retention")):
                _destination_conditions(self, key_name)
            return put(self, query, key_name)

    @wraps(post)
    def locked_post(
        self: Any, request: Any, body: bytes, bucket_name: str, query: dict[str, Any], key: str
    ) -> Any:
        if not query.get("uploadId"):
            return post(self, request, body, bucket_name, query, key)
        with _key_lock(bucket_name, key):
            return post(self, request, body, bucket_name, query, key)

    setattr(S3Response, "_key_response_get", locked_get)  # noqa: B010 (a method, patched)
    setattr(S3Response, "_key_response_put", locked_put)  # noqa: B010
    setattr(S3Response, "_key_response_post", locked_post)  # noqa: B010
    setattr(S3Response, _INSTALLED, True)
