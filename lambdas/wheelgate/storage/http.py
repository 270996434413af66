"""Plain HTTP(S) reads of a public index: what ``wheelgate verify`` downloads.

Errors are translated as the S3 adapters' are: a missing object is ``None``; an endpoint that
cannot be reached, a timeout or a server error is :class:`StorageUnavailable`, any other
refusal :class:`AccessError`.
"""

from __future__ import annotations

import hashlib
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import IO, Any
from urllib.parse import urlsplit

from wheelgate.storage.errors import AccessError, StorageError, StorageUnavailable

#: Seconds a read may wait for the server.
TIMEOUT_SECONDS = 60
_CHUNK = 1024 * 1024


def _endpoint(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _read(url: str, consume: Callable[[IO[bytes]], Any], accept: str | None) -> Any:
    if urlsplit(url).scheme not in ("http", "https"):
        raise ValueError(f"not an http(s) URL: {url!r}")
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310
            return consume(response)
    except urllib.error.HTTPError as exc:
        if exc.code in (403, 404):
            # S3 answers 403 for a missing key to a reader without ListBucket (CloudFront).
            return None
        kind: type[StorageError] = StorageUnavailable if exc.code >= 500 else AccessError
        raise kind(
            operation="GET",
            target=url,
            endpoint=_endpoint(url),
            error=f"HTTP {exc.code}",
            detail=str(exc.reason),
        ) from exc
    except (urllib.error.URLError, OSError) as exc:
        raise StorageUnavailable(
            operation="GET",
            target=url,
            endpoint=_endpoint(url),
            error=type(exc).__name__,
            detail=str(getattr(exc, "reason", exc)),
        ) from exc


def fetch(url: str, *, accept: str | None = None) -> bytes | None:
    """The body at ``url``, or ``None`` when there is no such object."""
    result: bytes | None = _read(url, lambda r: r.read(), accept)
    return result


def sha256_of(url: str) -> str | None:
    """SHA-256 (hex) of the body at ``url``, read in chunks; ``None`` when it is missing."""

    def digest(response: IO[bytes]) -> str:
        hashed = hashlib.sha256()
        while data := response.read(_CHUNK):
            hashed.update(data)
        return hashed.hexdigest()

    result: str | None = _read(url, digest, None)
    return result
