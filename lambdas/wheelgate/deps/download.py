"""Downloads of the files a ``deps.yml`` names: over https only (redirects too, and only to
``validation.hosts``), each held to its size and SHA-256, with retries and backoff on transient
errors. :class:`Fetcher` takes its ``urllib`` opener; nothing here reads the environment."""

from __future__ import annotations

import hashlib
import http.client
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

from wheelgate.core.redact import redact_urls

#: Download read size: large enough for throughput, small enough to keep memory flat.
CHUNK_BYTES = 1024 * 1024
#: Statuses worth another try: timeouts, throttling and server errors.
_RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
#: Told each entry's progress: its name, the bytes so far and the size (``None``: unknown).
Progress = Callable[[str, int, int | None], None]


class DownloadError(Exception):
    """A download that failed for good: refused (4xx), wrong size or SHA-256, or still failing
    after the retries. ``transient`` tells whether the last failure was worth retrying."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        # A download URL may carry a signed-query token or a password: never in a message.
        super().__init__(redact_urls(message))
        self.transient = transient


class _HttpsOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follow redirects (download hosts send files from CDNs) but never off https, and, given
    ``hosts`` (``validation.hosts``), never to another host."""

    def __init__(self, hosts: frozenset[str] | None = None) -> None:
        super().__init__()
        self.hosts = hosts

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        if not newurl.startswith("https://"):
            raise urllib.error.HTTPError(
                req.full_url, code, f"redirect to non-https {newurl!r} refused", headers, fp
            )
        host = urlsplit(newurl).hostname
        if self.hosts is not None and host not in self.hosts:
            raise urllib.error.HTTPError(
                req.full_url,
                code,
                f"redirect to {newurl!r} refused: host {host!r} is not in validation.hosts",
                headers,
                fp,
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def https_opener(
    ca_file: str | None = None, hosts: frozenset[str] | None = None
) -> urllib.request.OpenerDirector:
    """An opener verifying certificates (system store, ``SSL_CERT_FILE``, or ``ca_file``)
    that follows redirects only to https and, given ``hosts``, only to those hosts."""
    import ssl

    context = ssl.create_default_context(cafile=ca_file)
    return urllib.request.build_opener(
        urllib.request.HTTPSHandler(context=context), _HttpsOnlyRedirects(hosts)
    )


@dataclass
class Fetcher:
    """Downloads with retries and exponential backoff on transient errors (connection reset,
    timeouts, truncated bodies, 408/429/5xx). ``timeout`` bounds each connect and read."""

    opener: urllib.request.OpenerDirector
    timeout: float = 60.0
    retries: int = 4
    backoff: float = 0.5
    sleep: Callable[[float], None] = time.sleep
    user_agent: str = "wheelgate-deps"

    def download(
        self,
        url: str,
        destination: Path,
        *,
        sha256: str,
        size: int | None,
        progress: Callable[[int, int | None], None] | None = None,
    ) -> int:
        """Stream ``url`` into ``destination``; return its size.

        Raises :class:`DownloadError` if the bytes are not ``size`` long or do not hash to
        ``sha256`` (the file is then removed), or on a failure that persists after the retries.
        """
        attempt = 0
        while True:
            try:
                return self._once(url, destination, sha256, size, progress)
            except DownloadError as exc:
                destination.unlink(missing_ok=True)
                if not exc.transient or attempt >= self.retries:
                    if exc.transient:
                        raise DownloadError(
                            f"{exc} (gave up after {attempt + 1} attempts)", transient=True
                        ) from exc
                    raise
            delay = self.backoff * 2**attempt * random.uniform(0.5, 1.0)  # noqa: S311
            self.sleep(delay)
            attempt += 1

    def _once(
        self,
        url: str,
        destination: Path,
        sha256: str,
        size: int | None,
        progress: Callable[[int, int | None], None] | None,
    ) -> int:
        request = urllib.request.Request(url, headers={"User-Agent": self.user_agent})  # noqa: S310
        digest = hashlib.sha256()
        received = 0
        try:
            with self.opener.open(request, timeout=self.timeout) as response:
                announced = response.headers.get("Content-Length")
                expected = size if size is not None else (int(announced) if announced else None)
                if size is not None and announced and int(announced) != size:
                    raise DownloadError(
                        f"{url}: server announces {announced} bytes, deps.yml says {size}"
                    )
                with destination.open("wb") as out:
                    while chunk := response.read(CHUNK_BYTES):
                        digest.update(chunk)
                        out.write(chunk)
                        received += len(chunk)
                        if size is not None and received > size:
                            raise DownloadError(f"{url}: more than the {size} bytes expected")
                        if progress:
                            progress(received, expected)
                if announced and received != int(announced):
                    raise DownloadError(
                        f"{url}: connection closed after {received} of {announced} bytes",
                        transient=True,
                    )
        except urllib.error.HTTPError as exc:
            raise DownloadError(
                f"{url}: HTTP {exc.code} {exc.reason}", transient=exc.code in _RETRY_STATUSES
            ) from exc
        except urllib.error.URLError as exc:
            transient = isinstance(exc.reason, OSError)
            raise DownloadError(f"{url}: {exc.reason}", transient=transient) from exc
        except TimeoutError as exc:
            raise DownloadError(
                f"{url}: timed out after {self.timeout:g} s", transient=True
            ) from exc
        except (http.client.HTTPException, OSError) as exc:
            # Resets, truncated bodies and TLS errors mid-body (ssl.SSLError is an OSError).
            raise DownloadError(
                f"{url}: connection broken after {received} bytes ({exc!r})", transient=True
            ) from exc
        if size is not None and received != size:
            raise DownloadError(f"{url}: got {received} bytes, deps.yml says {size}")
        if digest.hexdigest() != sha256:
            raise DownloadError(
                f"{url}: SHA-256 is {digest.hexdigest()}, deps.yml says {sha256}; not uploaded"
            )
        return received
