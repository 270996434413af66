"""Downloads of the files a ``deps.yml`` names, through storage's verified download
(:class:`~wheelgate.storage.http.HttpClient`): over https only (redirects too, and only to
``validation.hosts``), each held to its size and SHA-256, with retries and backoff on
transient errors. Nothing here reads the environment."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from wheelgate.core.redact import redact_urls
from wheelgate.storage.errors import StorageError
from wheelgate.storage.http import DownloadProgress, HttpClient, VerificationFailed

#: Told each entry's progress: its name, the bytes so far and the size (``None``: unknown).
Progress = Callable[[str, int, int | None], None]


class DownloadError(Exception):
    """A download that failed for good: refused (4xx, a redirect off https or to another
    host), wrong size or SHA-256, or still failing after the retries."""

    def __init__(self, message: str) -> None:
        # A download URL may carry a signed-query token or a password: never in a message.
        super().__init__(redact_urls(message))


def https_client(
    ca_file: str | None = None,
    hosts: frozenset[str] | None = None,
    *,
    timeout: float = 60.0,
    retries: int = 4,
    backoff: float = 0.5,
) -> HttpClient:
    """A client verifying certificates (system store, ``SSL_CERT_FILE``, or ``ca_file``)
    that reads and follows redirects only over https and, given ``hosts``, only to those
    hosts; ``retries`` more tries after a transient failure."""
    return HttpClient(
        attempts=retries + 1,
        timeout=timeout,
        backoff=backoff,
        https_only=True,
        hosts=hosts,
        ca_file=ca_file,
        user_agent="wheelgate-deps",
    )


@dataclass
class Fetcher:
    """Downloads with ``client``, each failure a :class:`DownloadError`."""

    client: HttpClient

    def download(
        self,
        url: str,
        destination: Path,
        *,
        sha256: str,
        size: int | None,
        progress: DownloadProgress | None = None,
    ) -> int:
        """Stream ``url`` into ``destination``; return its size.

        Raises :class:`DownloadError` if the bytes are not ``size`` long or do not hash to
        ``sha256`` (the file is then removed), or on a failure that persists after the retries.
        """
        try:
            return self.client.download(
                url, destination, sha256=sha256, size=size, progress=progress
            )
        except (StorageError, VerificationFailed, ValueError) as exc:
            raise DownloadError(str(exc)) from exc
