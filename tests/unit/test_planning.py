from __future__ import annotations

import json
import re

import pytest

from tests.unit.samples import COMMIT, INDEX, PROMOTER_ENV, SHA_A, SHA_B, TORCH, manifest_dict
from wheelgate.core.env_names import (
    ENV_ALLOW_NEW_LOCAL_LABELS,
)
from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.manifest import ArtifactSet, ManifestV2
from wheelgate.core.objects import META_COMMIT, META_SHA256, ObjectInfo
from wheelgate.core.planning import plan_set
from wheelgate.core.release_rules import check_release_conflicts
from wheelgate.core.setting_values import NewLocalLabels, SettingsError
from wheelgate.core.settings import PromoterSettings

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


def test_a_hash_in_user_metadata_is_never_trusted() -> None:
    # Given a staged object whose only SHA-256 is the one its writer put in user metadata
    # (x-amz-meta-*), which any writer of the object can set to anything...
    info = ObjectInfo(
        key="k", size=SIZE, etag='"e"', metadata={META_COMMIT: COMMIT, META_SHA256: SHA_A}
    )
    # Then the set is refused: only S3's own checksum of the bytes counts.
    assert rejected({TORCH: info}) is Reason.CHECKSUM_UNAVAILABLE


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


def test_s3s_hash_decides_whatever_user_metadata_says() -> None:
    def info(s3: str, recorded: str) -> ObjectInfo:
        return ObjectInfo(
            key="k",
            size=SIZE,
            etag='"e"',
            s3_sha256=s3,
            metadata={META_COMMIT: COMMIT, META_SHA256: recorded},
        )

    assert plan({TORCH: info(SHA_A, SHA_B)}).steps[0].copy
    assert rejected({TORCH: info(SHA_B, SHA_A)}) is Reason.CHECKSUM_MISMATCH


def release_set(*files: tuple[str, str]) -> ArtifactSet:
    doc = manifest_dict()
    doc["sets"][0]["files"] = [{"filename": n, "sha256": s, "size": 1} for n, s in files]
    return ManifestV2.model_validate(doc).sets[0]


@pytest.mark.parametrize(
    ("released", "new"),
    [
        # Another spelling of a released version.
        ("alias-1.0-py3-none-any.whl", "alias-1.0.0-py3-none-any.whl"),
        # A build-tag re-release of a released wheel.
        ("alias-1.0-py3-none-any.whl", "alias-1.0-1-py3-none-any.whl"),
        # Normalized project names are one project.
        ("Alias_Pkg-1.0-py3-none-any.whl", "alias.pkg-1.0-py3-none-any.whl"),
        # Compressed tag sets expand to the same tags.
        ("alias-1.0-py2.py3-none-any.whl", "alias-1.0-py3.py2-none-any.whl"),
        ("alias-1.0.tar.gz", "alias-1.0.0.tar.gz"),
    ],
)
def test_the_same_release_with_other_bytes_is_refused(released: str, new: str) -> None:
    with pytest.raises(PromotionRejected) as caught:
        check_release_conflicts(
            release_set((new, SHA_B)), [(released, SHA_A)], allow_build_tag_rereleases=False
        )
    assert caught.value.reason is Reason.RELEASE_CONFLICT
    assert new in caught.value.message
    assert released in caught.value.message


@pytest.mark.parametrize(
    ("released", "new", "allow"),
    [
        # Other tags, other version, other project: other releases.
        ("alias-1.0-cp311-cp311-linux_x86_64.whl", "alias-1.0-cp312-cp312-linux_x86_64.whl", False),
        ("alias-1.0-py3-none-any.whl", "alias-1.0.post1-py3-none-any.whl", False),
        ("alias-1.0-py3-none-any.whl", "alias2-1.0-py3-none-any.whl", False),
        # The sdist and a wheel of one version are different files of the release.
        ("alias-1.0.tar.gz", "alias-1.0-py3-none-any.whl", False),
        # A build-tag re-release, when the setting allows it.
        ("alias-1.0-py3-none-any.whl", "alias-1.0-1-py3-none-any.whl", True),
    ],
)
def test_other_releases_and_allowed_rereleases_pass(released: str, new: str, allow: bool) -> None:
    check_release_conflicts(
        release_set((new, SHA_B)), [(released, SHA_A)], allow_build_tag_rereleases=allow
    )


def test_the_same_bytes_under_another_spelling_pass_and_a_set_cannot_hold_two_spellings() -> None:
    check_release_conflicts(
        release_set(("alias-1.0.0-py3-none-any.whl", SHA_A)),
        [("alias-1.0-py3-none-any.whl", SHA_A)],
        allow_build_tag_rereleases=False,
    )
    with pytest.raises(PromotionRejected, match=re.escape("alias-1.0-py3-none-any.whl")):
        check_release_conflicts(
            release_set(
                ("alias-1.0-py3-none-any.whl", SHA_A), ("alias-1.0.0-py3-none-any.whl", SHA_B)
            ),
            [],
            allow_build_tag_rereleases=False,
        )


