"""The manifest contract: what a reporter job says about a run's artifact sets and tests.

Version 2 (:class:`ManifestV2`, what ``wheelgate report`` writes) adds to each test result the
SHA-256 of every file the test installed: the evidence the promoter releases a file on. Version
1 (:class:`ManifestV1`) is still read, for runs reported before v2, but it carries no evidence,
so the promoter releases nothing on it (``core/evidence.py``). :class:`Manifest` and
:class:`ArtifactSet` are what the two versions share, and what verification and planning read.
How much a manifest may hold is :mod:`wheelgate.core.manifest_limits`; what a test result's
name and URL may be, :mod:`wheelgate.core.manifest_tests`.

See ``docs/manifest.md``; the JSON Schemas in ``schemas/manifest-v1.json`` and
``schemas/manifest-v2.json`` are generated from these models (``wheelgate schema`` prints v2) and
a test keeps them equal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from enum import StrEnum
from functools import lru_cache
from typing import Annotated, Literal

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    NormalizedName,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.layout import (
    INDEX_PATTERN,
    RUN_ID_PATTERN,
    LayoutError,
    check_filename,
    check_index,
    check_run_id,
)
from wheelgate.core.manifest_limits import (
    MAX_FILES_PER_SET,
    MAX_INSTALLED_PER_TEST,
    MAX_MANIFEST_BYTES,
    MAX_REFUSAL_MESSAGE,
    MAX_REFUSALS_PER_TEST,
    MAX_SETS,
    MAX_TEST_URL,
    MAX_TESTS_PER_SET,
)
from wheelgate.core.manifest_tests import (
    TEST_URL_PATTERN,
    check_set_tests,
    check_test_name,
    check_test_url,
    check_test_url_host,
)

SCHEMA_V1 = "wheelgate/manifest/v1"
SCHEMA_V2 = "wheelgate/manifest/v2"

#: A commit is its full SHA-1, in lowercase hex (what ``git rev-parse`` and ``$GITHUB_SHA`` give).
COMMIT_PATTERN = r"^[0-9a-f]{40}$"

#: A SHA-256 in lowercase hex, as the manifest, the record and ``sha256sum`` write it.
SHA256_PATTERN = r"^[0-9a-f]{64}$"
Sha256Hex = Annotated[str, StringConstraints(pattern=SHA256_PATTERN)]
_SHA256 = re.compile(SHA256_PATTERN)
CommitSha = Annotated[str, StringConstraints(pattern=COMMIT_PATTERN)]
_COMMIT = re.compile(COMMIT_PATTERN)
#: An installed file's name as an installer reports it: one path segment, no spaces or controls.
INSTALLED_FILENAME_PATTERN = r"^[^/\\\x00-\x20\x7f]{1,255}$"


def is_commit(value: str) -> bool:
    """Whether ``value`` is a full commit SHA (:data:`COMMIT_PATTERN`)."""
    return _COMMIT.fullmatch(value) is not None


def check_commit(commit: str, *, name: str = "commit") -> str:
    """Return ``commit`` if it is a full commit SHA; else raise ``ValueError`` calling it
    ``name`` (the option or variable it came from)."""
    if not is_commit(commit):
        raise ValueError(f"{name} {commit!r} is not a full 40-character hex commit SHA")
    return commit


def check_sha256(value: str) -> str:
    """Return ``value`` if it is a SHA-256 in lowercase hex; else raise ``ValueError``."""
    if not _SHA256.fullmatch(value):
        raise ValueError(f"{value!r} is not a SHA-256 (64 lowercase hex digits)")
    return value


def manifest_test_url_problems(manifest: Manifest, hosts: frozenset[str]) -> list[str]:
    """Every test URL of ``manifest`` not on ``hosts``, named by its field."""
    problems = []
    for i, artifact_set in enumerate(manifest.sets):
        for j, test in enumerate(artifact_set.tests):
            try:
                if test.url is not None:
                    check_test_url_host(test.url, hosts)
            except ValueError as exc:
                problems.append(f"sets.{i}.tests.{j}.url: {exc}")
    return problems


def _run_id(value: str) -> str:
    try:
        return check_run_id(value)
    except LayoutError as exc:
        raise ValueError(str(exc)) from exc


def _index(value: str) -> str:
    try:
        return check_index(value)
    except LayoutError as exc:
        raise ValueError(str(exc)) from exc


RunId = Annotated[str, StringConstraints(pattern=RUN_ID_PATTERN), AfterValidator(_run_id)]
IndexDir = Annotated[str, StringConstraints(pattern=INDEX_PATTERN), AfterValidator(_index)]


class DistributionFile(BaseModel):
    """A wheel or sdist file name, parsed with ``packaging``."""

    project: NormalizedName
    version: Version
    kind: Literal["wheel", "sdist"]

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)


@lru_cache(maxsize=1 << 18)
def parse_distribution_filename(filename: str) -> DistributionFile:
    """Parse a wheel (``.whl``) or sdist (``.tar.gz``/``.zip``) file name.

    Raises ``ValueError`` naming the file when it is not a valid distribution file name.
    """
    try:
        check_filename(filename)
    except LayoutError as exc:
        raise ValueError(str(exc)) from exc
    try:
        if filename.endswith(".whl"):
            name, version, _build, _tags = parse_wheel_filename(filename)
            return DistributionFile(project=name, version=version, kind="wheel")
        if filename.endswith((".tar.gz", ".zip")):
            name, version = parse_sdist_filename(filename)
            return DistributionFile(project=name, version=version, kind="sdist")
    except (InvalidWheelFilename, InvalidSdistFilename) as exc:
        raise ValueError(f"{filename!r} is not a valid distribution file name: {exc}") from exc
    raise ValueError(f"{filename!r} is neither a wheel (.whl) nor an sdist (.tar.gz, .zip)")


class Outcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"


class ManifestFile(BaseModel):
    """One artifact of a set, with the checksum and size the build recorded."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    filename: Annotated[str, Field(min_length=1, max_length=255)]
    sha256: Sha256Hex
    size: Annotated[int, Field(gt=0, le=5 * 1024**4)]

    @field_validator("filename")
    @classmethod
    def _valid_distribution_name(cls, value: str) -> str:
        parse_distribution_filename(value)
        return value

    @property
    def distribution(self) -> DistributionFile:
        return parse_distribution_filename(self.filename)


