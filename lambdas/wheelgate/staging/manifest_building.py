"""A run's manifest built from what it staged and its test results (what ``wheelgate report``
writes). Pure: the staged files come from :func:`wheelgate.staging.staged_files.staged_sets`."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from wheelgate.core.layout import check_index
from wheelgate.core.manifest import (
    SCHEMA_V2,
    ArtifactSetV2,
    EvidenceRefusal,
    InstalledFile,
    ManifestFile,
    ManifestTestV2,
    ManifestV2,
    Outcome,
    describe_errors,
)
from wheelgate.core.manifest_tests import check_set_tests, check_test_name, check_test_url


@dataclass(frozen=True)
class TestSpec:
    index: str
    name: str
    result: Outcome
    url: str | None
    #: The files the test installed (``--installed``, :mod:`wheelgate.staging.installs`).
    installed: tuple[InstalledFile, ...] = ()
    #: What ``report`` refused of the test's evidence (:mod:`wheelgate.staging.evidence`).
    refused: tuple[EvidenceRefusal, ...] = ()


def parse_test_spec(spec: str) -> TestSpec:
    """``DIR:NAME=passed|failed|skipped[@URL]`` -> :class:`TestSpec`; ``ValueError`` if not,
    or if the directory, name or URL breaks the manifest's rules."""
    head, sep, result_part = spec.partition("=")
    index, colon, name = head.partition(":")
    if not sep or not colon or not index or not name:
        raise ValueError(f"test {spec!r} is not DIR:NAME=passed|failed|skipped[@URL]")
    result, _, url = result_part.partition("@")
    try:
        outcome = Outcome(result)
    except ValueError:
        raise ValueError(f"test {spec!r}: result must be passed, failed or skipped") from None
    return TestSpec(
        index=check_index(index),
        name=check_test_name(name),
        result=outcome,
        url=check_test_url(url) if url else None,
    )


def parse_test_specs(specs: Sequence[str]) -> list[TestSpec]:
    """Every spec parsed (:func:`parse_test_spec`), each directory's tests held to the
    manifest's rules for a set (no name twice, not too many); ``ValueError`` if not."""
    tests = [parse_test_spec(spec) for spec in specs]
    names: dict[str, list[str]] = defaultdict(list)
    for test in tests:
        names[test.index].append(test.name)
    for index, index_names in names.items():
        check_set_tests(index, index_names)
    return tests


def build_manifest(
    *,
    run_id: str,
    commit: str,
    staged: Mapping[str, list[ManifestFile]],
    tests: Sequence[TestSpec],
    commit_time: str | None = None,
    attempt: int | None = None,
) -> ManifestV2:
    """The manifest for what is staged plus test results, stating the commit's time (UTC,
    with its zone) and the CI run's attempt when known (``None``: not stated). Raises
    ``ValueError`` for a test naming an index directory with nothing staged, or (one line)
    for what breaks the manifest's rules."""
    unknown = sorted({t.index for t in tests} - set(staged))
    if unknown:
        raise ValueError(
            f"tests name index directories with nothing staged for run {run_id}: "
            + ", ".join(unknown)
        )
    sets = []
    for index, files in sorted(staged.items()):
        try:
            sets.append(
                ArtifactSetV2(
                    index=index,
                    files=sorted(files, key=lambda f: f.filename),
                    tests=tuple(
                        ManifestTestV2(
                            name=t.name,
                            result=t.result,
                            url=t.url,
                            installed=t.installed,
                            refused=t.refused or None,
                        )
                        for t in tests
                        if t.index == index
                    ),
                )
            )
        except ValidationError as exc:
            raise ValueError(f"set {index!r}: {describe_errors(exc)}") from exc
    try:
        return ManifestV2.model_validate(
            {
                "schema": SCHEMA_V2,
                "run_id": run_id,
                "commit": commit,
                "sets": [s.model_dump() for s in sets],
                "commit_time": commit_time,
                "attempt": attempt,
            }
        )
    except ValidationError as exc:
        raise ValueError(describe_errors(exc)) from exc
