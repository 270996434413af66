"""The release rule: a file ships only when a passed test of its set installed its bytes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.samples import SHA_A, SHA_B, TORCH, manifest_dict, manifest_dict_v1
from wheelgate.core.acceptance import AcceptancePolicy, check_set, decide
from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.evidence import check_evidence, evidence_by_file
from wheelgate.core.manifest import ArtifactSet, parse_manifest
from wheelgate.core.records import recorded_tests

SHA_C = "c" * 64
OTHER = "torch-2.7.0a0+rocm7.0.0-cp311-cp311-linux_x86_64.whl"


def artifact_set(*tests: dict[str, Any], files: tuple[str, ...] = (SHA_A,)) -> ArtifactSet:
    """A v2 set with one file per SHA-256 of ``files`` and ``tests``."""
    doc = manifest_dict()
    names = [TORCH, OTHER]
    doc["sets"][0]["files"] = [
        {"filename": names[n], "sha256": sha, "size": 1} for n, sha in enumerate(files)
    ]
    doc["sets"][0]["tests"] = list(tests)
    return parse_manifest(json.dumps(doc).encode()).sets[0]


def ran(name: str, result: str, *installed: str) -> dict[str, Any]:
    return {"name": name, "result": result, "installed": [{"sha256": s} for s in installed]}


def rejection(s: ArtifactSet) -> PromotionRejected:
    with pytest.raises(PromotionRejected) as caught:
        check_evidence(s)
    assert caught.value.index == s.index
    return caught.value


def test_a_file_a_passed_test_installed_is_released_on_its_evidence() -> None:
    # Given a passed test that installed the staged file and a dependency from nightly
    s = artifact_set(ran("smoke", "passed", SHA_A, SHA_C), ran("lint", "passed"))
    # Then the set may ship, and the file names the test it ships on
    check_evidence(s)
    assert evidence_by_file(s) == {TORCH: ("smoke",)}


def test_a_file_only_a_failed_test_installed_is_not_released() -> None:
    s = artifact_set(
        ran("smoke", "passed", SHA_A), ran("gpu", "failed", SHA_B), files=(SHA_A, SHA_B)
    )
    error = rejection(s)
    assert error.reason is Reason.UNTESTED_FILE
    assert OTHER in error.message
    assert TORCH not in error.message
    assert evidence_by_file(s) == {TORCH: ("smoke",), OTHER: ()}
    # And a whole set with a failed test is refused for that first.
    with pytest.raises(PromotionRejected) as caught:
        check_set(s, AcceptancePolicy())
    assert caught.value.reason is Reason.TESTS_FAILED


def test_a_file_no_test_installed_is_an_untested_file() -> None:
    # Given the build staged a second wheel (another Python) that no test installed
    s = artifact_set(ran("smoke", "passed", SHA_A), files=(SHA_A, SHA_B))
    # Then the set is rejected, naming that file
    error = rejection(s)
    assert error.reason is Reason.UNTESTED_FILE
    assert OTHER in error.message
    with pytest.raises(PromotionRejected) as caught:
        check_set(s, AcceptancePolicy())
    assert caught.value.reason is Reason.UNTESTED_FILE


def test_evidence_for_other_bytes_is_no_evidence() -> None:
    # Given the test installed bytes with another hash (the staged file was replaced after
    # the test, and the manifest lists what is staged now)
    s = artifact_set(ran("smoke", "passed", SHA_B))
    error = rejection(s)
    assert error.reason is Reason.UNTESTED_FILE
    assert TORCH in error.message


def test_a_passed_test_without_evidence_vouches_for_nothing() -> None:
    error = rejection(artifact_set(ran("smoke", "passed")))
    assert error.reason is Reason.UNTESTED_FILE
    assert "--installed" in error.message


def test_the_untested_files_named_are_bounded() -> None:
    doc = manifest_dict()
    doc["sets"][0]["files"] = [
        {"filename": f"torch-2.7.0+{n}-py3-none-any.whl", "sha256": f"{n:064x}", "size": 1}
        for n in range(1000)
    ]
    error = rejection(parse_manifest(json.dumps(doc).encode()).sets[0])
    assert "1000 file(s)" in error.message
    assert len(error.message) < 1500


def test_a_v1_manifest_has_no_evidence_so_its_sets_are_rejected() -> None:
    manifest = parse_manifest(json.dumps(manifest_dict_v1()).encode())
    decision = decide(manifest, AcceptancePolicy())
    assert decision.accepted == ()
    [(_, error)] = decision.rejected
    assert error.reason is Reason.EVIDENCE_MISSING
    assert "wheelgate/manifest/v1" in error.message
    assert evidence_by_file(manifest.sets[0]) == {TORCH: ()}


def test_a_v1_manifest_whose_test_failed_says_so_first() -> None:
    doc = manifest_dict_v1()
    doc["sets"][0]["tests"][0]["result"] = "failed"
    decision = decide(parse_manifest(json.dumps(doc).encode()), AcceptancePolicy())
    assert [e.reason for _, e in decision.rejected] == [Reason.TESTS_FAILED]


def test_a_record_lists_the_tests_not_what_they_installed() -> None:
    s = artifact_set(ran("smoke", "passed", SHA_A))
    assert recorded_tests(s.tests) == [{"name": "smoke", "result": "passed"}]


def refused(reason: str, filename: str | None = None) -> dict[str, Any]:
    return {"reason": reason, "filename": filename, "message": f"{reason} of {filename}"}


@pytest.mark.parametrize(
    ("result", "rejected"), [("passed", True), ("skipped", False)], ids=["passed", "skipped"]
)
@pytest.mark.parametrize("reason", ["record-mismatch", "foreign-bytes"])
def test_evidence_report_refused_rejects_the_set_with_its_reason(
    reason: str, result: str, rejected: bool
) -> None:
    # Given report refused part of a test's evidence (a lying RECORD, another run's bytes)
    refusing = ran("gpu", result, SHA_A) | {"refused": [refused(reason, TORCH)]}
    s = artifact_set(ran("smoke", "passed", SHA_A), refusing)
    if not rejected:
        # A skipped test vouches for nothing, so its refusals do not matter
        check_evidence(s)
        return
    # Then the set is rejected with that reason, naming the test and what report said
    error = rejection(s)
    assert error.reason == Reason(reason)
    assert "test 'gpu' passed on bytes users would not get" in error.message
    assert f"{reason} of {TORCH}" in error.message


def test_a_passed_test_that_installed_another_build_of_a_release_of_the_set_is_refused() -> None:
    # Given every file of the set was installed by a passed test, and another passed test
    # installed a file named like the set's release with other bytes (another run's build)
    other_build = {"sha256": SHA_C, "filename": OTHER}
    s = artifact_set(
        ran("smoke", "passed", SHA_A, SHA_B),
        {"name": "gpu", "result": "passed", "installed": [other_build]},
        files=(SHA_A, SHA_B),
    )
    # Then the set is rejected: that test ran on bytes users would not get
    error = rejection(s)
    assert error.reason is Reason.FOREIGN_BYTES
    assert f"installed {OTHER} (sha256 {SHA_C})" in error.message


def test_a_dependency_that_is_no_release_of_the_set_is_fine_whatever_its_bytes() -> None:
    s = artifact_set(
        ran("smoke", "passed", SHA_A)
        | {
            "installed": [
                {"sha256": SHA_A, "filename": TORCH},
                {"sha256": SHA_C, "filename": "filelock-3.18.0-py3-none-any.whl"},
            ]
        }
    )
    check_evidence(s)
