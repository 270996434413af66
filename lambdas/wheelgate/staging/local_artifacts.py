"""The local files a build gives ``wheelgate stage``: each checked, before anything is uploaded,
to be a distribution with readable core metadata, and hashed once."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from wheelgate.core.manifest import parse_distribution_filename
from wheelgate.core.wheelmeta import (
    CoreMetadata,
    FileRangeReader,
    WheelMetadataError,
    read_core_metadata,
)
from wheelgate.staging.errors import StageError

_HASH_CHUNK = 8 * 1024 * 1024


@dataclass(frozen=True)
class LocalArtifact:
    """A local file to stage. ``sha256`` is ``None`` until the file is hashed:
    :func:`~wheelgate.staging.stage.stage` hashes a file sent in one request before it is
    sent, and a larger one as it uploads."""

    path: Path
    filename: str
    project: str
    size: int
    sha256: str | None
    metadata: CoreMetadata | None

    def hashed(self) -> LocalArtifact:
        """This file with its SHA-256 (read now if not known yet)."""
        return self if self.sha256 else replace(self, sha256=sha256_file(self.path))

    @property
    def digest(self) -> str:
        """The SHA-256 of a hashed file."""
        if self.sha256 is None:
            raise ValueError(f"{self.filename} has not been hashed")
        return self.sha256


def sha256_file(path: Path, progress: Callable[[int], None] | None = None) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
            if progress:
                progress(len(chunk))
    return digest.hexdigest()


#: The endings of a distribution's file name: a wheel's, then an sdist's.
DISTRIBUTION_SUFFIXES = (".whl", ".tar.gz", ".zip")


def _expanded(
    paths: Sequence[Path], problems: list[str], ignored: Callable[[Path], None]
) -> list[Path]:
    """``paths`` with each directory replaced by the entries directly in it, in name order
    (``dist/``: the build's wheels and sdists). A hidden entry (``.gitignore``, which
    ``uv build -o DIR`` writes) is not a distribution: it is left out and passed to
    ``ignored``. A directory with no other entry, or an entry that is itself a directory, is a
    problem added to ``problems``; any other entry is checked as a file given by its path would
    be (so a file that is not a distribution is refused by name)."""
    files: list[Path] = []
    for path in paths:
        if not path.is_dir():
            files.append(path)
            continue
        entries = []
        for entry in sorted(path.iterdir()):
            if entry.name.startswith("."):
                ignored(entry)
            else:
                entries.append(entry)
        if not entries:
            problems.append(f"{path}: an empty directory; no wheels or sdists in it")
        for entry in entries:
            if entry.is_dir():
                problems.append(
                    f"{entry}: a directory in {path}; give it as an argument of its own"
                )
            else:
                files.append(entry)
    return files


def _not_a_distribution(name: str) -> str | None:
    """What is wrong with ``name`` as a distribution's file name, judged by its ending first
    (so a file that is no distribution is not called a bad name), ``None`` when nothing."""
    if not name.endswith(DISTRIBUTION_SUFFIXES):
        return "not a wheel or sdist file name (.whl, .tar.gz, .zip)"
    try:
        parse_distribution_filename(name)
    except ValueError as exc:
        return str(exc)
    return None


def inspect_files(
    paths: Sequence[Path], *, ignored: Callable[[Path], None] = lambda _path: None
) -> list[LocalArtifact]:
    """Check every file before anything is uploaded: it exists, has a valid distribution name,
    and (for a wheel) readable core metadata. A directory stands for the files directly in it
    (every one must be a wheel or an sdist, but hidden ones, which are left out and passed to
    ``ignored``). Reads a wheel's zip directory and METADATA, not
    its whole file (:func:`~wheelgate.staging.stage.stage` hashes each file once). Raises
    :class:`StageError` listing all problems."""
    problems: list[str] = []
    artifacts: list[LocalArtifact] = []
    seen: set[str] = set()
    for path in _expanded(paths, problems, ignored):
        if not path.is_file():
            problems.append(f"{path}: no such file")
            continue
        wrong = _not_a_distribution(path.name)
        if wrong is not None:
            problems.append(f"{path}: {wrong}")
            continue
        dist = parse_distribution_filename(path.name)
        if path.name in seen:
            problems.append(f"{path}: a file named {path.name} is already in this upload")
            continue
        seen.add(path.name)
        size = path.stat().st_size
        metadata = None
        if dist.kind == "wheel":
            try:
                with path.open("rb") as handle:
                    metadata = read_core_metadata(FileRangeReader(handle, size), path.name)
            except WheelMetadataError as exc:
                problems.append(f"{path}: {exc}")
                continue
        artifacts.append(LocalArtifact(path, path.name, dist.project, size, None, metadata))
    if problems:
        raise StageError("cannot stage:\n  " + "\n  ".join(problems))
    if not artifacts:
        raise StageError("cannot stage: no files given")
    return artifacts
