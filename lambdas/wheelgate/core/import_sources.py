"""Where imports may read from: an allow-list entry (``bucket`` or ``bucket/prefix/``) and a
requested source (``s3://bucket/prefix/``), checked segment by segment."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

#: S3's rule for a bucket name (general purpose buckets): 3-63 lower-case letters, digits, '.'
#: and '-', starting and ending with a letter or digit.
_BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
#: One segment of a key prefix an import may read: printable ASCII without '/', '*', '?' (IAM
#: resource wildcards), a backslash or a space. '.', '..' and empty segments are refused apart.
_SOURCE_SEGMENT = re.compile(r"[!-)+-.0->@-\[\]-~]+")
#: Segments a prefix may not have: S3 takes them literally, but they read as another place
#: (``v2/../v1/`` starts with an entry's ``v2/`` and looks like ``v1/``).
_DOT_SEGMENTS = frozenset({"", ".", ".."})


@dataclass(frozen=True)
class ImportSource:
    """A place imports read from: a bucket and a key prefix (``""``: the whole bucket, else
    ending in ``/``). An allow-list entry (``import_sources``) covers every source under it."""

    bucket: str
    prefix: str = ""

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    def covers(self, other: ImportSource) -> bool:
        """Whether ``other`` (a requested source) lies under this entry."""
        return other.bucket == self.bucket and other.prefix.startswith(self.prefix)


def _import_source(bucket: str, prefix: str, shown: str) -> ImportSource:
    """``bucket`` and ``prefix`` as an :class:`ImportSource`; ``ValueError`` naming the bucket,
    or the prefix and its first bad segment (``shown`` is the entry or URI they came from)."""
    if not _BUCKET_NAME.fullmatch(bucket) or ".." in bucket:
        raise ValueError(f"{shown!r} does not name an S3 bucket ({bucket!r} is not a bucket name)")
    if prefix and not prefix.endswith("/"):
        raise ValueError(
            f"{shown!r}: the key prefix {prefix!r} must be a folder's: segments ending in '/'"
        )
    for segment in prefix.split("/")[:-1]:
        if segment in _DOT_SEGMENTS:
            named = f"the segment {segment!r}" if segment else "an empty segment ('//')"
            raise ValueError(
                f"{shown!r}: the key prefix {prefix!r} has {named}: a prefix names one place, "
                "so no '.', '..' or empty segment"
            )
        if not _SOURCE_SEGMENT.fullmatch(segment):
            raise ValueError(
                f"{shown!r}: the key prefix {prefix!r} has the segment {segment!r}: segments "
                "are printable ASCII without '*', '?', '\\' or spaces, each ending in '/'"
            )
    return ImportSource(bucket, prefix)


def check_import_source(entry: str) -> ImportSource:
    """An ``import_sources`` entry, ``bucket`` or ``bucket/prefix/``; raises ``ValueError``
    naming what is wrong."""
    bucket, _, prefix = entry.partition("/")
    return _import_source(bucket, prefix, entry)


def parse_source_uri(uri: str) -> ImportSource:
    """An import's source, ``s3://bucket/prefix/`` (the prefix of a directory, or none);
    raises ``ValueError`` naming what is wrong."""
    if not uri.startswith("s3://"):
        raise ValueError(f"{uri!r} is not an s3://bucket/prefix/ URI")
    rest = uri[len("s3://") :]
    bucket, _, prefix = rest.partition("/")
    return _import_source(bucket, prefix, uri)


def check_import_sources(entries: Iterable[str]) -> tuple[ImportSource, ...]:
    """Every entry of an allow-list (:func:`check_import_source`); ``ValueError`` for the first
    bad one."""
    return tuple(check_import_source(entry) for entry in entries)