class ManifestTest(BaseModel):
    """One test job's outcome for a set."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, Field(min_length=1, max_length=128)]
    result: Outcome
    url: Annotated[str, Field(max_length=MAX_TEST_URL, pattern=TEST_URL_PATTERN)] | None = None

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        return check_test_name(value)

    @field_validator("url")
    @classmethod
    def _valid_url(cls, value: str | None) -> str | None:
        return None if value is None else check_test_url(value)


class InstalledFile(BaseModel):
    """A file a test installed: its SHA-256 and, when the installer named it, its file name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sha256: Sha256Hex
    filename: Annotated[str, Field(pattern=INSTALLED_FILENAME_PATTERN)] | None = None


class EvidenceRefusal(BaseModel):
    """Part of a test's evidence that ``wheelgate report`` refused: a staged wheel whose RECORD
    does not describe its own members (``record-mismatch``), or installed bytes of a name and
    version the run's index offers that are none of its files (``foreign-bytes``). The
    promoter rejects the set with that reason."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reason: Literal["record-mismatch", "foreign-bytes"]
    filename: Annotated[str, Field(pattern=INSTALLED_FILENAME_PATTERN)] | None = None
    message: Annotated[str, Field(min_length=1, max_length=MAX_REFUSAL_MESSAGE)]


class ManifestTestV2(ManifestTest):
    """One test job's outcome for a set, with every file it installed (manifest v2) and what
    of its evidence ``report`` refused."""

    installed: Annotated[tuple[InstalledFile, ...], Field(max_length=MAX_INSTALLED_PER_TEST)] = ()
    #: Absent when ``report`` refused nothing (so a manifest without refusals reads as before).
    refused: (
        Annotated[
            tuple[EvidenceRefusal, ...], Field(min_length=1, max_length=MAX_REFUSALS_PER_TEST)
        ]
        | None
    ) = None


class ArtifactSet(BaseModel):
    """The files of one index directory that are promoted together, and their tests."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: IndexDir
    files: Annotated[list[ManifestFile], Field(min_length=1, max_length=MAX_FILES_PER_SET)]
    tests: Annotated[tuple[ManifestTest, ...], Field(max_length=MAX_TESTS_PER_SET)] = ()

    @model_validator(mode="after")
    def _unique(self) -> ArtifactSet:
        seen: set[str] = set()
        for f in self.files:
            if f.filename in seen:
                raise ValueError(f"file {f.filename!r} is listed twice in set {self.index!r}")
            seen.add(f.filename)
        check_set_tests(self.index, [t.name for t in self.tests])
        return self

    @property
    def projects(self) -> frozenset[str]:
        return frozenset(f.distribution.project for f in self.files)


class ArtifactSetV2(ArtifactSet):
    """A set whose tests say what they installed (manifest v2)."""

    tests: Annotated[tuple[ManifestTestV2, ...], Field(max_length=MAX_TESTS_PER_SET)] = ()


