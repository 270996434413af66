"""Core metadata (PEP 658) of a wheel, read with a few ranged reads of its zip directory.

A multi-gigabyte wheel is never downloaded: we read the end-of-central-directory record, the
central directory and the ``*.dist-info/METADATA`` and ``WHEEL`` members. The same code reads a
local file (``wheelgate stage``) and an S3 object (the promoter) through :class:`RangeReader`.

A wheel whose METADATA ``Name`` or ``Version``, or whose ``WHEEL`` tags, disagree with its file
name is refused here: installers key on the file name (uv refuses such a wheel outright, pip
cannot find it under the name it asked for), and a released file can never be replaced.
"""

from __future__ import annotations

import hashlib
import re
import struct
import zlib
from dataclasses import dataclass
from email.parser import BytesHeaderParser
from typing import BinaryIO, Protocol

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag, parse_tag
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

_EOCD_SIG = b"PK\x05\x06"
_ZIP64_LOCATOR_SIG = b"PK\x06\x07"
_ZIP64_EOCD_SIG = b"PK\x06\x06"
_CDIR_SIG = b"PK\x01\x02"
_LOCAL_SIG = b"PK\x03\x04"
_EOCD_SIZE = 22
_MAX_COMMENT = 65535
#: METADATA is a few KB; anything past this is not a metadata file we should hold in memory.
#: It bounds the bytes read *and* the bytes inflated: a member's declared size can lie, so
#: inflation stops at this limit whatever the central directory says (a 1 MB wheel must not
#: expand to 1 GiB in the promoter).
MAX_METADATA_BYTES = 16 * 1024 * 1024
#: WHEEL is a handful of lines.
MAX_WHEEL_FILE_BYTES = 64 * 1024
#: A directory of 200,000 entries is ~20 MB; larger is not a wheel we can index sanely.
MAX_CENTRAL_DIRECTORY_BYTES = 64 * 1024 * 1024


class WheelMetadataError(ValueError):
    """The file is not a readable wheel, or has no usable METADATA."""


class WheelIdentityError(WheelMetadataError):
    """The wheel's METADATA or WHEEL file disagrees with its file name."""


class RangeReader(Protocol):
    """Random access to the bytes of one file."""

    @property
    def size(self) -> int: ...

    def read(self, start: int, length: int) -> bytes:
        """Exactly ``length`` bytes from ``start`` (fewer only at end of file)."""
        ...


class FileRangeReader:
    """:class:`RangeReader` over a local binary file; counts the bytes it reads."""

    def __init__(self, handle: BinaryIO, size: int) -> None:
        self._handle = handle
        self._size = size
        self.bytes_read = 0

    @property
    def size(self) -> int:
        return self._size

    def read(self, start: int, length: int) -> bytes:
        self._handle.seek(start)
        data = self._handle.read(length)
        self.bytes_read += len(data)
        return data


@dataclass(frozen=True)
class CoreMetadata:
    """A wheel's METADATA bytes and what the index needs from them."""

    content: bytes
    sha256: str
    requires_python: str | None


def _find_eocd(reader: RangeReader) -> tuple[bytes, int]:
    tail_len = min(reader.size, _EOCD_SIZE + _MAX_COMMENT)
    tail_start = reader.size - tail_len
    tail = reader.read(tail_start, tail_len)
    pos = tail.rfind(_EOCD_SIG)
    while pos >= 0 and pos + _EOCD_SIZE > len(tail):
        pos = tail.rfind(_EOCD_SIG, 0, pos)
    if pos < 0:
        raise WheelMetadataError("no zip end-of-central-directory record: not a zip file")
    return tail, tail_start + pos


