"""Multi-gigabyte objects in local mode's S3 (moto server), without holding them in memory.

moto keeps each object's bytes in a temporary file (a ``SpooledTemporaryFile`` that moves to
disk past 5 MiB), but three of its paths read a whole object into memory first:

- ``CompleteMultipartUpload`` builds the object in one ``bytearray`` beside the parts it holds
  (``total.extend(part.value)``, then ``bytes(total)``): a 6 GiB object needs over 12 GB;
- a ranged ``GetObject`` and an ``UploadPartCopy`` read the whole source and then slice it
  (and a part copy then holds its range in memory);
- a ``GetObject`` answers with the whole object as one ``bytes``;

and every request's body stays in memory until Python's cyclic garbage collector runs, as
the server's request object and its WSGI environ refer to each other.

:func:`install` changes these in the embedded server's process: a part's and an object's
bytes on disk are read through a read-only memory map (so a range reads only its pages, and
the pages read leave the process again), a part copy's range is copied by the kernel into
the part's file, a part's checksum is computed as it arrives, a
completed upload is assembled by the kernel copying each part into the object's own
temporary file (so that completing a 6 GiB upload takes seconds, within a client's read
timeout), the server streams a body it reads from such a map in 1 MiB
chunks, and it lets go of each request's body once it has answered. Objects of up to 5 MiB
stay in memory as moto keeps them. What the server holds in memory is then the bodies of the
requests it is serving: the parts being uploaded (a client's concurrency times its part
size), or a single-request ``PutObject`` (up to S3's 5 GiB limit, which local mode, like S3,
accepts in one request).

The patched functions keep moto's checks and results (part order and ETags, the
``EntityTooSmall`` rule, the multipart ETag, composite and full-object checksums);
``tests/integration/test_large_files.py`` holds them to it through the S3 API.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import tempfile
from collections.abc import Iterator
from typing import Any

#: Chunk in which a body read from disk is streamed to the client.
STREAM_CHUNK = 1024 * 1024
#: Attribute of a part's key holding the checksum it got when it arrived (raw bytes).
PART_CHECKSUM = "wheelgate_part_checksum"

_installed = False


class AssembledObject:
    """An object assembled from its parts in a temporary file, handed to moto's ``FakeKey``
    in place of its bytes; the key adopts the file instead of copying it."""

    def __init__(self, buffer: Any, size: int) -> None:
        self.buffer = buffer
        self.size = size


def _on_disk(buffer: Any) -> bool:
    return bool(getattr(buffer, "_rolled", False))


def _mapped(buffer: Any, size: int) -> mmap.mmap | bytes:
    """A read-only map of ``size`` bytes of ``buffer``'s file (``b""`` when empty)."""
    if size == 0:
        return b""
    buffer.flush()
    return mmap.mmap(buffer.fileno(), size, access=mmap.ACCESS_READ)


def _chunks(view: mmap.mmap) -> Iterator[bytes]:
    for start in range(0, len(view), STREAM_CHUNK):
        yield view[start : start + STREAM_CHUNK]
        _release(view, start, STREAM_CHUNK)


def _release(view: object, start: int = 0, length: int | None = None) -> None:
    """Let the pages of ``view`` (a map) read so far leave this process's resident set: they
    stay in the page cache, but the server's RSS stays that of the requests it serves."""
    if isinstance(view, mmap.mmap):
        end = len(view) if length is None else min(len(view), start + length)
        view.madvise(mmap.MADV_DONTNEED, start, end - start)


def install() -> None:
    """Patch moto's S3 models and server response (idempotent). Call before the server
    handles a request; affects this process only."""
    global _installed
    if _installed:
        return
    _map_values_on_disk()
    _copy_mapped_state()
    _assemble_in_the_kernel()
    _checksum_parts_on_arrival()
    _copy_part_ranges_in_the_kernel()
    _stream_and_release_bodies()
    _installed = True


def _map_values_on_disk() -> None:
    """``FakeKey.value``: an object on disk reads as a read-only map of its file, and an
    :class:`AssembledObject` is adopted rather than copied."""
    from moto.s3 import models

    key_value: property = models.FakeKey.__dict__["value"]
    original_get, original_set = key_value.fget, key_value.fset
    assert original_get is not None
    assert original_set is not None

    def get_value(self: Any) -> Any:
        # On disk: a map, which slicing, hashing and writing read without a copy of the whole.
        buffer = self._value_buffer
        if _on_disk(buffer):
            with self.lock:
                return _mapped(buffer, self.contentsize)
        return original_get(self)

    def set_value(self: Any, new_value: Any) -> None:
        if isinstance(new_value, AssembledObject):
            self._value_buffer.close()
            self._value_buffer = new_value.buffer
            self.contentsize = new_value.size
            return
        original_set(self, new_value)

    models.FakeKey.value = property(get_value, set_value)  # type: ignore[method-assign,assignment]


