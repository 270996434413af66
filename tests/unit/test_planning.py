from __future__ import annotations

import pytest

from tests.unit.samples import COMMIT, INDEX, SHA_A, SHA_B, TORCH, manifest_dict
from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.manifest import ManifestV2
from wheelgate.core.objects import META_COMMIT, META_SHA256, ObjectInfo
from wheelgate.core.planning import plan_set

RUN = "16454515470"
SIZE = 632000000


def staged_object(
    name: str = TORCH, *, sha: str | None = SHA_A, size: int = SIZE, commit: str = COMMIT
) -> ObjectInfo:
    return ObjectInfo(
        key=f"runs/{RUN}/{INDEX}/{name}",
        size=size,
        etag='"e"',
        s3_sha256=sha,
        metadata={META_COMMIT: commit},
    )


def plan(staged: dict[str, ObjectInfo], released: dict[str, ObjectInfo | None] | None = None):  # type: ignore[no-untyped-def]
    artifact_set = ManifestV2.model_validate(manifest_dict()).sets[0]
    return plan_set(
        artifact_set,
        run_id=RUN,
        commit=COMMIT,
        staged=staged,
        released=released if released is not None else {TORCH: None},
    )


def rejected(
    staged: dict[str, ObjectInfo], released: dict[str, ObjectInfo | None] | None = None
) -> Reason:
    with pytest.raises(PromotionRejected) as caught:
        plan(staged, released)
    assert caught.value.index == INDEX
    return caught.value.reason


def test_a_verified_file_is_planned_for_copy() -> None:
    result = plan({TORCH: staged_object(), TORCH + ".metadata": staged_object(sha=None)})
    [step] = result.steps
    assert step.copy
    assert step.source_key == f"runs/{RUN}/{INDEX}/{TORCH}"
    assert step.target_key == f"{INDEX}/{TORCH}"


def test_a_file_released_with_the_same_bytes_is_skipped() -> None:
    released = ObjectInfo(key=f"{INDEX}/{TORCH}", size=SIZE, etag='"x"', s3_sha256=SHA_A)
    [step] = plan({TORCH: staged_object()}, {TORCH: released}).steps
    assert not step.copy


def test_multipart_staged_file_is_verified_by_its_recorded_hash() -> None:
    info = ObjectInfo(
        key="k", size=SIZE, etag='"e"', metadata={META_COMMIT: COMMIT, META_SHA256: SHA_A}
    )
    assert plan({TORCH: info}).steps[0].copy


@pytest.mark.parametrize(
    ("staged", "released", "reason"),
    [
        ({}, None, Reason.FILE_MISSING),
        (
            {TORCH: staged_object(), "extra-1.0-py3-none-any.whl": staged_object()},
            None,
            Reason.FILE_NOT_LISTED,
        ),
        (
            {TORCH: staged_object(), "orphan.metadata": staged_object()},
            None,
            Reason.FILE_NOT_LISTED,
        ),
        ({TORCH: staged_object(size=SIZE - 1)}, None, Reason.SIZE_MISMATCH),
        ({TORCH: staged_object(sha=SHA_B)}, None, Reason.CHECKSUM_MISMATCH),
        ({TORCH: staged_object(sha=None)}, None, Reason.CHECKSUM_UNAVAILABLE),
        ({TORCH: staged_object(commit="d" * 40)}, None, Reason.COMMIT_MISMATCH),
        (
            {TORCH: staged_object()},
            {TORCH: ObjectInfo(key="k", size=SIZE, etag='"x"', s3_sha256=SHA_B)},
            Reason.NIGHTLY_CONFLICT,
        ),
    ],
)
def test_incomplete_or_mismatched_sets_are_rejected(
    staged: dict[str, ObjectInfo], released: dict[str, ObjectInfo | None] | None, reason: Reason
) -> None:
    assert rejected(staged, released) is reason


def test_recorded_hash_that_disagrees_with_s3_is_a_mismatch() -> None:
    info = ObjectInfo(
        key="k",
        size=SIZE,
        etag='"e"',
        s3_sha256=SHA_A,
        metadata={META_COMMIT: COMMIT, META_SHA256: SHA_B},
    )
    assert rejected({TORCH: info}) is Reason.CHECKSUM_MISMATCH
