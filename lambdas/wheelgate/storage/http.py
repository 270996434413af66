"""The one HTTP client: public documents and verified downloads, on urllib3 and its ``Retry``.

What ``wheelgate verify`` reads, the run history from the staging distribution, the files a
bisect installs and the files ``wheelgate deps`` mirrors all come through :class:`HttpClient`.
Throttling (429), server errors (5xx), timeouts and connections dropped before or during the
response are retried with exponential backoff, ``attempts`` tries in all for one read (a body
that breaks off is read again from the start).

Errors are translated as the S3 adapters' are, and no urllib3 error leaves this module: a
missing document is ``None`` (a missing download :class:`NotFound`); what still fails after the
tries is :class:`StorageUnavailable`, a refusal (another 4xx, a certificate, a redirect the
client may not follow) :class:`AccessError`; downloaded bytes that are not the ones expected
are :class:`VerificationFailed`. URLs in messages are redacted.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar
from urllib.parse import urljoin, urlsplit

import urllib3
from urllib3.exceptions import (
    HTTPError as Urllib3Error,
)
from urllib3.exceptions import (
    IncompleteRead,
    MaxRetryError,
    ProtocolError,
    ReadTimeoutError,
    SSLError,
)
from urllib3.util import Retry, Timeout

from wheelgate.core.redact import redact_urls
from wheelgate.storage.errors import AccessError, StorageError, StorageUnavailable

#: Seconds a connect or a read may wait for the server.
TIMEOUT_SECONDS = 60.0
#: Tries per read, the first included.
DEFAULT_ATTEMPTS = 5
#: Seconds of backoff: the first retry goes at once, the n-th after ``backoff * 2 ** (n - 1)``
#: seconds plus up to ``backoff`` of jitter (urllib3's ``Retry``).
DEFAULT_BACKOFF = 0.25
#: Statuses worth another try: timeouts, throttling and server errors.
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
#: Statuses that say there is no such object (S3 answers 403 for a missing key to a reader
#: without ListBucket, as CloudFront is).
MISSING_STATUSES = frozenset({403, 404})
#: Read size: large enough for throughput, small enough to keep memory flat.
CHUNK_BYTES = 1024 * 1024
#: Redirects followed per read.
MAX_REDIRECTS = 10

T = TypeVar("T")
#: Told a download's progress: the bytes so far and the size (``None``: unknown).
DownloadProgress = Callable[[int, int | None], None]


class VerificationFailed(ValueError):
    """Downloaded bytes that are not the ones expected (another size or SHA-256); the
    destination has been removed."""


class NotFound(AccessError):
    """The server says there is no such object (403 or 404)."""


def _endpoint(url: str) -> str:
    parts = urlsplit(url)
    return redact_urls(f"{parts.scheme}://{parts.netloc}")


@dataclass
class HttpClient:
    """GETs with retries. ``attempts`` tries per read, ``timeout`` seconds per connect and
    read, ``backoff`` (see :data:`DEFAULT_BACKOFF`). ``https_only`` refuses plain http, for
    the read and its redirects; ``hosts`` (when given) are the only hosts a redirect may lead
    to; ``ca_file`` replaces the system's certificates. Only ``User-Agent`` and ``Accept``
    are sent, to any host: no credentials to leak on a redirect."""

    attempts: int = DEFAULT_ATTEMPTS
    timeout: float = TIMEOUT_SECONDS
    backoff: float = DEFAULT_BACKOFF
    https_only: bool = False
    hosts: frozenset[str] | None = None
    ca_file: str | None = None
    user_agent: str = "wheelgate"
    _pool: urllib3.PoolManager = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, not {self.attempts}")
        self._pool = urllib3.PoolManager(
            maxsize=16, cert_reqs="CERT_REQUIRED", ca_certs=self.ca_file
        )

    def get(self, url: str, *, accept: str | None = None) -> bytes | None:
        """The body at ``url``, or ``None`` when there is no such object (403, 404)."""
        try:
            return self._read(url, lambda r: r.read(decode_content=False), accept)
        except NotFound:
            return None

    def sha256_of(self, url: str) -> str | None:
        """SHA-256 (hex) of the body at ``url``, read in chunks; ``None`` when it is missing."""

        def digest(response: urllib3.BaseHTTPResponse) -> str:
            hashed = hashlib.sha256()
            for chunk in response.stream(CHUNK_BYTES, decode_content=False):
                hashed.update(chunk)
            return hashed.hexdigest()

        try:
            return self._read(url, digest, None)
        except NotFound:
            return None

    def download(
        self,
        url: str,
        destination: Path,
        *,
        sha256: str,
        size: int | None = None,
        progress: DownloadProgress | None = None,
    ) -> int:
        """Stream ``url`` into ``destination``, held to ``size`` (``None``: unknown) and
        ``sha256``; return the size. Raises :class:`VerificationFailed` for other bytes,
        :class:`AccessError` for a refusal (:class:`NotFound` for a 403 or 404: a file
        that must be there), :class:`StorageUnavailable` for what kept failing,
        ``ValueError`` for a URL that is not http(s); ``destination`` is then removed."""

        def consume(response: urllib3.BaseHTTPResponse) -> int:
            announced = response.headers.get("Content-Length")
            if size is not None and announced and int(announced) != size:
                raise self._mismatch(url, f"the server announces {announced} bytes", size)
            expected = size if size is not None else int(announced) if announced else None
            digest, received = hashlib.sha256(), 0
            with destination.open("wb") as out:
                for chunk in response.stream(CHUNK_BYTES, decode_content=False):
                    digest.update(chunk)
                    out.write(chunk)
                    received += len(chunk)
                    if size is not None and received > size:
                        raise self._mismatch(url, "more bytes", size)
                    if progress:
                        progress(received, expected)
            if size is not None and received != size:
                raise self._mismatch(url, f"{received} bytes", size)
            if digest.hexdigest() != sha256:
                raise self._mismatch(url, f"SHA-256 is {digest.hexdigest()}", sha256)
            return received

        try:
            return self._read(url, consume, None)
        except BaseException:
            destination.unlink(missing_ok=True)
            raise

    @staticmethod
    def _mismatch(url: str, found: str, expected: object) -> VerificationFailed:
        return VerificationFailed(redact_urls(f"{url}: {found}, not the {expected} expected"))

    def _read(
        self, url: str, consume: Callable[[urllib3.BaseHTTPResponse], T], accept: str | None
    ) -> T:
        """``consume`` of the response at ``url``, tried again while the failure may pass.
        Raises :class:`NotFound` for a missing object."""
        self._check(url, url)
        retry = Retry(
            total=self.attempts - 1,
            other=0,
            status_forcelist=RETRY_STATUSES,
            allowed_methods=frozenset({"GET"}),
            backoff_factor=self.backoff,
            backoff_jitter=self.backoff,
        )
        headers = {"User-Agent": self.user_agent} | ({"Accept": accept} if accept else {})
        try:
            while True:
                response = self._open(url, headers, retry)
                try:
                    if response.status >= 400:
                        response.drain_conn()
                        raise self._refused(url, response)
                    return consume(response)
                except (ProtocolError, ReadTimeoutError, IncompleteRead) as exc:
                    # The body broke off: read it again from the start, on the same budget.
                    response.close()
                    broken = exc if not isinstance(exc, IncompleteRead) else ProtocolError(exc)
                    retry = (response.retries or retry).increment("GET", url, error=broken)
                    retry.sleep()
                except BaseException:
                    response.close()  # never hand the pool a connection with a body unread
                    raise
                finally:
                    response.release_conn()
        except MaxRetryError as exc:
            raise self._gave_up(url, exc) from exc
        except Urllib3Error as exc:
            raise StorageUnavailable(
                operation="GET",
                target=redact_urls(url),
                endpoint=_endpoint(url),
                error=type(exc).__name__,
                detail=redact_urls(str(exc)),
            ) from exc

    def _open(self, url: str, headers: dict[str, str], retry: Retry) -> urllib3.BaseHTTPResponse:
        """The response at ``url`` after the redirects this client may follow."""
        first = url
        for _ in range(MAX_REDIRECTS + 1):
            response = self._pool.urlopen(
                "GET",
                url,
                headers=headers,
                retries=retry,
                redirect=False,
                preload_content=False,
                timeout=Timeout(connect=self.timeout, read=self.timeout),
            )
            location = response.get_redirect_location()
            if not location:
                return response
            response.drain_conn()
            response.release_conn()
            retry = response.retries or retry
            url = urljoin(url, location)
            self._check(first, url)
        raise AccessError(
            operation="GET",
            target=redact_urls(first),
            endpoint=_endpoint(first),
            error="too many redirects",
            detail=f"more than {MAX_REDIRECTS}",
        )

    def _check(self, url: str, target: str) -> None:
        """Refuse to GET ``target`` (``url`` itself or where it redirects)."""
        parts = urlsplit(target)
        if parts.scheme not in ("http", "https"):
            raise ValueError(redact_urls(f"not an http(s) URL: {target!r}"))
        redirect = target != url
        why = ""
        if self.https_only and parts.scheme != "https":
            why = f"redirect to non-https {target!r} refused" if redirect else "not https"
        elif redirect and self.hosts is not None and parts.hostname not in self.hosts:
            why = f"redirect to {target!r} refused: host {parts.hostname!r} is not an allowed host"
        if why:
            raise AccessError(
                operation="GET",
                target=redact_urls(url),
                endpoint=_endpoint(url),
                error="redirect not followed" if redirect else "refused",
                detail=redact_urls(why),
            )

    def _refused(self, url: str, response: urllib3.BaseHTTPResponse) -> StorageError:
        kind: type[StorageError] = AccessError
        if response.status >= 500:
            kind = StorageUnavailable
        elif response.status in MISSING_STATUSES:
            kind = NotFound
        return kind(
            operation="GET",
            target=redact_urls(url),
            endpoint=_endpoint(url),
            error=f"HTTP {response.status}",
            detail=response.reason or "",
        )

    def _gave_up(self, url: str, exc: MaxRetryError) -> StorageError:
        reason = exc.reason or exc
        kind: type[StorageError] = (
            AccessError if isinstance(reason, SSLError) else StorageUnavailable
        )
        tries = f"gave up after {self.attempts} attempts: " if kind is StorageUnavailable else ""
        return kind(
            operation="GET",
            target=redact_urls(url),
            endpoint=_endpoint(url),
            error=type(reason).__name__,
            detail=redact_urls(f"{tries}{reason}"),
        )


@functools.cache
def default_client() -> HttpClient:
    """The client of :func:`fetch` and :func:`sha256_of`: the defaults, the system's
    certificates."""
    return HttpClient()


def fetch(url: str, *, accept: str | None = None) -> bytes | None:
    """The body at ``url``, or ``None`` when there is no such object."""
    return default_client().get(url, accept=accept)


def sha256_of(url: str) -> str | None:
    """SHA-256 (hex) of the body at ``url``, read in chunks; ``None`` when it is missing."""
    return default_client().sha256_of(url)