def _copy_mapped_state() -> None:
    """``FakeKey.__getstate__``: a copy of a key takes its bytes, not its map."""
    from moto.s3 import models

    original_getstate = models.FakeKey.__getstate__

    def getstate(self: Any) -> dict[str, Any]:
        # ListObjectVersions deep-copies every version it lists, through this state; a map
        # cannot be pickled, so the copy takes the bytes, as moto copies any object's.
        state: dict[str, Any] = original_getstate(self)
        view = state.get("value")
        if isinstance(view, mmap.mmap):
            state["value"] = view[:]
            view.close()
        return state

    models.FakeKey.__getstate__ = getstate  # type: ignore[method-assign]


def _assemble_in_the_kernel() -> None:
    """``FakeMultipart.complete``: parts are copied into the object's file by the kernel."""
    from moto.s3 import models
    from moto.settings import get_s3_default_key_buffer_size

    def complete(self: Any, body: Iterator[tuple[int, str]]) -> tuple[Any, str, Any]:
        # The file is handed to the object's key, which closes it when it is disposed of.
        assembled = tempfile.SpooledTemporaryFile(get_s3_default_key_buffer_size())  # noqa: SIM115
        try:
            return _assemble(self, body, assembled)
        except BaseException:
            assembled.close()
            raise

    models.FakeMultipart.complete = complete  # type: ignore[method-assign]


def _checksum_parts_on_arrival() -> None:
    """``FakeMultipart.set_part``: a part's checksum is computed as it arrives."""
    from moto.s3 import models

    original_set_part = models.FakeMultipart.set_part

    def set_part(self: Any, part_id: int, value: bytes) -> Any:
        # Its checksum now, while its bytes are fresh, so that completing the upload need
        # not read every part again.
        key = original_set_part(self, part_id, value)
        checksum = _checksum_builder(self)
        if checksum.checksum_type == "COMPOSITE":
            setattr(key, PART_CHECKSUM, _part_checksum(key, checksum))
        return key

    models.FakeMultipart.set_part = set_part  # type: ignore[method-assign]


def _copy_part_ranges_in_the_kernel() -> None:
    """``S3Backend.upload_part_copy``: a range of a source on disk is copied by the kernel."""
    from moto.s3 import models
    from moto.settings import get_s3_default_key_buffer_size

    original_part_copy = models.S3Backend.upload_part_copy

    def upload_part_copy(
        self: Any,
        dest_bucket_name: str,
        multipart_id: str,
        part_id: int,
        src_bucket_name: str,
        src_key_name: str,
        src_version_id: str | None,
        start_byte: int | None,
        end_byte: int | None,
    ) -> Any:
        # A range of a source on disk is copied by the kernel into the part's own file, not
        # read into memory (a promoter copies 512 MiB parts, 8 at a time).
        source = self.get_object(src_bucket_name, src_key_name, version_id=src_version_id)
        if source is None or start_byte is None or end_byte is None:
            return original_part_copy(
                self,
                dest_bucket_name,
                multipart_id,
                part_id,
                src_bucket_name,
                src_key_name,
                src_version_id,
                start_byte,  # type: ignore[arg-type]
                end_byte,  # type: ignore[arg-type]
            )
        end = min(end_byte + 1, source.contentsize)
        part = tempfile.SpooledTemporaryFile(get_s3_default_key_buffer_size())  # noqa: SIM115
        try:
            size = _copy_range(source, start_byte, end, part)
        except BaseException:
            part.close()
            raise
        multipart = self.get_bucket(dest_bucket_name).multiparts[multipart_id]
        return multipart.set_part(part_id, AssembledObject(part, size))

    models.S3Backend.upload_part_copy = upload_part_copy  # type: ignore[method-assign]


def _stream_and_release_bodies() -> None:
    """``convert_to_flask_response.__call__``: a mapped body is streamed in chunks, and the
    request's body is let go once answered."""
    from moto.core import utils as core_utils

    original_call = core_utils.convert_to_flask_response.__call__

    def call(self: Any, args: Any = None, **kwargs: Any) -> Any:
        from flask import request

        try:
            response = original_call(self, args, **kwargs)
        finally:
            # The request and its WSGI environ refer to each other, so its body (a part, or a
            # whole single-request upload) would wait for the cyclic garbage collector, which
            # counts objects, not bytes: hundreds of MB of read bodies piled up. It is read.
            served = request._get_current_object().__dict__  # type: ignore[attr-defined]
            for name in ("_cached_data", "data"):
                served.pop(name, None)
        if isinstance(response.response, mmap.mmap):
            response.response = _chunks(response.response)
        return response

    core_utils.convert_to_flask_response.__call__ = call  # type: ignore[method-assign]


