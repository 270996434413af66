from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.unit.samples import INDEX, SHA_A, manifest_dict
from wheelgate.core.acceptance import AcceptancePolicy, check_set, decide
from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.manifest import ManifestV2


def manifest(*tests_per_set: list[dict[str, Any]]) -> ManifestV2:
    doc = manifest_dict()
    template = doc["sets"][0]
    doc["sets"] = []
    for i, tests in enumerate(tests_per_set):
        s = copy.deepcopy(template)
        s["index"] = INDEX if i == 0 else f"v2/gfx{i}"
        s["tests"] = tests
        doc["sets"].append(s)
    return ManifestV2.model_validate(doc)


#: Each passed test installed the set's one file (SHA_A): the evidence the rule needs.
INSTALLED = [{"sha256": SHA_A}]
PASS = {"name": "t", "result": "passed", "installed": INSTALLED}


def reason(tests: list[dict[str, Any]], policy: AcceptancePolicy | None = None) -> Reason:
    with pytest.raises(PromotionRejected) as caught:
        check_set(manifest(tests).sets[0], policy or AcceptancePolicy())
    return caught.value.reason


def test_a_set_whose_tests_all_passed_is_accepted() -> None:
    check_set(
        manifest([PASS, {"name": "u", "result": "passed", "installed": INSTALLED}]).sets[0],
        AcceptancePolicy(),
    )


@pytest.mark.parametrize(
    ("tests", "expected"),
    [
        ([], Reason.TESTS_MISSING),
        ([{"name": "t", "result": "failed"}], Reason.TESTS_FAILED),
        ([{"name": "t", "result": "skipped"}], Reason.TESTS_FAILED),
        ([PASS, {"name": "u", "result": "failed"}], Reason.TESTS_FAILED),
    ],
)
def test_missing_failed_or_skipped_tests_reject_the_set(
    tests: list[dict[str, Any]], expected: Reason
) -> None:
    assert reason(tests) is expected


def test_required_tests_must_be_present() -> None:
    policy = AcceptancePolicy(required_tests={INDEX: ("t", "gpu-smoke")})
    assert reason([PASS], policy) is Reason.TESTS_MISSING
    check_set(manifest([PASS, {"name": "gpu-smoke", "result": "passed"}]).sets[0], policy)


def test_index_outside_the_allowed_list_is_rejected() -> None:
    policy = AcceptancePolicy(allowed_indexes=frozenset({"v2/other"}))
    assert reason([PASS], policy) is Reason.INDEX_NOT_ALLOWED


def test_one_failed_set_blocks_the_whole_manifest_by_default() -> None:
    decision = decide(manifest([{"name": "t", "result": "failed"}], [PASS]), AcceptancePolicy())
    assert decision.accepted == ()
    reasons = {s.index: e.reason for s, e in decision.rejected}
    assert reasons == {INDEX: Reason.TESTS_FAILED, "v2/gfx1": Reason.BLOCKED_BY_OTHER_SET}


def test_without_blocking_passing_sets_go_ahead() -> None:
    policy = AcceptancePolicy(block_all_on_failure=False)
    decision = decide(manifest([{"name": "t", "result": "failed"}], [PASS]), policy)
    assert [s.index for s in decision.accepted] == ["v2/gfx1"]
    assert [s.index for s, _ in decision.rejected] == [INDEX]


def test_dependency_mirror_runs_need_the_review_instead_of_index_tests() -> None:
    policy = AcceptancePolicy(required_tests={INDEX: ("gpu-smoke",)})
    reviewed = manifest([{"name": "deps-review", "result": "passed", "installed": INSTALLED}]).sets[
        0
    ]
    check_set(reviewed, policy, run_id="deps-0123456789ab")
    with pytest.raises(PromotionRejected) as caught:
        check_set(reviewed, policy, run_id="17")
    assert caught.value.reason is Reason.TESTS_MISSING
    unreviewed = manifest([PASS]).sets[0]
    with pytest.raises(PromotionRejected) as caught:
        check_set(unreviewed, policy, run_id="deps-0123456789ab")
    assert caught.value.reason is Reason.TESTS_MISSING
