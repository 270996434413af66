"""What a run's index offers, derived from objects, never from the run's pages.

A build job may write any page under its run, so a run page's links prove nothing. What the
run's index may offer is the run's staged files of the directory (listed by key, each with
S3's checksum: :func:`wheelgate.staging.staged_files.staged_sets`) and nightly's files of the
dependency closure of those files (nightly's listing pages and ``.metadata`` files, which the
promoter alone writes; the closure's roots are the METADATA read from the staged wheels
themselves, never their sidecars). A file of nightly is found at its key by its name
(:data:`~wheelgate.core.layout.NIGHTLY`), whatever link a page gives it.

:class:`RunOffer` answers, for a name, version and SHA-256 a test installed, whether those are
bytes the index offers (``offered``), other bytes of a release it offers (``foreign``), or a
release it does not offer at all (``not-offered``: a tool from another index, say).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from wheelgate.core.layout import NIGHTLY, STAGING
from wheelgate.core.manifest import ManifestFile, parse_distribution_filename
from wheelgate.core.wheelmeta import WheelMetadataError, read_core_metadata
from wheelgate.index.pages import ProjectPage
from wheelgate.staging.closure import nightly_closure
from wheelgate.storage.bucket import Bucket, S3RangeReader
from wheelgate.storage.errors import PreconditionFailed

Judgement = Literal["offered", "foreign", "not-offered"]


@dataclass(frozen=True)
class OfferedFile:
    """One file the run's index offers: its name, SHA-256, and where its bytes are."""

    filename: str
    sha256: str
    bucket: Bucket
    key: str

    @property
    def source(self) -> str:
        return f"s3://{self.bucket.name}/{self.key}"

    def reader(self) -> S3RangeReader:
        """Ranged reads of the object as it is now (pinned to its ETag); ``ValueError`` when
        it is gone since it was listed."""
        head = self.bucket.head(self.key)
        if head is None:
            raise ValueError(f"{self.source} is gone since it was listed")
        return self.bucket.range_reader(self.key, head.size, head.etag)


class RunOffer:
    """The files a run's index offers, by release (project and version)."""

    def __init__(self, files: Iterable[OfferedFile]) -> None:
        self._releases: dict[tuple[str, Version], dict[str, OfferedFile]] = defaultdict(dict)
        for file in files:
            dist = parse_distribution_filename(file.filename)
            self._releases[(dist.project, dist.version)].setdefault(file.sha256, file)

    def release(self, name: str, version: str) -> tuple[OfferedFile, ...]:
        """The files offered for ``name`` ``version`` (none when it offers no such release)."""
        try:
            parsed = Version(version)
        except InvalidVersion:
            return ()
        return tuple(self._releases.get((canonicalize_name(name), parsed), {}).values())

    def offers_project(self, name: str) -> bool:
        """Whether the index offers any version of project ``name``."""
        project = canonicalize_name(name)
        return any(p == project for p, _ in self._releases)

    def judge(self, name: str, version: str, sha256: str) -> Judgement:
        """Whether bytes ``sha256`` of ``name`` ``version`` are what the index offers."""
        files = self.release(name, version)
        if not files:
            return "not-offered"
        return "offered" if any(f.sha256 == sha256 for f in files) else "foreign"

    def describe(self, name: str, version: str) -> str:
        """The files offered for ``name`` ``version``, for a message."""
        return ", ".join(sorted(f.filename for f in self.release(name, version))) or "none"


def run_offer(
    staging: Bucket,
    nightly: Bucket,
    run_id: str,
    index: str,
    staged: Sequence[ManifestFile],
) -> RunOffer:
    """What run ``run_id``'s index of ``index`` offers (module docstring). Raises
    ``ValueError`` when a staged wheel cannot be read or changed since it was listed."""
    own = [
        OfferedFile(f.filename, f.sha256, staging, STAGING.artifact(run_id, index, f.filename))
        for f in staged
    ]
    wheels = [f for f in own if f.filename.endswith(".whl")]
    with ThreadPoolExecutor(max_workers=staging.limits.workers) as pool:
        metadata = list(pool.map(_staged_metadata, wheels))
    roots: dict[str, list[bytes]] = defaultdict(list)
    for file in own:
        roots.setdefault(parse_distribution_filename(file.filename).project, [])
    for file, content in zip(wheels, metadata, strict=True):
        roots[parse_distribution_filename(file.filename).project].append(content)
    pages = nightly_closure(nightly, index, roots)
    return RunOffer(own + list(nightly_files(nightly, index, pages)))


def nightly_files(
    nightly: Bucket, index: str, pages: Mapping[str, ProjectPage]
) -> list[OfferedFile]:
    """The files nightly's listing ``pages`` (project -> page) hold, each at its own key."""
    found = []
    for page in pages.values():
        found += [
            OfferedFile(e.filename, e.sha256, nightly, NIGHTLY.artifact(index, e.filename))
            for e in page.entries
        ]
    return found


def _staged_metadata(file: OfferedFile) -> bytes:
    """The METADATA of the staged wheel ``file``, read from the wheel itself (its identity
    checked), from the object version whose SHA-256 the listing gave."""
    try:
        return read_core_metadata(file.reader(), file.filename).content
    except WheelMetadataError as exc:
        raise ValueError(f"staged {exc}") from None
    except PreconditionFailed:
        raise ValueError(f"{file.source} changed while it was read") from None
