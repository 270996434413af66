"""What a test installed: the evidence ``wheelgate report --installed`` puts in the manifest.

Two sources, told apart by their content:

- pip's installation report (``pip install --report REPORT.json ...``): each ``install`` entry
  downloaded as an archive gives ``download_info.archive_info.hashes.sha256`` (or, from an older
  pip, ``archive_info.hash`` ``sha256=<hex>``) and its file name, the last segment of
  ``download_info.url``, percent-decoded. pip checks the hash of what it installs, so this is
  what the test ran.
- a hash-pinned requirements file (``pip``/``uv pip install --require-hashes -r FILE``): every
  ``--hash=sha256:`` value. It says what the test was allowed to install, which is weaker: a
  line may allow several files of which one was installed.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from wheelgate.core.layout import check_index
from wheelgate.core.manifest import (
    INSTALLED_FILENAME_PATTERN,
    MAX_INSTALLED_PER_TEST,
    InstalledFile,
)
from wheelgate.staging.stage import TestSpec

_SHA256 = re.compile(r"[0-9a-f]{64}")
_FILENAME = re.compile(INSTALLED_FILENAME_PATTERN)
#: ``--hash=sha256:<hex>`` or ``--hash sha256:<hex>``, as pip's requirement options allow.
_HASH_OPTION = re.compile(r"--hash(?:=|\s+)sha256:(\S*)")
#: A comment starts a line or follows whitespace (pip's own rule).
_COMMENT = re.compile(r"(^|\s)#.*$")


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


def installs_from_pip_report(document: object, source: Path) -> list[InstalledFile]:
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
        found.append(
            InstalledFile(sha256=_sha256(digest, where, source), filename=_url_filename(url))
        )
    if not found:
        raise ValueError(
            f"evidence {source} lists no archive with a SHA-256 that pip installed; write it "
            "with pip install --report in an environment without the packages"
        )
    return found


def installs_from_requirements(text: str, source: Path) -> list[InstalledFile]:
    """Every ``--hash=sha256:`` value of a hash-pinned requirements file. Raises
    ``ValueError`` for a value that is not a SHA-256, or a file without one."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for value in _HASH_OPTION.findall(_COMMENT.sub("", line)):
            found.append(InstalledFile(sha256=_sha256(value, f"line {number}", source)))
    if not found:
        raise ValueError(
            f"evidence {source} has no --hash=sha256: pins; give pip's installation report "
            "or the hash-pinned requirements the test installed with --require-hashes"
        )
    return found


def read_installs(path: Path) -> list[InstalledFile]:
    """What the evidence file at ``path`` says was installed: a pip installation report (a
    JSON object) or a hash-pinned requirements file. Raises ``ValueError`` naming the file
    when it is absent, unreadable or neither."""
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
    return installs_from_pip_report(document, path)


def with_installs(tests: Sequence[TestSpec], specs: Sequence[str]) -> list[TestSpec]:
    """``tests`` with what each ``DIR:NAME=PATH`` of ``specs`` says test NAME of DIR installed
    (each SHA-256 once). Raises ``ValueError`` for a spec that is malformed, names a test
    ``tests`` lacks, or whose file :func:`read_installs` refuses, and for a test with more
    than :data:`MAX_INSTALLED_PER_TEST` installs."""
    installs: dict[tuple[str, str], dict[str, InstalledFile]] = {
        (t.index, t.name): {i.sha256: i for i in t.installed} for t in tests
    }
    for spec in specs:
        head, sep, path = spec.partition("=")
        index, colon, name = head.partition(":")
        if not sep or not colon or not index or not name or not path:
            raise ValueError(f"{spec!r} is not DIR:NAME=PATH")
        check_index(index)
        if (index, name) not in installs:
            raise ValueError(f"{spec!r} names test {name!r} of {index}, which no --test gives")
        for installed in read_installs(Path(path)):
            installs[(index, name)].setdefault(installed.sha256, installed)
        if len(installs[(index, name)]) > MAX_INSTALLED_PER_TEST:
            raise ValueError(
                f"test {name!r} of {index} installed {len(installs[(index, name)])} files; "
                f"a manifest holds at most {MAX_INSTALLED_PER_TEST} a test"
            )
    return [
        dataclasses.replace(t, installed=tuple(installs[(t.index, t.name)].values())) for t in tests
    ]