def _central_directory(reader: RangeReader) -> bytes:
    tail, eocd_at = _find_eocd(reader)
    rel = eocd_at - (reader.size - len(tail))
    (_sig, _disk, _cd_disk, _n_disk, n_total, cd_size, cd_offset, _clen) = struct.unpack(
        "<4sHHHHIIH", tail[rel : rel + _EOCD_SIZE]
    )
    if cd_offset == 0xFFFFFFFF or cd_size == 0xFFFFFFFF or n_total == 0xFFFF:
        loc_at = eocd_at - 20
        locator = reader.read(loc_at, 20) if loc_at >= 0 else b""
        if len(locator) != 20 or locator[:4] != _ZIP64_LOCATOR_SIG:
            raise WheelMetadataError("zip64 archive without a zip64 locator")
        (zip64_eocd_at,) = struct.unpack("<Q", locator[8:16])
        record = reader.read(zip64_eocd_at, 56)
        if len(record) != 56 or record[:4] != _ZIP64_EOCD_SIG:
            raise WheelMetadataError("zip64 end-of-central-directory record is missing")
        cd_size, cd_offset = struct.unpack("<QQ", record[40:56])
    if cd_size > MAX_CENTRAL_DIRECTORY_BYTES:
        raise WheelMetadataError(f"zip central directory of {cd_size} bytes is too large")
    if cd_offset + cd_size > reader.size:
        raise WheelMetadataError("zip central directory lies outside the file")
    # The directory often sits inside the tail we already read.
    tail_start = reader.size - len(tail)
    if cd_offset >= tail_start:
        return tail[cd_offset - tail_start : cd_offset - tail_start + cd_size]
    return reader.read(cd_offset, cd_size)


@dataclass(frozen=True)
class _Member:
    name: str
    method: int
    crc: int
    compressed_size: int
    size: int
    local_offset: int


def _zip64_values(extra: bytes, member: list[int]) -> None:
    # member = [size, compressed_size, local_offset]; replace 0xFFFFFFFF ones in that order.
    pos = 0
    while pos + 4 <= len(extra):
        tag, length = struct.unpack("<HH", extra[pos : pos + 4])
        body = extra[pos + 4 : pos + 4 + length]
        if tag == 0x0001:
            at = 0
            for i in range(3):
                if member[i] == 0xFFFFFFFF and at + 8 <= len(body):
                    (member[i],) = struct.unpack("<Q", body[at : at + 8])
                    at += 8
            return
        pos += 4 + length


def _members(directory: bytes) -> list[_Member]:
    members = []
    pos = 0
    while pos + 46 <= len(directory) and directory[pos : pos + 4] == _CDIR_SIG:
        fields = struct.unpack("<4sHHHHHHIIIHHHHHII", directory[pos : pos + 46])
        method, crc, csize, usize = fields[4], fields[7], fields[8], fields[9]
        name_len, extra_len, comment_len, local_offset = (
            fields[10],
            fields[11],
            fields[12],
            fields[16],
        )
        name = directory[pos + 46 : pos + 46 + name_len].decode("utf-8", "replace")
        extra = directory[pos + 46 + name_len : pos + 46 + name_len + extra_len]
        values = [usize, csize, local_offset]
        _zip64_values(extra, values)
        members.append(_Member(name, method, crc, values[1], values[0], values[2]))
        pos += 46 + name_len + extra_len + comment_len
    return members


def _dist_info_member(members: list[_Member], wheel_filename: str, name: str) -> _Member:
    """The one ``<project>-<version>.dist-info/<name>`` member of the wheel."""
    project = _parse_filename(wheel_filename)[0]
    candidates = []
    for m in members:
        parts = m.name.split("/")
        if len(parts) == 2 and parts[1] == name and parts[0].endswith(".dist-info"):
            dist = parts[0][: -len(".dist-info")].rpartition("-")[0]
            if canonicalize_name(dist) == project:
                candidates.append(m)
    if len(candidates) != 1:
        raise WheelMetadataError(
            f"{wheel_filename}: expected one {project}-*.dist-info/{name}, found {len(candidates)}"
        )
    return candidates[0]