def _assemble(upload: Any, body: Iterator[tuple[int, str]], assembled: Any) -> tuple[Any, str, Any]:
    """moto's ``FakeMultipart.complete``, copying each part into ``assembled`` in turn (in the
    kernel where both are files) and combining the checksums its parts got when they arrived."""
    from moto.s3.exceptions import EntityTooSmall, InvalidPart, MalformedXML
    from moto.s3.utils import compute_checksum
    from moto.settings import S3_UPLOAD_PART_MIN_SIZE

    checksum = _checksum_builder(upload)
    md5s = bytearray()
    last, count, size = None, 0, 0
    for number, etag in body:
        part = upload.parts.get(number)
        if part is None or part.etag.replace('"', "") != etag.replace('"', ""):
            raise InvalidPart()
        if last is not None and last.contentsize < S3_UPLOAD_PART_MIN_SIZE:
            raise EntityTooSmall()
        md5s.extend(bytes.fromhex(part.etag.replace('"', "")))
        size += _append(assembled, part)
        if checksum.checksum_type == "COMPOSITE":
            checksum.checksum.extend(_part_checksum(part, checksum))
        checksum.part_count += 1
        last, count = part, count + 1
    if count == 0:
        raise MalformedXML()
    if checksum.checksum_type == "COMPOSITE":
        details = checksum.build()
    else:
        # A full-object checksum over the assembled file, not over a copy of it in memory.
        whole = _mapped(assembled, size) if _on_disk(assembled) else assembled_bytes(assembled)
        details = (
            checksum.checksum_type,
            compute_checksum(whole, checksum.checksum_algorithm).decode(),  # type: ignore[arg-type]
            1,
        )
        _release(whole)
    etag = f"{hashlib.md5(bytes(md5s), usedforsecurity=False).hexdigest()}-{count}"
    return AssembledObject(assembled, size), etag, details


def _checksum_builder(upload: Any) -> Any:
    """moto's checksum of a multipart upload: its algorithm and type, as the upload began."""
    from moto.s3 import models

    return models.MultipartChecksumBuilder(
        upload.metadata.get("x-amz-checksum-algorithm"),
        upload.metadata.get("x-amz-checksum-type"),
    )


def _part_checksum(part: Any, checksum: Any) -> bytes:
    """A part's checksum: the one computed when it arrived, else read from its bytes now
    (from memory, or through a map of its file)."""
    from moto.s3.utils import compute_checksum

    known: bytes | None = getattr(part, PART_CHECKSUM, None)
    if known is not None:
        return known
    value = part.value
    digest: bytes = compute_checksum(value, checksum.checksum_algorithm, encode_base64=False)
    _release(value)
    return digest


def _copy_range(source: Any, start: int, end: int, target: Any) -> int:
    """Copy bytes ``start`` to ``end`` of ``source`` (a key) to ``target`` (an empty spooled
    file); their count."""
    buffer, size = source._value_buffer, max(0, end - start)
    if _on_disk(buffer) and size:
        with source.lock:
            buffer.flush()
            _kernel_copy(buffer.fileno(), target.fileno(), size, start, 0)
        target.seek(size)
        return size
    value = source.value
    target.write(value[start:end])
    _release(value)
    return size


def _kernel_copy(source: int, target: int, size: int, offset: int, at: int) -> None:
    """``size`` bytes of file ``source`` from ``offset`` to file ``target`` at ``at``, copied by
    the kernel."""
    copied = 0
    while copied < size:
        n = os.copy_file_range(source, target, size - copied, offset + copied, at + copied)
        if n == 0:
            raise OSError(f"{size} bytes to copy, the file ended after {copied}")
        copied += n


def _append(assembled: Any, part: Any) -> int:
    """Copy ``part``'s bytes to the end of ``assembled``; their length. Between two files the
    kernel copies them (``copy_file_range``), without passing them through this process."""
    buffer, size = part._value_buffer, part.contentsize
    if _on_disk(buffer) and size:
        with part.lock:
            buffer.flush()
            target = assembled.fileno()  # moves a spooled file to disk first
            assembled.flush()
            offset = assembled.tell()
            _kernel_copy(buffer.fileno(), target, size, 0, offset)
            assembled.seek(offset + size)
        return int(size)
    value = part.value
    assembled.write(value)
    _release(value)
    return len(value)


def assembled_bytes(buffer: Any) -> bytes:
    """The bytes of a small assembled object still held in memory."""
    buffer.seek(0)
    data: bytes = buffer.read()
    return data
