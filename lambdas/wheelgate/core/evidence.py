"""The release rule: a file ships only on the evidence of a passed test that installed it. Pure.

A v2 manifest's tests list the SHA-256 of every file they installed. A file of a set is released
only when its SHA-256 (the manifest's, which verification holds equal to S3's own checksum of
the staged object) is one that a *passed* test of the same set installed. So the bytes released
are the bytes a passed test ran: a staged file replaced after its test no longer matches, and a
file no passed test installed (another Python's wheel of the same build) is not released
unseen. Evidence for hashes that are not files of the set (dependencies from nightly) is fine.

A passed test vouches only when it ran on bytes users get. ``wheelgate report`` (in the
reporter's job, which reads staging and nightly) refuses evidence it cannot trust and says so
in the test's ``refused`` list: a wheel whose RECORD does not describe its own members
(``record-mismatch``), or installed bytes of a name and version the run's index offers that
are none of its files (``foreign-bytes``). The promoter rejects the set for either, and checks
the second itself for the set's own releases: an installed file named like a release of the
set (same project and version) whose SHA-256 is none of the set's files of that release is
another build, whatever the page the test installed from said.

A v1 manifest carries no evidence, so nothing of it is released. Break-glass overrides skip the
tests, and with them this rule.
"""

from __future__ import annotations

from collections import defaultdict

from packaging.version import Version

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.manifest import (
    SCHEMA_V2,
    ArtifactSet,
    ArtifactSetV2,
    Outcome,
    parse_distribution_filename,
)

#: How many untested files a rejection names; the count says how many there are.
NAMED_FILES = 10


def installed_by_passed_tests(artifact_set: ArtifactSetV2) -> dict[str, tuple[str, ...]]:
    """SHA-256 -> the names of the set's passed tests that installed those bytes."""
    tests: dict[str, list[str]] = defaultdict(list)
    for test in artifact_set.tests:
        if test.result is Outcome.PASSED:
            for installed in test.installed:
                if test.name not in tests[installed.sha256]:
                    tests[installed.sha256].append(test.name)
    return {sha256: tuple(names) for sha256, names in tests.items()}


def evidence_by_file(artifact_set: ArtifactSet) -> dict[str, tuple[str, ...]]:
    """Each file of the set -> the passed tests it ships on (none for a v1 set)."""
    installed = (
        installed_by_passed_tests(artifact_set) if isinstance(artifact_set, ArtifactSetV2) else {}
    )
    return {f.filename: installed.get(f.sha256, ()) for f in artifact_set.files}


def check_evidence(artifact_set: ArtifactSet) -> None:
    """Raise :class:`PromotionRejected` unless every file of the set was installed by a passed
    test of it: ``evidence-missing`` for a v1 set (it has no evidence), ``untested-file``
    naming the files no passed test installed."""
    index = artifact_set.index
    if not isinstance(artifact_set, ArtifactSetV2):
        raise PromotionRejected(
            Reason.EVIDENCE_MISSING,
            f"set {index!r} comes from a wheelgate/manifest/v1 manifest, which does not say "
            f"what its tests installed; report the run again with {SCHEMA_V2} "
            "(wheelgate report --installed)",
            index=index,
        )
    check_refused_evidence(artifact_set)
    untested = sorted(name for name, tests in evidence_by_file(artifact_set).items() if not tests)
    if not untested:
        check_own_releases(artifact_set)
        return
    named = ", ".join(untested[:NAMED_FILES]) + (", ..." if len(untested) > NAMED_FILES else "")
    hint = (
        ""
        if any(t.installed for t in artifact_set.tests if t.result is Outcome.PASSED)
        else " (no passed test says what it installed: wheelgate report --installed)"
    )
    raise PromotionRejected(
        Reason.UNTESTED_FILE,
        f"set {index!r} has {len(untested)} file(s) whose bytes no passed test installed: "
        f"{named}{hint}; only what a test installed is released",
        index=index,
    )


def check_refused_evidence(artifact_set: ArtifactSetV2) -> None:
    """Raise :class:`PromotionRejected` with the first refusal's reason when ``report``
    refused part of a passed test's evidence (module docstring)."""
    for test in artifact_set.tests:
        if test.result is Outcome.PASSED and test.refused:
            first = test.refused[0]
            more = len(test.refused) - 1
            raise PromotionRejected(
                Reason(first.reason),
                f"set {artifact_set.index!r}: test {test.name!r} passed on bytes users would "
                f"not get: {first.message}" + (f" (and {more} more)" if more > 0 else ""),
                index=artifact_set.index,
            )


def check_own_releases(artifact_set: ArtifactSetV2) -> None:
    """Raise :class:`PromotionRejected` (``foreign-bytes``) when a passed test installed a file
    named like one of the set's releases whose SHA-256 is none of the set's files of it."""
    releases: dict[tuple[str, Version], set[str]] = defaultdict(set)
    for file in artifact_set.files:
        dist = parse_distribution_filename(file.filename)
        releases[(dist.project, dist.version)].add(file.sha256)
    for test in artifact_set.tests:
        if test.result is not Outcome.PASSED:
            continue
        for installed in test.installed:
            if installed.filename is None:
                continue
            try:
                dist = parse_distribution_filename(installed.filename)
            except ValueError:
                continue
            offered = releases.get((dist.project, dist.version))
            if offered is not None and installed.sha256 not in offered:
                raise PromotionRejected(
                    Reason.FOREIGN_BYTES,
                    f"set {artifact_set.index!r}: test {test.name!r} installed "
                    f"{installed.filename} (sha256 {installed.sha256}), which is none of the "
                    f"set's files of {dist.project} {dist.version}: it ran on another build "
                    "than the one users would get",
                    index=artifact_set.index,
                )