@pytest.mark.parametrize(
    ("released", "new", "allow"),
    [
        # Released without a label: never gains one, whatever the setting.
        (["lab-1.0-py3-none-any.whl"], "lab-1.0+evil-py3-none-any.whl", True),
        (["lab-1.0.tar.gz"], "lab-1.0+evil-cp312-cp312-linux_x86_64.whl", True),
        # Released with labels only: never gains an unlabelled file.
        (
            ["torch-2.7.0+rocm6.3-cp312-cp312-linux_x86_64.whl"],
            "torch-2.7.0-py3-none-any.whl",
            True,
        ),
        # A new label of a released version, without the setting.
        (
            ["torch-2.7.0+rocm6.3-cp312-cp312-linux_x86_64.whl"],
            "torch-2.7.0+rocm6.4-cp312-cp312-linux_x86_64.whl",
            False,
        ),
        # ...even one that sorts lower, and under another spelling of the version.
        (["torch-2.7.0+rocm6.3-py3-none-any.whl"], "torch-2.7+rocm6.2-py3-none-any.whl", False),
    ],
)
def test_a_public_versions_equals_pin_never_changes_bytes(
    released: list[str], new: str, allow: bool
) -> None:
    with pytest.raises(PromotionRejected) as caught:
        check_release_conflicts(
            release_set((new, SHA_B)),
            [(name, SHA_A) for name in released],
            allow_build_tag_rereleases=False,
            allow_new_local_labels=allow,
        )
    assert caught.value.reason is Reason.LOCAL_LABEL_CONFLICT
    assert new in caught.value.message
    assert "==" in caught.value.message


@pytest.mark.parametrize(
    ("released", "new", "allow"),
    [
        # A new label where the setting allows it (TheRock's +rocm6.3, then +rocm6.4).
        (
            ["torch-2.7.0+rocm6.3-cp312-cp312-linux_x86_64.whl"],
            "torch-2.7.0+rocm6.4-cp312-cp312-linux_x86_64.whl",
            True,
        ),
        # A released label for other tags, an unlabelled version for other tags.
        (
            ["torch-2.7.0+rocm6.3-cp312-cp312-linux_x86_64.whl"],
            "torch-2.7.0+rocm6.3-cp313-cp313-linux_x86_64.whl",
            False,
        ),
        (["lab-1.0.tar.gz"], "lab-1.0-py3-none-any.whl", False),
        # Another public version, labelled or not.
        (["lab-1.0-py3-none-any.whl"], "lab-1.0.post1+x-py3-none-any.whl", False),
        (["torch-2.7.0+rocm6.3-py3-none-any.whl"], "torch-2.7.1-py3-none-any.whl", False),
    ],
)
def test_labels_that_change_no_equals_pin_pass(released: list[str], new: str, allow: bool) -> None:
    check_release_conflicts(
        release_set((new, SHA_B)),
        [(name, SHA_A) for name in released],
        allow_build_tag_rereleases=False,
        allow_new_local_labels=allow,
    )


def test_a_first_release_may_carry_several_labels_or_none_but_not_both() -> None:
    rocm = [f"torch-2.7.0+rocm6.{n}-py3-none-any.whl" for n in (3, 4)]
    check_release_conflicts(
        release_set(*((name, SHA_A) for name in rocm)), [], allow_build_tag_rereleases=False
    )
    mixed = ["lab-1.0-cp312-none-any.whl", "lab-1.0+x-py3-none-any.whl"]
    for order in (mixed, mixed[::-1]):
        with pytest.raises(PromotionRejected) as caught:
            check_release_conflicts(
                release_set(*((name, SHA_A) for name in order)),
                [],
                allow_build_tag_rereleases=False,
                allow_new_local_labels=True,
            )
        assert caught.value.reason is Reason.LOCAL_LABEL_CONFLICT


@pytest.mark.parametrize(
    ("released", "new"),
    [
        # CPython 3.11 ranks cp311-none-any before py3-none-any: `==1.0` would switch there.
        (["lt-1.0-py3-none-any.whl"], "lt-1.0-cp311-none-any.whl"),
        # The same within a released label: `==2.0+rocm6.3` (and `==2.0`) would switch.
        (["lt-2.0+rocm6.3-py3-none-any.whl"], "lt-2.0+rocm6.3-cp311-none-any.whl"),
        # CPython 3.13 installed the cp312-abi3 wheel; it ranks cp313-cp313 first.
        (
            ["lt-1.0-cp312-abi3-manylinux_2_17_x86_64.whl"],
            "lt-1.0-cp313-cp313-manylinux_2_17_x86_64.whl",
        ),
        # Another spelling of the version is the same version to `==`.
        (["lt-1.0-py3-none-any.whl"], "lt-1.0.0-cp311-none-any.whl"),
    ],
)
def test_a_wheel_some_interpreter_would_install_instead_of_a_released_one_is_refused(
    released: list[str], new: str
) -> None:
    with pytest.raises(PromotionRejected) as caught:
        check_release_conflicts(
            release_set((new, SHA_B)),
            [(name, SHA_A) for name in released],
            allow_build_tag_rereleases=True,
            allow_new_local_labels=True,
        )
    assert caught.value.reason is Reason.TAG_SHADOWING
    assert caught.value.index == INDEX
    # It names the new file, the released file, the pin and an interpreter that would switch.
    message = caught.value.message
    assert new in message
    assert released[0] in message
    assert "==" in message
    assert re.search(r"(pip|uv) on cp3\d+-cp3\d+t?-\S+, for one, would install", message), message


