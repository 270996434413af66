"""Who may write the run history (``history/`` in staging), evaluated offline by principalmapper
over the synthesized policies, as the IAM matrix is (tests/infra/iam_matrix.py).

A stage call's entry is created once (``If-None-Match: *``) by the build role alone: IAM cannot
tell one run's build job from another's, so no build job may replace any entry. The history's
head, page and month shards are the promoter's alone, in the directories of ``index_dirs``.
Where both the bucket policy and an identity policy say a rule, each holds it on its own.
Ceph RGW never sets ``s3:if-none-match``, so only the evaluator can show the create-only rule.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.infra.iam_matrix import REQUESTS, Cell, compute, without_statements
from tests.infra.resolve import Resolver

PUT, PUT_IF_NONE_MATCH, PUT_IF_MATCH, PART, DELETE, GET, RETENTION, BYPASS, TAGGING = (
    r.label for r in REQUESTS
)
WRITES = (PUT, PUT_IF_NONE_MATCH, PUT_IF_MATCH, PART)
ENTRIES = "staging history/_entries/"
#: What the promoter makes of the entries, in a directory of index_dirs.
FOLDED = ("staging history/ head", "staging history/ page", "staging history/ month")
#: A month shard of a directory outside index_dirs.
OTHER_DIR = "staging history/ other dir"
HISTORY = (ENTRIES, *FOLDED, OTHER_DIR)


@pytest.fixture(scope="module")
def cells(matrix_template: dict[str, Any]) -> list[Cell]:
    return compute(matrix_template, targets=HISTORY)


def _writers(cells: list[Cell], target: str, request: str) -> set[str]:
    return {c.principal for c in cells if c.allowed and c.target == target and c.request == request}


def _granting_all_of_staging(template: dict[str, Any], sid: str) -> dict[str, Any]:
    """A copy of ``template`` whose identity policy statement ``sid`` (by mistake) names every
    staging key."""
    mutated = copy.deepcopy(template)
    staging = {"Fn::GetAtt": [Resolver(mutated).logical_id("wheelgate-staging"), "Arn"]}
    found = 0
    for resource in mutated["Resources"].values():
        if resource["Type"] == "AWS::IAM::Policy":
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                if statement.get("Sid") == sid:
                    statement["Resource"] = {"Fn::Join": ["", [staging, "/*"]]}
                    found += 1
    assert found == 1, sid
    return mutated


def test_the_build_role_creates_an_entry_with_if_none_match_and_cannot_without_it(
    cells: list[Cell],
) -> None:
    assert _writers(cells, ENTRIES, PUT_IF_NONE_MATCH) == {"build"}
    # A multipart upload's parts carry no header; its completion is the creation that must
    assert _writers(cells, ENTRIES, PART) == {"build"}
    # Neither an unconditional write nor an update in place may replace an entry, anyone's
    assert _writers(cells, ENTRIES, PUT) == set()
    assert _writers(cells, ENTRIES, PUT_IF_MATCH) == set()


def test_the_build_role_cannot_write_the_head_the_page_or_a_shard(cells: list[Cell]) -> None:
    for target in (*FOLDED, OTHER_DIR):
        for request in WRITES:
            assert "build" not in _writers(cells, target, request), (target, request)


def test_the_promoter_alone_writes_the_history_of_its_directories(cells: list[Cell]) -> None:
    # Created, then updated in place (If-Match), as the pages are
    for target in FOLDED:
        for request in WRITES:
            assert _writers(cells, target, request) == {"promoter"}, (target, request)
    # Not in a directory outside index_dirs, and never a build job's entry
    for request in WRITES:
        assert _writers(cells, OTHER_DIR, request) == set(), request
        assert "promoter" not in _writers(cells, ENTRIES, request), request


def test_the_reporter_dev_and_deps_roles_write_no_history(cells: list[Cell]) -> None:
    assert [
        (c.principal, c.target, c.request)
        for c in cells
        if c.allowed and c.principal in ("reporter", "dev", "deps") and c.request != GET
    ] == []


def test_nobody_deletes_retags_or_locks_the_history(cells: list[Cell]) -> None:
    assert [
        (c.principal, c.target, c.request)
        for c in cells
        if c.allowed and c.request in (DELETE, TAGGING, RETENTION)
    ] == []


def test_anyone_the_account_trusts_reads_the_history_and_no_stranger_does(
    cells: list[Cell],
) -> None:
    readers = {c.principal for c in cells if c.allowed and c.request == GET}
    assert {"build", "promoter", "account-admin"} <= readers
    assert not readers & {"other-account", "anonymous", "dev", "reporter"}


@pytest.mark.parametrize(
    ("removed", "unconditional_writers"),
    [
        # Each layer alone keeps an entry create-only ...
        (("DenyHistoryEntryWritesWithoutIfNoneMatch",), set()),
        (("DenyHistoryEntryRewrites",), set()),
        # ... and without both, the build role's grant replaces any entry
        (("DenyHistoryEntryWritesWithoutIfNoneMatch", "DenyHistoryEntryRewrites"), {"build"}),
    ],
)
def test_each_layer_alone_keeps_an_entry_create_only(
    matrix_template: dict[str, Any], removed: tuple[str, ...], unconditional_writers: set[str]
) -> None:
    cells = compute(without_statements(matrix_template, *removed), targets=(ENTRIES,))
    assert _writers(cells, ENTRIES, PUT) == unconditional_writers
    assert _writers(cells, ENTRIES, PUT_IF_MATCH) == unconditional_writers


def test_the_bucket_policy_alone_keeps_the_build_role_off_the_promoters_history(
    matrix_template: dict[str, Any],
) -> None:
    # Given a build role whose entry grant (by mistake) names every staging key
    mutated = _granting_all_of_staging(matrix_template, "WriteHistoryEntries")
    # Then it still writes no head, page or shard ...
    cells = compute(mutated, targets=FOLDED)
    assert not any(c.allowed and c.principal == "build" and c.request in WRITES for c in cells)
    # ... and it is DenyBuildWritesOutsideRunsAndHistoryEntries which keeps it off
    unguarded = compute(
        without_statements(mutated, "DenyBuildWritesOutsideRunsAndHistoryEntries"), targets=FOLDED
    )
    for target in FOLDED:
        assert _writers(unguarded, target, PUT_IF_MATCH) == {"build", "promoter"}, target


def test_the_bucket_policy_alone_keeps_the_promoter_off_the_entries(
    matrix_template: dict[str, Any],
) -> None:
    # Given a promoter whose history grant (by mistake) names every staging key
    mutated = _granting_all_of_staging(matrix_template, "WriteRunHistory")
    # Then it still creates no entry: the entries are the stage calls' word alone ...
    assert _writers(compute(mutated, targets=(ENTRIES,)), ENTRIES, PUT_IF_NONE_MATCH) == {"build"}
    # ... and it is DenyHistoryEntryWritesExceptBuild which keeps it off
    unguarded = compute(
        without_statements(mutated, "DenyHistoryEntryWritesExceptBuild"), targets=(ENTRIES,)
    )
    assert _writers(unguarded, ENTRIES, PUT_IF_NONE_MATCH) == {"build", "promoter"}


def test_the_bucket_policy_alone_keeps_the_reporter_off_the_history(
    matrix_template: dict[str, Any],
) -> None:
    # Given a reporter whose manifest grant (by mistake) names every staging key
    mutated = _granting_all_of_staging(matrix_template, "WriteManifests")
    # Then it writes nothing of the history ...
    cells = compute(mutated, targets=HISTORY)
    assert not any(c.allowed and c.principal == "reporter" and c.request in WRITES for c in cells)
    # ... and it is DenyHistoryWritesExceptBuildAndPromoter which keeps it off the promoter's
    unguarded = compute(
        without_statements(mutated, "DenyHistoryWritesExceptBuildAndPromoter"), targets=FOLDED
    )
    assert "reporter" in _writers(unguarded, "staging history/ head", PUT_IF_MATCH)
