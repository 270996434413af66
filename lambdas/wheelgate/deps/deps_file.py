"""The models of a ``deps.yml`` (:class:`DepsFile`): what each field may be. The JSON Schema in
``schemas/deps-v1.json`` is generated from them (:func:`json_schema`) and a test keeps the two
equal. The rules between fields are :mod:`wheelgate.deps.config`'s."""

from __future__ import annotations

import posixpath
from typing import Annotated, Literal
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from wheelgate.core.manifest import IndexDir, Sha256Hex

SCHEMA_DEPS_V1 = "wheelgate/deps/v1"
#: S3's limit on key length, in UTF-8 bytes.
MAX_KEY_BYTES = 1024
#: What a cache key may hold: S3's "safe characters" in ``/``-separated segments.
KEY_PATTERN = r"^[A-Za-z0-9!_.*'()+=@,~-]+(/[A-Za-z0-9!_.*'()+=@,~-]+)*$"

Url = Annotated[str, Field(min_length=1, max_length=2048, json_schema_extra={"format": "uri"})]
Key = Annotated[
    str, Field(min_length=1, max_length=MAX_KEY_BYTES, json_schema_extra={"pattern": KEY_PATTERN})
]
Size = Annotated[int, Field(gt=0, le=5 * 1024**4)]


class BucketRule(BaseModel):
    """Where cached files may go in one bucket."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    prefixes: Annotated[list[str], Field(min_length=1)]
    """Key prefixes (each ending in ``/``) the ``files`` entries of this bucket must use."""


class Validation(BaseModel):
    """The rules every entry is checked against; reviewed with the entries."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    hosts: Annotated[list[str], Field(min_length=1)]
    """Host names downloads may come from (exact, lowercase); URLs must be https."""
    buckets: dict[str, BucketRule] = {}
    """Buckets ``files`` entries may be cached in, with their allowed key prefixes."""
    default_bucket: str | None = None
    """The bucket of a ``files`` entry that names none."""
    indexes: list[IndexDir] = []
    """Index directories ``python`` entries may be mirrored into (``all`` means these)."""
    python_tags: Annotated[list[str], Field(min_length=1)] = ["py3"]
    """Allowed wheel Python tags (``fnmatch`` patterns, e.g. ``cp31?``)."""
    platforms: Annotated[list[str], Field(min_length=1)] = ["any"]
    """Allowed wheel platform tags (``fnmatch`` patterns, e.g. ``manylinux_*_x86_64``)."""


class FileEntry(BaseModel):
    """An external file cached at ``s3://<bucket>/<key>``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: Url
    key: Key
    sha256: Sha256Hex
    size: Size | None = None
    bucket: str | None = None


class WheelFile(BaseModel):
    """One wheel of a pinned requirement; the file name is the last segment of the URL."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: Url
    sha256: Sha256Hex
    size: Size | None = None

    @property
    def filename(self) -> str:
        return url_filename(self.url)


class PythonEntry(BaseModel):
    """A pinned requirement (``name==version``), its wheels and where to mirror them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requirement: Annotated[str, Field(min_length=1, max_length=256)]
    wheels: Annotated[list[WheelFile], Field(min_length=1, max_length=256)]
    indexes: list[IndexDir] | Literal["all"] = "all"


class DepsFile(BaseModel):
    """A whole ``deps.yml``."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    schema_: Literal["wheelgate/deps/v1"] = Field(alias="schema")
    validation: Validation
    files: list[FileEntry] = []
    python: list[PythonEntry] = []


def json_schema() -> dict[str, object]:
    """The JSON Schema of deps.yml v1, as published in ``schemas/deps-v1.json``."""
    schema = DepsFile.model_json_schema(by_alias=True, mode="validation")
    schema["$id"] = "urn:wheelgate:schema:deps:v1"
    schema["title"] = "WheelGate third-party dependencies (deps.yml) v1"
    return schema


def url_filename(url: str) -> str:
    """The file name a download URL ends with (percent-decoded)."""
    return unquote(posixpath.basename(urlsplit(url).path))