@pytest.mark.parametrize(
    ("released", "new"),
    [
        # A new architecture or operating system: no interpreter had a wheel of the version.
        (
            ["lt-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"],
            "lt-1.0-cp311-cp311-manylinux_2_17_aarch64.whl",
        ),
        (["lt-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"], "lt-1.0-cp311-cp311-win_amd64.whl"),
        # A pure fallback after platform wheels ranks after them wherever they install.
        (
            [
                "lt-1.0-cp311-cp311-manylinux_2_17_x86_64.whl",
                "lt-1.0-cp311-cp311-macosx_11_0_arm64.whl",
                "lt-1.0.tar.gz",
            ],
            "lt-1.0-py3-none-any.whl",
        ),
        # A wheel after an sdist: installers take any wheel that fits before an sdist.
        (["lt-1.0.tar.gz"], "lt-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"),
        # Another version.
        (["lt-1.0-py3-none-any.whl"], "lt-1.0.post1-cp311-none-any.whl"),
    ],
)
def test_a_wheel_no_interpreter_would_switch_to_joins_a_released_version(
    released: list[str], new: str
) -> None:
    check_release_conflicts(
        release_set((new, SHA_B)),
        [(name, SHA_A) for name in released],
        allow_build_tag_rereleases=False,
    )


def test_files_arriving_together_are_the_first_release_of_their_version() -> None:
    together = [("lt-1.0-py3-none-any.whl", SHA_A), ("lt-1.0-cp311-none-any.whl", SHA_B)]
    check_release_conflicts(release_set(*together), [], allow_build_tag_rereleases=False)
    # A set listing a released wheel again does not make a new wheel beside it part of the
    # first release.
    with pytest.raises(PromotionRejected) as caught:
        check_release_conflicts(
            release_set(*together), [together[0]], allow_build_tag_rereleases=False
        )
    assert caught.value.reason is Reason.TAG_SHADOWING


def test_a_build_tag_may_decide_only_where_build_tag_rereleases_are_allowed() -> None:
    released = [("lt-1.0-py3-none-any.whl", SHA_A)]
    rebuilt = release_set(("lt-1.0-1-py2.py3-none-any.whl", SHA_B))
    with pytest.raises(PromotionRejected) as caught:
        check_release_conflicts(rebuilt, released, allow_build_tag_rereleases=False)
    assert caught.value.reason is Reason.TAG_SHADOWING
    assert "allow_build_tag_rereleases" in caught.value.message
    check_release_conflicts(rebuilt, released, allow_build_tag_rereleases=True)
    # The setting lets a build tag decide, never a better tag.
    with pytest.raises(PromotionRejected) as caught:
        check_release_conflicts(
            release_set(("lt-1.0-1-cp311-none-any.whl", SHA_B)),
            released,
            allow_build_tag_rereleases=True,
        )
    assert caught.value.reason is Reason.TAG_SHADOWING


@pytest.mark.parametrize(
    ("raw", "everywhere", "allowed"),
    [
        ("", False, set()),
        ("false", False, set()),
        ("true", True, set()),
        ('["v2/gfx94X-dcgpu"]', False, {"v2/gfx94X-dcgpu"}),
    ],
)
def test_the_new_local_labels_setting_from_the_environment(
    raw: str, everywhere: bool, allowed: set[str]
) -> None:
    env = {**PROMOTER_ENV, ENV_ALLOW_NEW_LOCAL_LABELS: raw}
    setting = PromoterSettings.from_env(env).allow_new_local_labels
    assert setting == NewLocalLabels(everywhere=everywhere, indexes=frozenset(allowed))
    assert setting.allowed_in("v2/gfx94X-dcgpu") is (everywhere or bool(allowed))
    assert setting.allowed_in("v2/other") is everywhere
    assert NewLocalLabels.from_value(json.loads(setting.to_json()), name="x") == setting


@pytest.mark.parametrize("raw", ['"yes"', '["../up"]', "[1]"])
def test_a_bad_new_local_labels_setting_names_the_variable(raw: str) -> None:
    env = {**PROMOTER_ENV, ENV_ALLOW_NEW_LOCAL_LABELS: raw}
    with pytest.raises(SettingsError, match=ENV_ALLOW_NEW_LOCAL_LABELS):
        PromoterSettings.from_env(env)
