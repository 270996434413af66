"""Downloading one planned file for the bisect cache, through storage's verified download
(:meth:`~wheelgate.storage.http.HttpClient.download`: streamed, held to its SHA-256 and size,
retried on what may pass).

Every failure is a :class:`~wheelgate.bisect.run_installer.SkipRun`, never an error of the search: a
file that is not there (403, 404, another refusal, or still unreachable after the retries) is
``missing-file`` with its cause, other bytes than the history recorded are ``hash-mismatch``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from wheelgate.bisect.run_installer import (
    SKIP_HASH_MISMATCH,
    SKIP_MISSING_FILE,
    PlannedFile,
    SkipRun,
)
from wheelgate.core.redact import redact_urls
from wheelgate.storage.errors import StorageError
from wheelgate.storage.http import HttpClient, VerificationFailed


@dataclass
class Downloader:
    """Downloads a :class:`PlannedFile`'s URL into a file with ``client``."""

    client: HttpClient = field(default_factory=HttpClient)

    def download(self, file: PlannedFile, destination: Path) -> int:
        """Write ``file``'s bytes to ``destination`` and return their size. ``file.size`` 0
        means unknown (held to the SHA-256 alone). Raises :class:`SkipRun`: ``missing-file``
        for a refusal or a failure that lasted through the retries, ``hash-mismatch`` for
        other bytes than the history recorded (``destination`` is then removed)."""
        try:
            return self.client.download(
                file.url, destination, sha256=file.sha256, size=file.size or None
            )
        except VerificationFailed as exc:
            raise SkipRun(
                SKIP_HASH_MISMATCH, f"{file.filename} holds other bytes than recorded: {exc}"
            ) from None
        except (StorageError, ValueError) as exc:
            raise SkipRun(
                SKIP_MISSING_FILE, redact_urls(f"{file.filename} could not be downloaded: {exc}")
            ) from None
