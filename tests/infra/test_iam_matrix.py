"""IAM proof matrix over the synthesized policies, evaluated offline by principalmapper."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.infra.iam_matrix import (
    ACTIONS,
    MARK_END,
    MARK_START,
    PRINCIPALS,
    TARGETS,
    Cell,
    compute,
    matrix_context,
    render,
)
from tests.infra.summary import SUMMARY_KEY
from tests.infra.synth import REPO_ROOT, synthesize

SECURITY_DOC = REPO_ROOT / "docs" / "security.md"
PUT, DELETE, GET, RETENTION, BYPASS = ACTIONS
EVERYTHING = set(ACTIONS)
STAGING_TARGETS = [t for t in TARGETS if t.startswith("staging")]

#: (principal, target) -> actions allowed; every other cell must be denied.
EXPECTED_ALLOWED: dict[tuple[str, str], set[str]] = {
    **{("build", t): {GET} for t in STAGING_TARGETS},
    ("build", "staging runs/"): {PUT, GET},
    ("build", "staging runs/deps-*"): {PUT, GET},
    ("build", "nightly index"): {GET},
    ("reporter", "staging runs/"): {GET},
    ("reporter", "staging manifests/"): {PUT},
    ("reporter", "staging records/"): {GET},
    ("reporter", "staging runs/deps-*"): {GET},
    ("reporter", "staging manifests/deps-*"): {PUT},
    # The reporter's identity policy allows manifests/*; the bucket policy refuses overrides.
    ("reporter", "staging manifests/override-*"): set(),
    ("deps", "staging runs/deps-*"): {PUT, GET},
    ("deps", "staging manifests/deps-*"): {PUT},
    ("deps", "cache third-party/"): {PUT, GET},
    **{("promoter", t): {GET} for t in STAGING_TARGETS},
    ("promoter", "staging records/"): {PUT, GET},
    ("promoter", "nightly files"): {PUT, GET},
    ("promoter", "nightly index"): {PUT, GET},
    # Break-glass (modelled with Action: *): in staging it writes override requests only (and
    # may still bypass retention, which staging does not have); nightly and the cache are its.
    **{("break-glass", t): {GET, BYPASS} for t in STAGING_TARGETS},
    ("break-glass", "staging manifests/override-*"): EVERYTHING,
    ("break-glass", "nightly files"): EVERYTHING,
    ("break-glass", "nightly index"): EVERYTHING,
    ("break-glass", "cache third-party/"): EVERYTHING,
    ("break-glass", "cache other prefix"): EVERYTHING,
    # An account administrator keeps read access but cannot write, delete or unlock anything.
    **{("account-admin", t): {GET} for t in TARGETS},
}


@pytest.fixture(scope="module")
def matrix_template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The template synthesized with a break-glass role configured, as the matrix CLI does."""
    return synthesize(tmp_path_factory.mktemp("matrix.out"), matrix_context()).template


@pytest.fixture(scope="module")
def cells(
    matrix_template: dict[str, Any], artifacts_dir: Path, request: pytest.FixtureRequest
) -> list[Cell]:
    cells = compute(matrix_template)
    table = render(cells)
    (artifacts_dir / "iam-matrix.md").write_text(table)
    summary = request.config.stash.setdefault(SUMMARY_KEY, {})
    summary["IAM proof matrix (test-artifacts/iam-matrix.md)"] = table
    return cells


def test_matrix_is_complete(cells: list[Cell]) -> None:
    assert len(cells) == len(PRINCIPALS) * len(TARGETS) * len(ACTIONS)


def test_every_cell_matches_the_expected_decision(cells: list[Cell]) -> None:
    wrong = [
        f"{c.principal} {c.action} {c.target}: got {'allow' if c.allowed else 'deny'}"
        for c in cells
        if c.allowed != (c.action in EXPECTED_ALLOWED.get((c.principal, c.target), set()))
    ]
    assert wrong == []


def test_dev_cannot_write_staging(cells: list[Cell]) -> None:
    assert not any(
        c.allowed for c in cells if c.principal == "dev" and c.target.startswith("staging")
    )


def test_nobody_but_the_promoter_and_break_glass_writes_nightly(cells: list[Cell]) -> None:
    writers = {
        c.principal
        for c in cells
        if c.allowed and c.target.startswith("nightly") and c.action != GET
    }
    assert writers == {"promoter", "break-glass"}
    assert {
        c.principal for c in cells if c.allowed and c.action in (DELETE, RETENTION, BYPASS)
    } == {"break-glass"}


def test_only_break_glass_writes_override_requests(cells: list[Cell]) -> None:
    writers = {
        c.principal
        for c in cells
        if c.allowed and c.target == "staging manifests/override-*" and c.action == PUT
    }
    assert writers == {"break-glass"}
    # And in staging it writes nothing else.
    assert not any(
        c.allowed
        for c in cells
        if c.principal == "break-glass"
        and c.target.startswith("staging")
        and c.target != "staging manifests/override-*"
        and c.action in (PUT, DELETE)
    )


def test_nobody_but_deps_and_break_glass_writes_the_cache(cells: list[Cell]) -> None:
    writers = {
        (c.principal, c.target)
        for c in cells
        if c.allowed and c.target.startswith("cache") and c.action == PUT
    }
    assert writers == {
        ("deps", "cache third-party/"),
        ("break-glass", "cache third-party/"),
        ("break-glass", "cache other prefix"),
    }


def test_security_doc_shows_the_current_matrix(cells: list[Cell]) -> None:
    document = SECURITY_DOC.read_text()
    start, end = document.index(MARK_START) + len(MARK_START), document.index(MARK_END)
    assert document[start:end].strip() == render(cells).strip(), (
        "docs/security.md is stale: run `.venv/bin/python -m tests.infra.iam_matrix "
        "--write docs/security.md`"
    )


def test_matrix_notices_a_missing_bucket_policy_deny(matrix_template: dict[str, Any]) -> None:
    """The evaluator really reads the bucket policy: without its Deny, an admin could write."""
    mutated = copy.deepcopy(matrix_template)
    for policy in mutated["Resources"].values():
        if policy["Type"] == "AWS::S3::BucketPolicy":
            statements = policy["Properties"]["PolicyDocument"]["Statement"]
            statements[:] = [
                s for s in statements if s.get("Sid") != "DenyObjectWritesExceptPromoter"
            ]
    writers = {
        c.principal
        for c in compute(mutated)
        if c.allowed and c.action == PUT and c.target.startswith("nightly")
    }
    assert writers == {"promoter", "break-glass", "account-admin"}


def test_matrix_notices_a_missing_override_deny(matrix_template: dict[str, Any]) -> None:
    """Without the override Deny, the reporter's manifests/* grant reaches override requests."""
    mutated = copy.deepcopy(matrix_template)
    for policy in mutated["Resources"].values():
        if policy["Type"] == "AWS::S3::BucketPolicy":
            statements = policy["Properties"]["PolicyDocument"]["Statement"]
            statements[:] = [
                s for s in statements if s.get("Sid") != "DenyOverrideWritesExceptBreakGlass"
            ]
    writers = {
        c.principal
        for c in compute(mutated)
        if c.allowed and c.action == PUT and c.target == "staging manifests/override-*"
    }
    assert "reporter" in writers
