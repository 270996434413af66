"""Whether an installed distribution is exactly a wheel's content: the wheel's own RECORD
against the files an installer put in an environment. Pure.

A wheel's ``.dist-info/RECORD`` lists each of its files with the SHA-256 of its bytes. An
installer (pip, uv, any other) copies the files into the environment's scheme: the wheel's root
into purelib or platlib (``Root-Is-Purelib``), ``<name>-<version>.data/<key>/`` into the
scheme's ``purelib``, ``platlib``, ``scripts``, ``headers`` (under a directory named after the
project) or ``data``. An installed distribution is the wheel's content when every file the
wheel's RECORD lists is in the environment with those bytes, and the installer added nothing
else but what installers add:

- ``INSTALLER``, ``REQUESTED``, ``direct_url.json``, ``uv_cache.json`` and its own ``RECORD``
  in the ``.dist-info`` directory (never compared, on either side);
- a script for each ``console_scripts``/``gui_scripts`` entry point (generated from
  ``entry_points.txt``, which is compared);
- ``__pycache__/<stem>.*.pyc`` beside each ``<stem>.py`` of the wheel (byte-compiled from the
  compared source);
- the first line of a ``.data/scripts/`` file that starts with ``#!python``, which installers
  rewrite to the environment's interpreter: the rest of such a file is compared.

The hashes on the installed side are of the bytes on disk (:mod:`wheelgate.staging.environment`
hashes them), never the installed RECORD's, which installers copy from the wheel: a wheel whose
RECORD lies about its files does not match what it installed.
"""

from __future__ import annotations

import base64
import binascii
import csv
import io
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from email.parser import BytesHeaderParser

from packaging.utils import canonicalize_name
from pydantic import BaseModel, ConfigDict, Field

#: ``.dist-info`` files installers write or rewrite themselves.
INSTALLER_FILES = frozenset(
    {"INSTALLER", "REQUESTED", "direct_url.json", "uv_cache.json", "RECORD"}
)
#: The ``.data`` keys of the wheel format and the scheme path each goes to.
DATA_KEYS = ("purelib", "platlib", "scripts", "headers", "data")
#: The first line of a script that installers rewrite to the environment's interpreter.
PYTHON_SHEBANG = b"#!python"
#: How many differences a mismatch names.
NAMED_DIFFERENCES = 5


class RecordError(ValueError):
    """A wheel's RECORD that cannot be read or compared."""


@dataclass(frozen=True)
class RecordRow:
    """One RECORD line: a path inside the wheel and the SHA-256 (hex) of its bytes; ``None``
    for RECORD itself (and signature files), which list no hash."""

    path: str
    sha256: str | None


class Scheme(BaseModel):
    """Where an installer put each part of a wheel in one environment, as paths relative to
    the environment's prefix (POSIX, ``""`` for the prefix itself); a path outside the prefix
    is absolute. ``headers`` is the directory that holds one directory per project."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    purelib: str
    platlib: str
    scripts: str
    headers: str
    data: str


class InstalledDistribution(BaseModel):
    """One distribution of an environment as installed: its name and version (METADATA), the
    SHA-256 of the bytes on disk of every file its installed RECORD lists (``None``: listed but
    absent), keyed like :class:`Scheme` paths; for files in the scripts directory, the SHA-256
    of what follows their interpreter line; and its entry-point script names."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    version: str = Field(min_length=1)
    dist_info: str = Field(min_length=1)
    files: dict[str, str | None]
    script_bodies: dict[str, str] = Field(default_factory=dict)
    entry_points: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class WheelContent:
    """What a wheel says it holds: its file name, RECORD rows, the name of its ``.dist-info``
    directory and its WHEEL ``Root-Is-Purelib``."""

    filename: str
    dist_info: str
    rows: tuple[RecordRow, ...]
    root_is_purelib: bool


def record_sha256(value: str, where: str) -> str | None:
    """Hex SHA-256 of a RECORD hash field (``sha256=<urlsafe base64, unpadded>``); ``None`` for
    an empty field. Raises :class:`RecordError` for another algorithm or a bad value."""
    if not value:
        return None
    algorithm, _, encoded = value.partition("=")
    if algorithm != "sha256":
        raise RecordError(f"{where}: hash {algorithm!r} is not sha256; it cannot be compared")
    try:
        digest = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except (binascii.Error, ValueError):
        digest = b""
    if len(digest) != 32:
        raise RecordError(f"{where}: {value!r} is not a SHA-256")
    return digest.hex()


def parse_record(content: bytes, source: str) -> tuple[RecordRow, ...]:
    """The rows of RECORD ``content`` (CSV: path, hash, size). Raises :class:`RecordError`
    naming ``source`` and the line for a row that is not one."""
    try:
        text = content.decode()
    except UnicodeDecodeError:
        raise RecordError(f"{source}: RECORD is not UTF-8") from None
    rows = []
    for number, fields in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not fields:
            continue
        if len(fields) != 3 or not fields[0]:
            raise RecordError(f"{source}: RECORD line {number} is not path,hash,size")
        rows.append(RecordRow(fields[0], record_sha256(fields[1], f"{source}: {fields[0]}")))
    return tuple(rows)


