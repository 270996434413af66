"""A wheel's content as its bytes say, never as its RECORD alone claims.

:func:`read_verified_wheel` streams one wheel object once (a single GET) into a temporary
file, holding its SHA-256 to the one the caller expects (the staged file's, or the one
nightly lists), then hashes every member of the archive and holds the wheel's RECORD to them
(:func:`wheelgate.core.wheelmembers.check_record`). What it returns is the wheel's RECORD as
verified, so comparing an environment with it compares the environment with the wheel's
bytes. The archive is read with Python's ``zipfile``, the reader pip installs with.

It runs in the reporter's job (``wheelgate report``), never in the promoter, which reads no
wheel bytes.
"""

from __future__ import annotations

import hashlib
import tempfile
import zipfile
import zlib
from dataclasses import dataclass

from packaging.utils import canonicalize_name

from wheelgate.core.wheelmembers import Member, check_record
from wheelgate.core.wheelmeta import MAX_WHEEL_FILE_BYTES
from wheelgate.core.wheelrecord import (
    PYTHON_SHEBANG,
    RecordError,
    WheelContent,
    script_body,
    wheel_content,
)
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.errors import PreconditionFailed

#: The most a wheel may inflate to, all members together: past it the wheel is refused rather
#: than hashed (a zip bomb costs CPU, not memory, since members are hashed as they inflate).
MAX_WHEEL_CONTENT_BYTES = 256 * 1024**3
#: A RECORD of 200,000 files is about 30 MB.
MAX_RECORD_BYTES = 64 * 1024 * 1024
#: How much of a member is inflated at a time.
CHUNK_BYTES = 1024 * 1024


class WheelUnreadable(ValueError):
    """A wheel object that is gone, changed, or not a readable wheel archive."""


@dataclass(frozen=True)
class VerifiedWheel:
    """A wheel's RECORD, verified against its members, and the SHA-256 of what follows the
    ``#!python`` line of each such script it holds (what installers keep of one)."""

    sha256: str
    content: WheelContent
    script_bodies: dict[str, str]

    def script_body_sha256(self, path: str) -> str | None:
        return self.script_bodies.get(path)


def read_verified_wheel(bucket: Bucket, key: str, filename: str, sha256: str) -> VerifiedWheel:
    """The wheel at ``key`` of ``bucket`` (file name ``filename``), whose bytes must have
    SHA-256 ``sha256``, with its RECORD verified against its members.

    Raises :class:`~wheelgate.core.wheelmembers.RecordMismatch` when the RECORD does not
    describe the members, and :class:`WheelUnreadable` when the object is gone, holds other
    bytes, or is not a wheel archive this reader can read.
    """
    where = f"s3://{bucket.name}/{key}"
    with tempfile.TemporaryFile(prefix="wheelgate-wheel-") as handle:
        try:
            digest = bucket.read_into(key, handle)
        except PreconditionFailed:
            raise WheelUnreadable(f"{where} is gone") from None
        if digest != sha256:
            raise WheelUnreadable(
                f"{where} holds other bytes (sha256 {digest}) than the {sha256} it was listed with"
            )
        handle.seek(0)
        try:
            with zipfile.ZipFile(handle) as archive:
                return verified_archive(archive, filename, sha256)
        except (zipfile.BadZipFile, zlib.error, NotImplementedError, EOFError) as exc:
            raise WheelUnreadable(f"{filename} is not a readable wheel archive: {exc}") from None


def verified_archive(archive: zipfile.ZipFile, filename: str, sha256: str) -> VerifiedWheel:
    """The wheel ``archive`` (file name ``filename``, bytes ``sha256``) with its RECORD held to
    its members: :class:`RecordMismatch` or :class:`WheelUnreadable` when it cannot be."""
    project = canonicalize_name(filename.split("-", 1)[0])
    entries = [info for info in archive.infolist() if not info.is_dir()]
    declared = sum(info.file_size for info in entries)
    if declared > MAX_WHEEL_CONTENT_BYTES:
        raise WheelUnreadable(
            f"{filename} inflates to {declared:,} bytes, past the {MAX_WHEEL_CONTENT_BYTES:,} "
            "this reader hashes"
        )
    dist_infos = {
        info.filename.split("/")[0]
        for info in entries
        if info.filename.count("/") == 1
        and info.filename.endswith("/RECORD")
        and info.filename.split("/")[0].endswith(".dist-info")
        and canonicalize_name(info.filename.split("/")[0][: -len(".dist-info")].rpartition("-")[0])
        == project
    }
    if len(dist_infos) != 1:
        raise WheelUnreadable(
            f"{filename}: expected one {project}-*.dist-info/RECORD, found {len(dist_infos)}"
        )
    [dist_info] = dist_infos
    data_scripts = dist_info.removesuffix(".dist-info") + ".data/scripts/"
    members, bodies = [], {}
    record = wheel = b""
    for info in entries:
        digest = hashlib.sha256()
        head = b""
        kept = info.filename in (f"{dist_info}/RECORD", f"{dist_info}/WHEEL")
        whole = bytearray()
        with archive.open(info) as member:
            while data := member.read(CHUNK_BYTES):
                digest.update(data)
                if len(head) < len(PYTHON_SHEBANG):
                    head += data[: len(PYTHON_SHEBANG)]
                if kept:
                    whole += data
                    if len(whole) > MAX_RECORD_BYTES:
                        raise WheelUnreadable(f"{filename}: {info.filename} is too large")
        members.append(Member(info.filename, digest.hexdigest()))
        if info.filename == f"{dist_info}/RECORD":
            record = bytes(whole)
        elif info.filename == f"{dist_info}/WHEEL":
            wheel = bytes(whole)[:MAX_WHEEL_FILE_BYTES]
        if (
            info.filename.startswith(data_scripts)
            and head.startswith(PYTHON_SHEBANG)
            and info.file_size <= MAX_RECORD_BYTES
        ):
            body = script_body(archive.read(info))
            if body is not None:
                bodies[info.filename] = hashlib.sha256(body).hexdigest()
    try:
        content = wheel_content(filename, dist_info, record, wheel)
    except RecordError as exc:
        raise WheelUnreadable(str(exc)) from None
    check_record(filename, dist_info, content.rows, members)
    return VerifiedWheel(sha256=sha256, content=content, script_bodies=bodies)
