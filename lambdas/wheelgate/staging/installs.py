"""What a test installed, as an evidence file (``wheelgate report --installed``) says it:
:mod:`wheelgate.staging.evidence_of_tests` puts it in the test's result in the manifest.

Three sources, told apart by their content:

- pip's installation report (``pip install --report REPORT.json ...``): each ``install`` entry
  downloaded as an archive gives ``download_info.archive_info.hashes.sha256`` (or, from an older
  pip, ``archive_info.hash`` ``sha256=<hex>``) and its file name, the last segment of
  ``download_info.url``, percent-decoded. pip checks the hash of what it installs, so this is
  what the test ran.
- a hash-pinned requirements file (``pip``/``uv pip install --require-hashes -r FILE``): the
  ``--hash=sha256:`` of each requirement. A requirement with several hashes allows several
  files (the cp311 and the cp312 wheel of one release) and says nothing of which one was
  installed, so such a file is refused, naming the line: only a requirement with exactly one
  hash is evidence (``wheelgate pins`` writes such files, for the test's target).
- the environment the test installed into (``wheelgate installed``, any installer): matched
  against the run's staged wheels by :mod:`wheelgate.staging.environment`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from wheelgate.core.manifest import (
    INSTALLED_FILENAME_PATTERN,
    InstalledFile,
    parse_distribution_filename,
)
from wheelgate.core.redact import redact_urls
from wheelgate.staging.environment import InstalledEnvironment, is_environment, read_environment

_SHA256 = re.compile(r"[0-9a-f]{64}")
_FILENAME = re.compile(INSTALLED_FILENAME_PATTERN)
#: ``--hash=<algorithm>:<value>`` or ``--hash <algorithm>:<value>``, as pip's requirement
#: options allow.
_HASH_OPTION = re.compile(r"--hash(?:=|\s+)([^\s:]*):(\S*)")
#: A comment starts a line or follows whitespace (pip's own rule).
_COMMENT = re.compile(r"(^|\s+)#.*$")
#: What gives exact evidence, for messages that refuse evidence which is not.
EXACT_EVIDENCE = (
    "give the test's pip installation report (pip install --report FILE), requirements "
    "pinning one file each (wheelgate pins, for the test's --target), or the environment the "
    "test installed into (wheelgate installed)"
)


@dataclasses.dataclass(frozen=True)
class Install:
    """One file a test's evidence says it installed: its SHA-256, and what the evidence tells
    of it besides (file name, normalized project, version, the URL it came from)."""

    sha256: str
    filename: str | None = None
    project: str | None = None
    version: str | None = None
    url: str | None = None

    @property
    def file(self) -> InstalledFile:
        """The manifest's record of it."""
        return InstalledFile(sha256=self.sha256, filename=self.filename)

    def describe(self) -> str:
        """The file as a message names it."""
        name = self.filename or (
            f"{self.project}=={self.version}" if self.project and self.version else "a file"
        )
        return f"{name} (sha256 {self.sha256}" + (f", from {self.url})" if self.url else ")")


def _sha256(value: str, where: str, source: Path) -> str:
    digest = value.lower()
    if not _SHA256.fullmatch(digest):
        raise ValueError(f"evidence {source}: {where}: sha256 {value!r} is not 64 hex digits")
    return digest


def _url_filename(url: str) -> str | None:
    """The file name an archive's URL ends with, percent-decoded; ``None`` when that is not
    one plain path segment."""
    name = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
    return name if _FILENAME.fullmatch(name) else None


def pip_report_installs(document: object) -> list[dict[str, Any]] | None:
    """The ``install`` entries of pip's installation report ``document``; ``None`` when it is
    not one."""
    installs = document.get("install") if isinstance(document, dict) else None
    if not isinstance(installs, list):
        return None
    return [item for item in installs if isinstance(item, dict)]


def archive_sha256(item: dict[str, Any]) -> tuple[str, str] | None:
    """``(sha256, url)`` of an ``install`` entry of a pip report downloaded as an archive,
    the hash as pip gives it; ``None`` for one installed from a directory or a VCS, or whose
    SHA-256 pip did not learn."""
    info = item.get("download_info")
    archive = info.get("archive_info") if isinstance(info, dict) else None
    if not isinstance(info, dict) or not isinstance(archive, dict):
        return None
    hashes = archive.get("hashes")
    digest = hashes.get("sha256") if isinstance(hashes, dict) else None
    if digest is None:
        algorithm, _, value = str(archive.get("hash", "")).partition("=")
        digest = value if algorithm == "sha256" else None
    return None if digest is None else (str(digest), str(info.get("url", "")))


def installs_from_pip_report(document: object, source: Path) -> list[Install]:
    """Every archive pip's installation report ``document`` says was installed, with its
    SHA-256. Entries installed from a directory or a VCS, or without a SHA-256, are left out:
    no staged file can be one of them. Raises ``ValueError`` when ``document`` is not a pip
    report, or names no archive with a SHA-256."""
    installs = pip_report_installs(document)
    if installs is None:
        raise ValueError(
            f"evidence {source} is not a pip installation report (no install list); "
            "write one with pip install --report FILE"
        )
    found = []
    for item in installs:
        archive = archive_sha256(item)
        if archive is None:
            continue
        digest, url = archive
        where = url.rsplit("/", 1)[-1] or url
        filename = _url_filename(url)
        project, version = _report_release(item, filename)
        found.append(
            Install(
                sha256=_sha256(digest, where, source),
                filename=filename,
                project=project,
                version=version,
                url=redact_urls(url) if url else None,
            )
        )
    if not found:
        raise ValueError(
            f"evidence {source} lists no archive with a SHA-256 that pip installed; write it "
            "with pip install --report in an environment without the packages"
        )
    return found