def wheel_content(filename: str, dist_info: str, record: bytes, wheel_file: bytes) -> WheelContent:
    """:class:`WheelContent` from a wheel's RECORD and WHEEL bytes (``dist_info``: the
    ``.dist-info`` directory both are in)."""
    purelib = BytesHeaderParser().parsebytes(wheel_file).get("Root-Is-Purelib", "true")
    return WheelContent(
        filename=filename,
        dist_info=dist_info,
        rows=parse_record(record, filename),
        root_is_purelib=str(purelib).strip().lower() == "true",
    )


def script_body(content: bytes) -> bytes | None:
    """What follows a ``#!python`` first line (what installers keep of such a script);
    ``None`` when the script does not start with one."""
    if not content.startswith(PYTHON_SHEBANG):
        return None
    _, newline, rest = content.partition(b"\n")
    return rest if newline else b""


def _join(base: str, path: str) -> str:
    return posixpath.normpath(posixpath.join(base, path)) if base else posixpath.normpath(path)


def differences(
    installed: InstalledDistribution,
    wheel: WheelContent,
    scheme: Scheme,
    script_body_sha256: Callable[[str], str | None],
) -> list[str]:
    """What keeps ``installed`` from being exactly ``wheel``'s content in an environment with
    ``scheme`` (see the module docstring); empty when it is. ``script_body_sha256(path)`` is
    the SHA-256 of what follows the ``#!python`` line of the wheel's member ``path`` (``None``
    when it has none); it is asked only about a script whose bytes differ.

    Raises :class:`RecordError` for a wheel path that no installer could place (an unknown
    ``.data`` key, an absolute path or one with a ``..`` segment).
    """
    data_dir = wheel.dist_info.removesuffix(".dist-info") + ".data"
    root = scheme.purelib if wheel.root_is_purelib else scheme.platlib
    project = canonicalize_name(installed.name)
    headers = {}
    for path in installed.files:
        if path.startswith(scheme.headers.rstrip("/") + "/"):
            directory, _, rest = path[len(scheme.headers.rstrip("/")) + 1 :].partition("/")
            if canonicalize_name(directory) == project:
                headers[rest] = path
    expected: dict[str, RecordRow] = {}
    for row in wheel.rows:
        if row.sha256 is None or _is_installer_file(row.path, wheel.dist_info):
            continue
        if row.path.startswith("/") or ".." in row.path.split("/"):
            raise RecordError(f"{wheel.filename}: {row.path} leaves its directory")
        head, _, rest = row.path.partition("/")
        if head == data_dir:
            key, _, sub = rest.partition("/")
            if key not in DATA_KEYS or not sub:
                raise RecordError(f"{wheel.filename}: {row.path} is in no .data directory")
            target = (
                headers.get(posixpath.normpath(sub), f"{scheme.headers}/{installed.name}/{sub}")
                if key == "headers"
                else _join(getattr(scheme, key), sub)
            )
        else:
            target = _join(root, row.path)
        expected[target] = row
    found = []
    for target, row in sorted(expected.items(), key=lambda item: item[1].path):
        if target not in installed.files or installed.files[target] is None:
            found.append(f"{row.path} is not installed")
        elif installed.files[target] != row.sha256 and not _same_script(
            target, row, installed, scheme, script_body_sha256
        ):
            found.append(f"{row.path} has other bytes")
    sources = {posixpath.splitext(path)[0] for path in expected if path.endswith(".py")}
    for path in sorted(installed.files):
        if path in expected or _is_installer_file(path, _join(root, wheel.dist_info)):
            continue
        if _is_entry_point_script(path, installed, scheme) or _is_compiled(path, sources):
            continue
        found.append(f"{path} is installed but not in the wheel")
    return found


def describe(differences: list[str]) -> str:
    """The first :data:`NAMED_DIFFERENCES` differences on one line, with how many there are."""
    named = "; ".join(differences[:NAMED_DIFFERENCES])
    more = len(differences) - NAMED_DIFFERENCES
    return named + (f"; and {more} more" if more > 0 else "")


def _is_installer_file(path: str, dist_info: str) -> bool:
    directory, _, name = path.rpartition("/")
    return directory == dist_info and name in INSTALLER_FILES


def _same_script(
    target: str,
    row: RecordRow,
    installed: InstalledDistribution,
    scheme: Scheme,
    script_body_sha256: Callable[[str], str | None],
) -> bool:
    if posixpath.dirname(target) != posixpath.normpath(scheme.scripts):
        return False
    body = installed.script_bodies.get(target)
    return body is not None and script_body_sha256(row.path) == body


def _is_entry_point_script(path: str, installed: InstalledDistribution, scheme: Scheme) -> bool:
    directory, _, name = path.rpartition("/")
    return directory == posixpath.normpath(scheme.scripts) and name in installed.entry_points


def _is_compiled(path: str, sources: set[str]) -> bool:
    """``<dir>/__pycache__/<stem>.<tag>.pyc`` beside a ``<dir>/<stem>.py`` of the wheel."""
    directory, _, name = path.rpartition("/")
    parent, _, cache = directory.rpartition("/")
    if cache != "__pycache__" or not name.endswith(".pyc"):
        return False
    stem = name.split(".", 1)[0]
    return (f"{parent}/{stem}" if parent else stem) in sources