def _parse_filename(wheel_filename: str) -> tuple[str, Version, frozenset[Tag]]:
    try:
        project, version, _build, tags = parse_wheel_filename(wheel_filename)
    except InvalidWheelFilename as exc:
        raise WheelMetadataError(f"{wheel_filename}: not a wheel file name: {exc}") from exc
    return project, version, tags


def _read_member(reader: RangeReader, member: _Member, wheel_filename: str, limit: int) -> bytes:
    """The member's bytes, reading and inflating at most ``limit`` bytes whatever its header
    claims; :class:`WheelMetadataError` past the limit, for a bad header, method or CRC."""
    if member.size > limit or member.compressed_size > limit:
        raise WheelMetadataError(
            f"{wheel_filename}: {member.name} is {member.size} bytes, over the {limit}-byte limit"
        )
    header = reader.read(member.local_offset, 30)
    if len(header) != 30 or header[:4] != _LOCAL_SIG:
        raise WheelMetadataError(f"{wheel_filename}: bad local header for {member.name}")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    data_at = member.local_offset + 30 + name_len + extra_len
    raw = reader.read(data_at, member.compressed_size)
    if member.method == 0:
        content = raw
    elif member.method == 8:
        inflater = zlib.decompressobj(-15)
        try:
            content = inflater.decompress(raw, limit + 1)
        except zlib.error as exc:
            raise WheelMetadataError(f"{wheel_filename}: {member.name} is corrupt: {exc}") from exc
        if len(content) > limit or inflater.unconsumed_tail:
            raise WheelMetadataError(
                f"{wheel_filename}: {member.name} inflates past the {limit}-byte limit "
                f"(its header says {member.size} bytes)"
            )
    else:
        raise WheelMetadataError(
            f"{wheel_filename}: {member.name} uses zip method {member.method}; only stored and "
            "deflate are supported"
        )
    if zlib.crc32(content) != member.crc or len(content) != member.size:
        raise WheelMetadataError(f"{wheel_filename}: {member.name} fails its CRC check")
    return content


def check_identity(wheel_filename: str, metadata: bytes, wheel_file: bytes) -> None:
    """Raise :class:`WheelIdentityError` unless METADATA's ``Name`` and ``Version`` and the
    ``Tag`` lines of WHEEL are those of the file name (names compared normalized, versions as
    PEP 440 versions, tags as the expanded set)."""
    project, version, tags = _parse_filename(wheel_filename)
    headers = BytesHeaderParser().parsebytes(metadata)
    name, raw_version = headers.get("Name"), headers.get("Version")
    problems = []
    if name is None or canonicalize_name(str(name).strip()) != project:
        problems.append(f"METADATA says Name {name!s}, the file name says {project}")
    try:
        declared = Version(str(raw_version).strip()) if raw_version is not None else None
    except InvalidVersion:
        declared = None
    if declared != version:
        problems.append(f"METADATA says Version {raw_version!s}, the file name says {version}")
    wheel_tags: set[Tag] = set()
    tag_lines = BytesHeaderParser().parsebytes(wheel_file).get_all("Tag") or []
    for line in tag_lines:
        try:
            wheel_tags |= parse_tag(str(line).strip())
        except ValueError:
            problems.append(f"WHEEL has an invalid Tag {line!s}")
    if wheel_tags and wheel_tags != tags:
        problems.append(
            "WHEEL says tags "
            + ", ".join(sorted(map(str, wheel_tags)))
            + "; the file name says "
            + ", ".join(sorted(map(str, tags)))
        )
    elif not tag_lines:
        problems.append("WHEEL names no Tag")
    if problems:
        raise WheelIdentityError(f"{wheel_filename}: " + "; ".join(problems))