def _report_release(item: dict[str, Any], filename: str | None) -> tuple[str | None, str | None]:
    """The project (normalized) and version of a pip report's ``install`` entry: its
    ``metadata``, else its file name."""
    metadata = item.get("metadata")
    if isinstance(metadata, dict) and metadata.get("name") and metadata.get("version"):
        return canonicalize_name(str(metadata["name"])), str(metadata["version"])
    if filename is not None:
        try:
            dist = parse_distribution_filename(filename)
        except ValueError:
            return None, None
        return dist.project, str(dist.version)
    return None, None


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(first line number, line)`` of each logical line of a requirements file: lines ending
    in a backslash joined with the next (a comment line ends one), comments removed, as pip
    reads them."""
    start, parts = 0, []
    for number, line in enumerate(text.splitlines(), start=1):
        comment = _COMMENT.match(line) is not None
        if line.endswith("\\") and not comment:
            start = start or number
            parts.append(line[:-1])
            continue
        parts.append(" " + line if comment else line)
        yield start or number, _COMMENT.sub("", "".join(parts))
        start, parts = 0, []
    if parts:
        yield start, _COMMENT.sub("", "".join(parts))


def installs_from_requirements(text: str, source: Path) -> list[Install]:
    """The ``--hash=sha256:`` of each requirement of a hash-pinned requirements file.

    Raises ``ValueError`` naming the file, line and requirement for a requirement with more
    than one hash, or one of another algorithm, and for a project two lines pin to different
    files (each allows a file the test may not have installed); for a value that is not a
    SHA-256; and for a file without a hash.
    """
    found: dict[str, Install] = {}
    pinned: dict[str, tuple[str, str]] = {}
    for number, line in _logical_lines(text):
        hashes = _HASH_OPTION.findall(line)
        if not hashes:
            continue
        tokens = line.split()
        requirement = " ".join(t for t in tokens[: _first_option(tokens)])
        where = f"{source}:{number}: {requirement or line.strip()}"
        if len(hashes) > 1:
            raise ValueError(
                f"evidence {where} has {len(hashes)} hashes, so it does not say which file the "
                f"test installed; {EXACT_EVIDENCE}"
            )
        [(algorithm, value)] = hashes
        if algorithm != "sha256":
            raise ValueError(
                f"evidence {where} is pinned by {algorithm or 'no algorithm'}, not sha256; "
                "only a SHA-256 names a staged file"
            )
        digest = _sha256(value, f"line {number}", source)
        project = _project(requirement)
        earlier = pinned.setdefault(project, (digest, f"{source}:{number}"))
        if earlier[0] != digest:
            raise ValueError(
                f"evidence {where} pins {project} to another file than {earlier[1]} does, so "
                f"it does not say which one the test installed; {EXACT_EVIDENCE}"
            )
        found.setdefault(
            digest, Install(digest, None, project or None, _pinned_version(requirement))
        )
    if not found:
        raise ValueError(
            f"evidence {source} has no --hash=sha256: pins; give pip's installation report "
            "or the hash-pinned requirements the test installed with --require-hashes"
        )
    return list(found.values())


def _pinned_version(requirement: str) -> str | None:
    """The version of a ``name==version`` requirement (``None`` for any other)."""
    try:
        specifiers = list(Requirement(requirement).specifier)
    except InvalidRequirement:
        return None
    if (
        len(specifiers) == 1
        and specifiers[0].operator in ("==", "===")
        and "*" not in str(specifiers[0].version)
    ):
        return specifiers[0].version
    return None


def _first_option(tokens: list[str]) -> int:
    return next((i for i, token in enumerate(tokens) if token.startswith("-")), len(tokens))


def _project(requirement: str) -> str:
    """The normalized project name of a requirement; the text itself when it is a path or URL."""
    try:
        return canonicalize_name(Requirement(requirement).name)
    except InvalidRequirement:
        return requirement


def read_installs(path: Path) -> list[Install] | InstalledEnvironment:
    """What the evidence file at ``path`` says was installed: a pip installation report (a
    JSON object), an environment (``wheelgate installed``), whose files
    :class:`~wheelgate.staging.evidence.EvidenceJudge` finds, or a hash-pinned
    requirements file. Raises ``ValueError`` naming the file when it is absent, unreadable
    or none of these."""
    try:
        text = path.read_bytes().decode()
    except FileNotFoundError:
        raise ValueError(f"evidence {path}: no such file") from None
    except UnicodeDecodeError:
        raise ValueError(f"evidence {path} is not UTF-8 text") from None
    except OSError as exc:
        raise ValueError(f"evidence {path} cannot be read: {exc.strerror}") from None
    if not text.lstrip().startswith(("{", "[")):
        return installs_from_requirements(text, path)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"evidence {path} is not valid JSON: {exc}") from None
    if is_environment(document):
        return read_environment(document, str(path))
    return installs_from_pip_report(document, path)
