"""``deps.yml``: the reviewed list of third-party files to cache and wheels to mirror. Pure.

Two parts, each checked in full before anything is downloaded or uploaded:

- ``files``: external files cached under S3 keys of an allowed bucket and prefix;
- ``python``: pinned requirements with their wheel files, mirrored into index directories
  through the normal gate (staged, then promoted by the promoter on a ``deps-review`` test).

:func:`load_deps` parses the YAML and reports every problem at once, each with its line number
(:class:`DepsInvalid`). See ``docs/deps.md``; the JSON Schema in ``schemas/deps-v1.json`` is
generated from the models here and a test keeps the two equal.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import posixpath
import re
import secrets
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal
from urllib.parse import unquote, urlsplit

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import (
    InvalidWheelFilename,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from wheelgate.core.acceptance import MIRROR_REVIEW_TEST
from wheelgate.core.layout import MIRROR_RUN_PREFIX
from wheelgate.core.manifest import IndexDir, Sha256Hex
from wheelgate.core.redact import redact_urls

SCHEMA_DEPS_V1 = "wheelgate/deps/v1"
#: Run ids of dependency-mirror runs start with this (the promoter's acceptance policy knows it).
RUN_PREFIX = MIRROR_RUN_PREFIX
#: The one test a mirror run's sets carry: the review of deps.yml (its pull request).
REVIEW_TEST = MIRROR_REVIEW_TEST
#: S3's limit on key length, in UTF-8 bytes.
MAX_KEY_BYTES = 1024
#: What a cache key may hold: S3's "safe characters" in ``/``-separated segments.
KEY_PATTERN = r"^[A-Za-z0-9!_.*'()+=@,~-]+(/[A-Za-z0-9!_.*'()+=@,~-]+)*$"
_KEY = re.compile(KEY_PATTERN)
_HOST = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$")

Url = Annotated[str, Field(min_length=1, max_length=2048, json_schema_extra={"format": "uri"})]
Key = Annotated[
    str, Field(min_length=1, max_length=MAX_KEY_BYTES, json_schema_extra={"pattern": KEY_PATTERN})
]
Size = Annotated[int, Field(gt=0, le=5 * 1024**4)]


# -- models -------------------------------------------------------------------------------


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


# -- problems -----------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class DepsProblem:
    """One thing wrong with deps.yml: 1-based line, the entry (``files[2]``) and a sentence."""

    line: int
    entry: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.entry}: {self.message}"


class DepsInvalid(ValueError):
    """deps.yml breaks its rules; ``problems`` lists every one, in line order."""

    def __init__(self, problems: Sequence[DepsProblem]) -> None:
        self.problems = sorted(set(problems))
        super().__init__("\n".join(str(p) for p in self.problems))


# -- what a valid file asks for -----------------------------------------------------------


@dataclass(frozen=True)
class FileTarget:
    """A file to cache: where it comes from, where it goes, what its bytes must be."""

    entry: str
    line: int
    url: str
    bucket: str
    key: str
    sha256: str
    size: int | None


@dataclass(frozen=True)
class WheelTarget:
    """A wheel to mirror into ``indexes``."""

    entry: str
    line: int
    requirement: str
    project: str
    filename: str
    url: str
    sha256: str
    size: int | None
    indexes: tuple[str, ...]


@dataclass(frozen=True)
class Deps:
    """A validated deps.yml and the targets it names."""

    document: DepsFile
    files: tuple[FileTarget, ...]
    wheels: tuple[WheelTarget, ...]

    @property
    def run_id(self) -> str | None:
        """``deps-<12 hex>``: the reviewed python section's id, or ``None`` without one.

        A hash of the section's canonical JSON (``indexes: all`` resolved): a changed section,
        or a new index directory, has another id. Each sync stages under a fresh mirror run of
        this id (:func:`new_mirror_run_id`), which no one can guess in advance.
        """
        if not self.document.python:
            return None
        return python_run_id(self.document.python, self.document.validation.indexes)


def new_mirror_run_id(review_id: str) -> str:
    """A fresh mirror run id of the reviewed section ``review_id``: ``<review_id>-<16 hex>``.

    The random part keeps the run unpredictable, so no other writer can stage files under it
    before the sync does (the bucket policy refuses them ``runs/deps-*`` as well).
    """
    return f"{review_id}-{secrets.token_hex(8)}"


def check_mirror_run_id(review_id: str, run_id: str) -> str:
    """``run_id`` if it is a mirror run of ``review_id`` (as ``new_mirror_run_id`` makes them);
    else ``ValueError`` naming both."""
    prefix, _, nonce = run_id.rpartition("-")
    if prefix != review_id or len(nonce) != 16 or not all(c in "0123456789abcdef" for c in nonce):
        raise ValueError(
            f"{run_id!r} is not a mirror run of this deps.yml "
            f"(expected {review_id}-<16 hex>, as `--step upload` printed it)"
        )
    return run_id


def python_run_id(entries: Sequence[PythonEntry], all_indexes: Sequence[str]) -> str:
    """``deps-`` and the first 12 hex digits of the SHA-256 of the canonical JSON of the
    python section, with ``indexes: all`` replaced by ``all_indexes``."""
    resolved = [
        {**e.model_dump(mode="json"), "indexes": list(all_indexes)}
        if e.indexes == "all"
        else e.model_dump(mode="json")
        for e in entries
    ]
    canonical = json.dumps(resolved, sort_keys=True, separators=(",", ":"))
    return RUN_PREFIX + hashlib.sha256(canonical.encode()).hexdigest()[:12]


def url_filename(url: str) -> str:
    """The file name a download URL ends with (percent-decoded)."""
    return unquote(posixpath.basename(urlsplit(url).path))


# -- YAML with line numbers ---------------------------------------------------------------

Path = tuple[str | int, ...]


def _walk(
    node: yaml.Node, path: Path, lines: dict[Path, int], problems: list[DepsProblem]
) -> Iterator[tuple[Path, yaml.Node]]:
    lines[path] = node.start_mark.line + 1
    yield path, node
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if key in seen:
                problems.append(
                    DepsProblem(
                        line,
                        _label(path) or "(top level)",
                        f"field {key!r} is given twice (first at line {seen[key]})",
                    )
                )
            seen.setdefault(key, line)
            yield from _walk(value_node, (*path, key), lines, problems)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            yield from _walk(item, (*path, i), lines, problems)


def _label(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def _line(lines: Mapping[Path, int], path: Path) -> int:
    while path not in lines and path:
        path = path[:-1]
    return lines.get(path, 1)


# -- checks -------------------------------------------------------------------------------


def key_problem(key: str) -> str | None:
    """Why ``key`` is not a safe cache key, or ``None``."""
    if not key:
        return "key is empty"
    if any(unicodedata.category(c).startswith("C") for c in key):
        return f"key {key!r} contains control characters"
    if "\\" in key:
        return f"key {key!r} contains a backslash"
    if key.startswith("/"):
        return f"key {key!r} starts with '/'"
    if "//" in key:
        return f"key {key!r} contains '//'"
    if ".." in key:
        return f"key {key!r} contains '..'"
    if len(key.encode()) > MAX_KEY_BYTES:
        return f"key {key!r} is longer than {MAX_KEY_BYTES} bytes"
    if not _KEY.fullmatch(key):
        return (
            f"key {key!r} must be '/'-separated segments of letters, digits and "
            "! _ . * ' ( ) + = @ , ~ - (no trailing '/')"
        )
    return None


def url_problem(url: str, hosts: frozenset[str] | None) -> str | None:
    """Why ``url`` may not be downloaded from, or ``None``. ``hosts=None``: not checked. The
    reason quotes the URL with its credentials masked (:func:`redact_urls`)."""
    problem = _url_problem(url, hosts)
    return redact_urls(problem) if problem else None


def _url_problem(url: str, hosts: frozenset[str] | None) -> str | None:
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError as exc:
        return f"URL {url!r} is malformed: {exc}"
    if parts.scheme != "https":
        return f"URL {url!r} is not https"
    if not host:
        return f"URL {url!r} has no host"
    if parts.username is not None or parts.password is not None:
        return f"URL {url!r} carries credentials; deps.yml is public, use none"
    if any(c.isspace() or unicodedata.category(c).startswith("C") for c in url):
        return f"URL {url!r} contains spaces or control characters"
    if hosts is not None and host not in hosts:
        return f"host {host!r} of URL {url!r} is not in validation.hosts"
    return None


def pinned_version(requirement: str) -> tuple[str, Version]:
    """``(canonical name, version)`` of a ``name==version`` requirement.

    Raises ``ValueError`` if it does not parse, or is not pinned to one exact version with
    ``==`` (no wildcard, no extras, markers or URL: a mirror copies files, it resolves nothing).
    """
    try:
        parsed = Requirement(requirement)
    except InvalidRequirement as exc:
        reason = str(exc).splitlines()[0]
        raise ValueError(f"requirement {requirement!r} cannot be parsed: {reason}") from exc
    specs = list(parsed.specifier)
    if parsed.url or parsed.marker or parsed.extras:
        raise ValueError(
            f"requirement {requirement!r} must be a plain name==version (no URL, extras or markers)"
        )
    if len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version:
        raise ValueError(f"requirement {requirement!r} is not pinned with == to one version")
    try:
        return canonicalize_name(parsed.name), Version(specs[0].version)
    except InvalidVersion as exc:  # pragma: no cover - packaging rejects it while parsing
        raise ValueError(f"requirement {requirement!r}: {exc}") from exc


def _matches(value: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(value, p) for p in patterns)


def wheel_problem(
    filename: str, project: str, version: Version, rules: Validation | None
) -> str | None:
    """Why ``filename`` is not a wheel of ``project`` ``version`` with allowed tags, or None."""
    if not filename.endswith(".whl"):
        return f"{filename!r} is not a wheel file name (.whl)"
    try:
        name, wheel_version, _build, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename as exc:
        return f"{filename!r} is not a valid wheel file name: {exc}"
    if name != project or wheel_version != version:
        return f"wheel {filename!r} is not {project} {version} (it is {name} {wheel_version})"
    if rules is None:
        return None
    python = sorted({t.interpreter for t in tags if not _matches(t.interpreter, rules.python_tags)})
    platforms = sorted({t.platform for t in tags if not _matches(t.platform, rules.platforms)})
    if python:
        return f"wheel {filename!r} has Python tag(s) {', '.join(python)} not in python_tags"
    if platforms:
        return f"wheel {filename!r} has platform tag(s) {', '.join(platforms)} not in platforms"
    return None


def _pydantic_problems(
    error: ValidationError, base: Path, lines: Mapping[Path, int], entry: str
) -> list[DepsProblem]:
    problems = []
    for item in error.errors():
        loc: Path = tuple(item["loc"])
        path = (*base, *loc)
        field = ".".join(str(p) for p in loc)
        if item["type"] == "missing":
            message = f"{field} is missing"
        elif loc and loc[-1] == "sha256" and item["type"] == "string_pattern_mismatch":
            message = f"sha256 {item['input']!r} is not 64 lowercase hex digits"
        elif item["type"] == "extra_forbidden":
            message = f"unknown field {field!r}"
        else:
            message = f"{field or 'entry'}: {item['msg']}"
        problems.append(DepsProblem(_line(lines, path), entry, message))
    return problems


def _validate_rules(
    raw: Any, lines: Mapping[Path, int], problems: list[DepsProblem]
) -> Validation | None:
    try:
        rules = Validation.model_validate(raw)
    except ValidationError as exc:
        problems += _pydantic_problems(exc, ("validation",), lines, "validation")
        return None
    at = _line(lines, ("validation",))
    for host in rules.hosts:
        if not _HOST.fullmatch(host):
            problems.append(DepsProblem(at, "validation", f"host {host!r} is not a host name"))
    for name, rule in rules.buckets.items():
        for prefix in rule.prefixes:
            problem = key_problem(prefix.rstrip("/")) if prefix.endswith("/") else "no final '/'"
            if problem:
                problems.append(
                    DepsProblem(
                        _line(lines, ("validation", "buckets", name)),
                        "validation",
                        f"prefix {prefix!r} of bucket {name!r}: {problem}",
                    )
                )
    if rules.default_bucket is not None and rules.default_bucket not in rules.buckets:
        problems.append(
            DepsProblem(
                _line(lines, ("validation", "default_bucket")),
                "validation",
                f"default_bucket {rules.default_bucket!r} is not in validation.buckets",
            )
        )
    return rules


def _check_files(
    raw_entries: list[Any],
    rules: Validation | None,
    lines: Mapping[Path, int],
    problems: list[DepsProblem],
) -> list[FileTarget]:
    hosts = frozenset(rules.hosts) if rules else None
    targets: list[FileTarget] = []
    first: dict[tuple[str, str], tuple[int, str, str]] = {}
    for i, raw in enumerate(raw_entries):
        base: Path = ("files", i)
        entry, at = _label(base), _line(lines, base)

        def report(field: str, message: str, base: Path = base, entry: str = entry) -> None:
            problems.append(DepsProblem(_line(lines, (*base, field)), entry, message))

        try:
            model = FileEntry.model_validate(raw)
        except ValidationError as exc:
            problems.extend(_pydantic_problems(exc, base, lines, entry))
            model = None
        values = raw if isinstance(raw, dict) else {}
        key, url = values.get("key"), values.get("url")
        bad_key = isinstance(key, str) and key_problem(key)
        if bad_key:
            report("key", bad_key)
        if isinstance(url, str) and (problem := url_problem(url, hosts)):
            report("url", problem)
        bucket = values.get("bucket") or (rules.default_bucket if rules else None)
        if rules is not None and isinstance(key, str):
            if bucket is None:
                report("bucket", "no bucket: set bucket or validation.default_bucket")
            elif bucket not in rules.buckets:
                known = ", ".join(sorted(rules.buckets)) or "none"
                report("bucket", f"unknown bucket {bucket!r} (validation.buckets: {known})")
            elif not bad_key and not any(key.startswith(p) for p in rules.buckets[bucket].prefixes):
                allowed = ", ".join(rules.buckets[bucket].prefixes)
                report("key", f"key {key!r} is outside the prefixes of {bucket!r}: {allowed}")
        if isinstance(key, str) and isinstance(bucket, str):
            previous = first.get((bucket, key))
            if previous is None:
                first[(bucket, key)] = (at, str(url), str(values.get("sha256")))
            elif previous[1] != url:
                report(
                    "key",
                    f"key {key!r} is also listed at line {previous[0]} with another URL "
                    f"({previous[1]})",
                )
            else:
                report("key", f"duplicate key {key!r} (first listed at line {previous[0]})")
        if model is not None and bucket is not None:
            targets.append(
                FileTarget(entry, at, model.url, bucket, model.key, model.sha256, model.size)
            )
    return targets


def _check_python(
    raw_entries: list[Any],
    rules: Validation | None,
    lines: Mapping[Path, int],
    problems: list[DepsProblem],
) -> list[WheelTarget]:
    hosts = frozenset(rules.hosts) if rules else None
    targets: list[WheelTarget] = []
    pins: dict[tuple[str, Version], int] = {}
    filenames: dict[str, int] = {}
    for i, raw in enumerate(raw_entries):
        base: Path = ("python", i)
        at = _line(lines, base)
        values = raw if isinstance(raw, dict) else {}
        requirement = values.get("requirement")
        entry = _label(base) + (f" ({requirement})" if isinstance(requirement, str) else "")

        def report(path: Path, message: str, entry: str = entry) -> None:
            problems.append(DepsProblem(_line(lines, path), entry, message))

        try:
            model = PythonEntry.model_validate(raw)
        except ValidationError as exc:
            problems.extend(_pydantic_problems(exc, base, lines, entry))
            model = None
        pin: tuple[str, Version] | None = None
        if isinstance(requirement, str):
            try:
                pin = pinned_version(requirement)
            except ValueError as exc:
                report((*base, "requirement"), str(exc))
        if pin is not None:
            if pin in pins:
                report(
                    (*base, "requirement"),
                    f"{pin[0]} {pin[1]} is already listed at line {pins[pin]}",
                )
            pins.setdefault(pin, at)
        indexes = values.get("indexes", "all")
        if rules is not None and isinstance(indexes, list):
            for j, index in enumerate(indexes):
                if isinstance(index, str) and index not in rules.indexes:
                    report(
                        (*base, "indexes", j),
                        f"unknown index directory {index!r} (validation.indexes: "
                        f"{', '.join(rules.indexes) or 'none'})",
                    )
        if rules is not None and indexes == "all" and not rules.indexes:
            report((*base, "indexes"), "indexes is 'all' but validation.indexes is empty")
        wheels = values.get("wheels")
        for j, wheel in enumerate(wheels if isinstance(wheels, list) else []):
            url = wheel.get("url") if isinstance(wheel, dict) else None
            if not isinstance(url, str):
                continue
            path: Path = (*base, "wheels", j, "url")
            if problem := url_problem(url, hosts):
                report(path, problem)
            filename = url_filename(url)
            if filename in filenames:
                report(path, f"wheel {filename!r} is already listed at line {filenames[filename]}")
            filenames.setdefault(filename, _line(lines, path))
            if pin is not None and (problem := wheel_problem(filename, *pin, rules)):
                report(path, problem)
        if model is None or pin is None:
            continue
        chosen = tuple(rules.indexes if rules else ()) if model.indexes == "all" else model.indexes
        for j, wheel in enumerate(model.wheels):
            targets.append(
                WheelTarget(
                    entry=entry,
                    line=_line(lines, (*base, "wheels", j)),
                    requirement=model.requirement,
                    project=pin[0],
                    filename=wheel.filename,
                    url=wheel.url,
                    sha256=wheel.sha256,
                    size=wheel.size,
                    indexes=tuple(chosen),
                )
            )
    return targets


def load_deps(text: str) -> Deps:
    """Parse and check deps.yml text.

    Raises :class:`DepsInvalid` listing every problem with its line: YAML syntax, unknown or
    missing fields, unknown bucket, key outside its bucket's prefixes, unsafe keys, non-https
    URLs or hosts not allowed, malformed sha256, duplicate keys (or one key with two URLs),
    unparseable or unpinned requirements, wheel names not matching their requirement or the
    allowed tags, unknown index directories.
    """
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise DepsInvalid([DepsProblem(line, "(file)", f"not valid YAML: {exc.problem}")]) from exc
    except yaml.YAMLError as exc:
        raise DepsInvalid([DepsProblem(1, "(file)", f"not valid YAML: {exc}")]) from exc
    if root is None or not isinstance(data, dict):
        raise DepsInvalid([DepsProblem(1, "(file)", "deps.yml must be a mapping")])
    lines: dict[Path, int] = {}
    problems: list[DepsProblem] = []
    for _ in _walk(root, (), lines, problems):
        pass
    if data.get("schema") != SCHEMA_DEPS_V1:
        problems.append(
            DepsProblem(
                _line(lines, ("schema",)),
                "schema",
                f"schema is {data.get('schema')!r}; expected {SCHEMA_DEPS_V1!r}",
            )
        )
    unknown = sorted(set(map(str, data)) - {"schema", "validation", "files", "python"})
    for name in unknown:
        problems.append(DepsProblem(_line(lines, (name,)), name, f"unknown field {name!r}"))
    if "validation" not in data:
        problems.append(DepsProblem(1, "validation", "validation is missing"))
        rules = None
    else:
        rules = _validate_rules(data["validation"], lines, problems)
    sections: dict[str, list[Any]] = {}
    for name in ("files", "python"):
        value = data.get(name) or []
        if not isinstance(value, list):
            problems.append(DepsProblem(_line(lines, (name,)), name, f"{name} must be a list"))
            value = []
        sections[name] = value
    files = _check_files(sections["files"], rules, lines, problems)
    wheels = _check_python(sections["python"], rules, lines, problems)
    if problems:
        raise DepsInvalid(problems)
    document = DepsFile.model_validate(data)
    return Deps(document=document, files=tuple(files), wheels=tuple(wheels))
