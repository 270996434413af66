"""Downloading one planned file for the bisect cache: streamed to a file, hashed as it goes,
held to its SHA-256 and size, with a few retries on what may pass (a reset, a timeout, a 5xx).

Every failure is a :class:`~wheelgate.bisect.probe.SkipRun`, never an error of the search: a
file that is not there (403, 404, or still unreachable after the retries) is ``missing-file``
with its cause, other bytes than the history recorded are ``hash-mismatch``.
"""

from __future__ import annotations

import hashlib
import http.client
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from wheelgate.bisect.run_installer import (
    SKIP_HASH_MISMATCH,
    SKIP_MISSING_FILE,
    PlannedFile,
    SkipRun,
)
from wheelgate.core.redact import redact_urls

#: Read size: large enough for throughput, small enough to keep memory flat.
CHUNK_BYTES = 1024 * 1024
#: Statuses worth another try: timeouts, throttling and server errors.
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


class _Transient(Exception):
    """A failure another try may not meet."""


@dataclass
class Downloader:
    """Streams a :class:`PlannedFile`'s URL into a file. ``retries`` more tries after a
    transient failure, ``backoff`` seconds before the first, doubling; ``timeout`` bounds each
    connect and read."""

    opener: urllib.request.OpenerDirector = field(default_factory=urllib.request.build_opener)
    timeout: float = 60.0
    retries: int = 3
    backoff: float = 0.5
    sleep: Callable[[float], None] = time.sleep

    def download(self, file: PlannedFile, destination: Path) -> int:
        """Write ``file``'s bytes to ``destination`` and return their size. ``file.size`` 0
        means unknown (held to the SHA-256 alone). Raises :class:`SkipRun`: ``missing-file``
        for a 403/404, another refusal or a failure that lasted through the retries;
        ``hash-mismatch`` for other bytes (``destination`` is then removed)."""
        if urlsplit(file.url).scheme not in ("http", "https"):
            raise SkipRun(SKIP_MISSING_FILE, f"{file.filename}: not an http(s) URL: {file.url}")
        attempt = 0
        while True:
            try:
                return self._once(file, destination)
            except _Transient as exc:
                destination.unlink(missing_ok=True)
                if attempt >= self.retries:
                    raise SkipRun(
                        SKIP_MISSING_FILE,
                        redact_urls(
                            f"{file.filename} could not be downloaded from {file.url} after "
                            f"{attempt + 1} tries: {exc}"
                        ),
                    ) from None
            except SkipRun:
                destination.unlink(missing_ok=True)
                raise
            self.sleep(self.backoff * 2**attempt)
            attempt += 1

    def _once(self, file: PlannedFile, destination: Path) -> int:
        request = urllib.request.Request(file.url)  # noqa: S310 (scheme checked above)
        digest = hashlib.sha256()
        received = 0
        try:
            with (
                self.opener.open(request, timeout=self.timeout) as response,
                destination.open("wb") as out,
            ):
                while chunk := response.read(CHUNK_BYTES):
                    digest.update(chunk)
                    out.write(chunk)
                    received += len(chunk)
                    if file.size and received > file.size:
                        raise _mismatch(file, f"more than the {file.size} bytes recorded")
        except urllib.error.HTTPError as exc:
            if exc.code in RETRY_STATUSES:
                raise _Transient(f"HTTP {exc.code} {exc.reason}") from None
            gone = "is gone" if exc.code in (403, 404) else "was refused"
            raise SkipRun(
                SKIP_MISSING_FILE,
                redact_urls(f"{file.filename} {gone} at {file.url} (HTTP {exc.code})"),
            ) from None
        except urllib.error.URLError as exc:
            raise _Transient(str(exc.reason)) from None
        except (http.client.HTTPException, OSError) as exc:
            # Resets, truncated bodies and timeouts mid-body (TimeoutError is an OSError).
            raise _Transient(f"connection broken after {received} bytes ({exc!r})") from None
        if file.size and received != file.size:
            raise _mismatch(file, f"{received} bytes, not the {file.size} recorded")
        if digest.hexdigest() != file.sha256:
            raise _mismatch(file, f"sha256 {digest.hexdigest()}, not the {file.sha256} recorded")
        return received


def _mismatch(file: PlannedFile, what: str) -> SkipRun:
    return SkipRun(
        SKIP_HASH_MISMATCH, redact_urls(f"{file.filename} at {file.url} holds other bytes: {what}")
    )
