"""Which released wheel an installed distribution is, judged against the wheel's bytes
(``wheelgate verify --installed``).

An environment says which files are on disk, not which wheel they came from, and an installed
RECORD is the wheel's own claim, copied by the installer. So a distribution is matched with a
released wheel only through that wheel's bytes: each candidate (a wheel of the directory's
pages with the distribution's name and version) is downloaded, held to the SHA-256 the page
lists, its RECORD held to its members (:func:`wheelgate.staging.wheelbytes.verified_archive`),
and the installed files compared with that verified content
(:func:`wheelgate.core.wheelrecord.differences`), as ``wheelgate report`` judges an
environment (:mod:`wheelgate.staging.evidence`). The caller then checks the matched wheel's
verdict.

A candidate is read whole into memory (``Fetch`` returns its bytes): the command verifies one
distribution, and its wheels are what the user already installed.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urljoin

from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from wheelgate.core.layout import VERDICT_SUFFIX
from wheelgate.core.wheelmembers import RecordMismatch
from wheelgate.core.wheelrecord import InstalledDistribution, RecordError, Scheme, differences
from wheelgate.index.simple_api import PageFormatError, read_project_page
from wheelgate.staging.wheelbytes import WheelUnreadable, verified_archive

#: Reads a URL: its body, or ``None`` when there is nothing there.
Fetch = Callable[[str], bytes | None]


@dataclass(frozen=True)
class ReleasedWheel:
    """A wheel a directory's page lists: its name, URL, SHA-256 and verdict's URL."""

    filename: str
    url: str
    sha256: str
    verdict_url: str


@dataclass(frozen=True)
class Comparison:
    """What became of one candidate: ``differences`` between it and the installed files
    (empty: they are its verified content), or ``refused`` (it could not be verified)."""

    wheel: ReleasedWheel
    differences: list[str] = field(default_factory=list)
    refused: str | None = None

    @property
    def matches(self) -> bool:
        return self.refused is None and not self.differences


def released_wheels(page: bytes, page_url: str, name: str, version: str) -> list[ReleasedWheel]:
    """The wheels of ``name`` ``version`` a PEP 691 project page (``page``, read from
    ``page_url``) lists with a SHA-256. Raises ``ValueError`` when it is not such a page."""
    try:
        files = read_project_page(page).files
    except PageFormatError as exc:
        raise ValueError(f"{page_url} is {exc}") from None
    wanted = (canonicalize_name(name), _version(version))
    found = []
    for listed in files:
        try:
            project, released, _, _ = parse_wheel_filename(listed.filename)
        except ValueError:
            continue  # an sdist, or a file that is no wheel
        if listed.sha256 is None or (project, released) != wanted:
            continue
        url = urljoin(page_url, listed.url)
        verdict = listed.verdict_url
        verdict_url = urljoin(page_url, verdict) if verdict else url + VERDICT_SUFFIX
        found.append(ReleasedWheel(listed.filename, url, listed.sha256, verdict_url))
    return found


def _version(version: str) -> Version | str:
    try:
        return Version(version)
    except InvalidVersion:
        return version


def compare(
    installed: InstalledDistribution,
    scheme: Scheme,
    wheel: ReleasedWheel,
    fetch: Fetch,
) -> Comparison:
    """Download ``wheel``, hold it to its listed SHA-256 and its RECORD to its members, and
    compare ``installed`` (in an environment with ``scheme``) with that verified content."""
    raw = fetch(wheel.url)
    if raw is None:
        return Comparison(wheel, refused=f"{wheel.url} is gone")
    digest = hashlib.sha256(raw).hexdigest()
    if digest != wheel.sha256:
        return Comparison(
            wheel,
            refused=f"{wheel.url} holds other bytes (sha256 {digest}) than its page lists "
            f"({wheel.sha256})",
        )
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            verified = verified_archive(archive, wheel.filename, digest)
        found = differences(installed, verified.content, scheme, verified.script_body_sha256)
    except (RecordMismatch, WheelUnreadable, RecordError) as exc:
        return Comparison(wheel, refused=str(exc))
    except (zipfile.BadZipFile, zlib.error, NotImplementedError, EOFError) as exc:
        return Comparison(wheel, refused=f"{wheel.filename} is not a readable wheel: {exc}")
    return Comparison(wheel, differences=found)


def compare_all(
    installed: InstalledDistribution,
    scheme: Scheme,
    wheels: Sequence[ReleasedWheel],
    fetch: Fetch,
) -> list[Comparison]:
    """:func:`compare` ``installed`` with each of ``wheels`` (each downloaded once)."""
    seen: dict[str, Comparison] = {}
    for wheel in wheels:
        if wheel.url not in seen:
            seen[wheel.url] = compare(installed, scheme, wheel, fetch)
    return list(seen.values())