class Manifest(BaseModel):
    """A run's test-result manifest (``manifests/<run_id>.json``), as every version has it.

    Parse one with :func:`parse_manifest`, which validates it with its version's model.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    schema_: str = Field(alias="schema")
    run_id: RunId
    commit: CommitSha
    sets: Annotated[tuple[ArtifactSet, ...], Field(min_length=1, max_length=MAX_SETS)]

    @model_validator(mode="after")
    def _unique_indexes(self) -> Manifest:
        indexes = [s.index for s in self.sets]
        for index in indexes:
            if indexes.count(index) > 1:
                raise ValueError(f"index directory {index!r} has more than one set")
        return self

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2, exclude_none=True) + "\n"


# Read for runs reported before v2, never written; its docstring stays the published schema's
# description.
class ManifestV1(Manifest):
    """A run's test-result manifest (``manifests/<run_id>.json``)."""

    schema_: Literal["wheelgate/manifest/v1"] = Field(alias="schema")


class ManifestV2(Manifest):
    """Manifest v2: each test result lists the files the test installed."""

    schema_: Literal["wheelgate/manifest/v2"] = Field(alias="schema")
    sets: Annotated[tuple[ArtifactSetV2, ...], Field(min_length=1, max_length=MAX_SETS)]
    #: When the run's commit was made, as the reporter states it (ISO 8601 with a zone): the
    #: run history orders runs by it. ``None``: not stated.
    commit_time: Annotated[str, Field(min_length=20, max_length=40)] | None = None
    #: The CI run's attempt the reporter reports (``GITHUB_RUN_ATTEMPT``).
    attempt: Annotated[int, Field(ge=1)] | None = None


#: The model of each manifest version :func:`parse_manifest` reads.
MANIFEST_MODELS: dict[str, type[Manifest]] = {SCHEMA_V1: ManifestV1, SCHEMA_V2: ManifestV2}


def json_schema(version: str = SCHEMA_V2) -> dict[str, object]:
    """The JSON Schema of manifest ``version`` (default: the one ``wheelgate report`` writes),
    as published in ``schemas/manifest-<v>.json``."""
    schema = MANIFEST_MODELS[version].model_json_schema(by_alias=True, mode="validation")
    short = version.rsplit("/", 1)[-1]
    schema["$id"] = f"urn:wheelgate:schema:manifest:{short}"
    schema["title"] = f"WheelGate test-result manifest {short}"
    return schema


def describe_errors(error: ValidationError, *, names: Mapping[str, str] | None = None) -> str:
    """``error`` on one line: ``where: what`` for its first five problems. ``names`` renames
    top-level fields (to the command-line options they came from)."""
    parts = []
    for item in error.errors()[:5]:
        loc = [str(p) for p in item["loc"]]
        if loc and names:
            loc[0] = names.get(loc[0], loc[0])
        where = ".".join(loc) or "(top level)"
        parts.append(f"{where}: {item['msg']}")
    more = error.error_count() - 5
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    # A repeated key would let two readers see two different manifests in one document.
    result: dict[str, object] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


def parse_manifest(raw: bytes, *, expected_run_id: str | None = None) -> Manifest:
    """Parse and validate manifest bytes.

    Returns a :class:`ManifestV2` or, for a manifest written before v2, a :class:`ManifestV1`.
    Raises :class:`PromotionRejected` with reason ``manifest-too-large``, ``invalid-json``,
    ``unsupported-schema``, ``invalid-manifest`` or ``run-id-mismatch`` (when the manifest's
    ``run_id`` is not the one its key names).
    """
    if len(raw) > MAX_MANIFEST_BYTES:
        raise PromotionRejected(
            Reason.MANIFEST_TOO_LARGE,
            f"manifest is {len(raw)} bytes; the limit is {MAX_MANIFEST_BYTES}",
        )
    try:
        data = json.loads(raw, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise PromotionRejected(
            Reason.INVALID_MANIFEST, f"manifest repeats the key {exc.args[0]!r} in one object"
        ) from exc
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        why = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise PromotionRejected(Reason.INVALID_JSON, f"manifest is not valid JSON: {why}") from exc
    if not isinstance(data, dict):
        raise PromotionRejected(Reason.INVALID_MANIFEST, "manifest must be a JSON object")
    model = MANIFEST_MODELS.get(str(data.get("schema")))
    if model is None:
        raise PromotionRejected(
            Reason.UNSUPPORTED_SCHEMA,
            f"manifest schema is {data.get('schema')!r}; this promoter reads {SCHEMA_V2!r} "
            f"(and {SCHEMA_V1!r}, which carries no install evidence)",
        )
    try:
        manifest = model.model_validate(data)
    except ValidationError as exc:
        raise PromotionRejected(
            Reason.INVALID_MANIFEST, f"manifest is invalid: {describe_errors(exc)}"
        ) from exc
    if expected_run_id is not None and manifest.run_id != expected_run_id:
        raise PromotionRejected(
            Reason.RUN_ID_MISMATCH,
            f"manifest key names run {expected_run_id!r} but the manifest says {manifest.run_id!r}",
        )
    return manifest