class WheelArchive:
    """The members of one wheel, read from its zip central directory (one or two ranged reads)
    and then one member at a time, each bounded.

    Raises :class:`WheelMetadataError` when the file is not a zip or its directory is too
    large.
    """

    def __init__(self, reader: RangeReader, wheel_filename: str) -> None:
        self._reader = reader
        self.filename = wheel_filename
        self._members = {m.name: m for m in _members(_central_directory(reader))}

    def __contains__(self, name: str) -> bool:
        return name in self._members

    def read(self, name: str, limit: int) -> bytes:
        """The bytes of member ``name``, inflated; :class:`WheelMetadataError` when there is
        no such member, or it is corrupt or larger than ``limit``."""
        member = self._members.get(name)
        if member is None:
            raise WheelMetadataError(f"{self.filename}: no member {name}")
        return _read_member(self._reader, member, self.filename, limit)

    def dist_info_path(self, name: str) -> str:
        """The path of the one ``<project>-<version>.dist-info/<name>`` of the wheel."""
        return _dist_info_member(list(self._members.values()), self.filename, name).name

    def read_dist_info(self, name: str, limit: int) -> bytes:
        """The bytes of the wheel's ``.dist-info/<name>`` (bounded like :meth:`read`)."""
        return self.read(self.dist_info_path(name), limit)


def read_core_metadata(reader: RangeReader, wheel_filename: str) -> CoreMetadata:
    """Extract the METADATA file of the wheel behind ``reader``, after checking that the wheel
    is what its file name says (:func:`check_identity`).

    Raises :class:`WheelMetadataError` when the file is not a zip, has no single matching
    ``.dist-info/METADATA`` or ``WHEEL``, uses an unsupported compression, fails a CRC check or
    inflates past :data:`MAX_METADATA_BYTES`; :class:`WheelIdentityError` when it is not the
    wheel its name says.
    """
    archive = WheelArchive(reader, wheel_filename)
    metadata = archive.read_dist_info("METADATA", MAX_METADATA_BYTES)
    wheel_file = archive.read_dist_info("WHEEL", MAX_WHEEL_FILE_BYTES)
    check_identity(wheel_filename, metadata, wheel_file)
    return core_metadata(metadata)


def core_metadata(content: bytes) -> CoreMetadata:
    """Hash and ``Requires-Python`` of METADATA bytes."""
    headers = BytesHeaderParser().parsebytes(content)
    requires_python = headers.get("Requires-Python")
    return CoreMetadata(
        content=content,
        sha256=hashlib.sha256(content).hexdigest(),
        requires_python=str(requires_python).strip() or None if requires_python else None,
    )


def required_projects(content: bytes) -> frozenset[str]:
    """The normalized names of every project METADATA's ``Requires-Dist`` names, whatever its
    environment marker or extra: the union over every platform, interpreter and extra an
    installer may resolve for. A line that is not a PEP 508 requirement names nothing (an
    installer refuses it when it reads the metadata)."""
    return frozenset(requirement_extras(content))


#: ``extra == "name"`` (or ``"name" == extra``) in a marker as ``packaging`` writes it.
_EXTRA_CLAUSE = re.compile(r'\bextra\s*==\s*"([^"]*)"|"([^"]*)"\s*==\s*extra\b')


def requirement_extras(content: bytes) -> dict[str, frozenset[str]]:
    """Every project METADATA's ``Requires-Dist`` names (normalized, as
    :func:`required_projects`), with the extras whose marker clauses (``extra == "x"``) it is
    required under; an empty set when a line requires it outside any extra (whatever its
    other marker)."""
    headers = BytesHeaderParser().parsebytes(content)
    found: dict[str, frozenset[str]] = {}
    for line in headers.get_all("Requires-Dist") or ():
        try:
            requirement = Requirement(str(line))
        except InvalidRequirement:
            continue
        name = canonicalize_name(requirement.name)
        marker = str(requirement.marker or "")
        extras = frozenset(canonicalize_name(a or b) for a, b in _EXTRA_CLAUSE.findall(marker))
        if not extras or found.get(name) == frozenset():
            found[name] = frozenset()
        else:
            found[name] = found.get(name, frozenset()) | extras
    return found
