"""``deps.yml``: the reviewed list of third-party files to cache and wheels to mirror. Pure.

Two parts, each checked in full before anything is downloaded or uploaded:

- ``files``: external files cached under S3 keys of an allowed bucket and prefix;
- ``python``: pinned requirements with their wheel files, mirrored into index directories
  through the normal gate (staged, then promoted by the promoter on a ``deps-review`` test).

:func:`load_deps` parses the YAML and reports every problem at once, each with its line number
(:class:`DepsInvalid`). See ``docs/deps.md``; the models, and the JSON Schema in
``schemas/deps-v1.json`` generated from them, are :mod:`wheelgate.deps.deps_file`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml
from packaging.version import Version
from pydantic import ValidationError

from wheelgate.deps.deps_file import (
    SCHEMA_DEPS_V1,
    DepsFile,
    FileEntry,
    PythonEntry,
    Validation,
    url_filename,
)
from wheelgate.deps.problems import DepsInvalid, DepsProblem
from wheelgate.deps.targets import Deps, FileTarget, WheelTarget
from wheelgate.deps.value_checks import key_problem, pinned_version, url_problem, wheel_problem
from wheelgate.deps.yaml_lines import Path, label_of, line_of, walk_nodes

_HOST = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$")


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
        problems.append(DepsProblem(line_of(lines, path), entry, message))
    return problems


def _validate_rules(
    raw: Any, lines: Mapping[Path, int], problems: list[DepsProblem]
) -> Validation | None:
    try:
        rules = Validation.model_validate(raw)
    except ValidationError as exc:
        problems += _pydantic_problems(exc, ("validation",), lines, "validation")
        return None
    at = line_of(lines, ("validation",))
    for host in rules.hosts:
        if not _HOST.fullmatch(host):
            problems.append(DepsProblem(at, "validation", f"host {host!r} is not a host name"))
    for name, rule in rules.buckets.items():
        for prefix in rule.prefixes:
            problem = key_problem(prefix.rstrip("/")) if prefix.endswith("/") else "no final '/'"
            if problem:
                problems.append(
                    DepsProblem(
                        line_of(lines, ("validation", "buckets", name)),
                        "validation",
                        f"prefix {prefix!r} of bucket {name!r}: {problem}",
                    )
                )
    if rules.default_bucket is not None and rules.default_bucket not in rules.buckets:
        problems.append(
            DepsProblem(
                line_of(lines, ("validation", "default_bucket")),
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
        entry, at = label_of(base), line_of(lines, base)

        def report(field: str, message: str, base: Path = base, entry: str = entry) -> None:
            problems.append(DepsProblem(line_of(lines, (*base, field)), entry, message))

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
        at = line_of(lines, base)
        values = raw if isinstance(raw, dict) else {}
        requirement = values.get("requirement")
        entry = label_of(base) + (f" ({requirement})" if isinstance(requirement, str) else "")

        def report(path: Path, message: str, entry: str = entry) -> None:
            problems.append(DepsProblem(line_of(lines, path), entry, message))

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
            filenames.setdefault(filename, line_of(lines, path))
            if pin is not None and (problem := wheel_problem(filename, *pin, rules)):
                report(path, problem)
        if model is None or pin is None:
            continue
        targets += _wheel_targets(model, pin[0], rules, base, entry, lines)
    return targets


def _wheel_targets(
    model: PythonEntry,
    project: str,
    rules: Validation | None,
    base: Path,
    entry: str,
    lines: Mapping[Path, int],
) -> list[WheelTarget]:
    """The wheels of a valid ``python`` entry (at ``base``) to mirror, each into the entry's
    index directories (``all``: those of ``rules``)."""
    targets = []
    chosen = tuple(rules.indexes if rules else ()) if model.indexes == "all" else model.indexes
    for j, wheel in enumerate(model.wheels):
        targets.append(
            WheelTarget(
                entry=entry,
                line=line_of(lines, (*base, "wheels", j)),
                requirement=model.requirement,
                project=project,
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
    for _ in walk_nodes(root, (), lines, problems):
        pass
    if data.get("schema") != SCHEMA_DEPS_V1:
        problems.append(
            DepsProblem(
                line_of(lines, ("schema",)),
                "schema",
                f"schema is {data.get('schema')!r}; expected {SCHEMA_DEPS_V1!r}",
            )
        )
    unknown = sorted(set(map(str, data)) - {"schema", "validation", "files", "python"})
    for name in unknown:
        problems.append(DepsProblem(line_of(lines, (name,)), name, f"unknown field {name!r}"))
    if "validation" not in data:
        problems.append(DepsProblem(1, "validation", "validation is missing"))
        rules = None
    else:
        rules = _validate_rules(data["validation"], lines, problems)
    sections: dict[str, list[Any]] = {}
    for name in ("files", "python"):
        value = data.get(name) or []
        if not isinstance(value, list):
            problems.append(DepsProblem(line_of(lines, (name,)), name, f"{name} must be a list"))
            value = []
        sections[name] = value
    files = _check_files(sections["files"], rules, lines, problems)
    wheels = _check_python(sections["python"], rules, lines, problems)
    if problems:
        raise DepsInvalid(problems)
    document = DepsFile.model_validate(data)
    return Deps(document=document, files=tuple(files), wheels=tuple(wheels))
