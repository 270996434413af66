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
    render,
)
from tests.infra.summary import SUMMARY_KEY
from tests.infra.synth import REPO_ROOT

SECURITY_DOC = REPO_ROOT / "docs" / "security.md"
PUT, DELETE, GET, RETENTION, BYPASS = ACTIONS

#: (principal, target) -> actions allowed; every other cell must be denied.
EXPECTED_ALLOWED: dict[tuple[str, str], set[str]] = {
    ("build", "staging runs/"): {PUT, GET},
    ("build", "staging manifests/"): {GET},
    ("build", "nightly index"): {GET},
    ("reporter", "staging runs/"): {GET},
    ("reporter", "staging manifests/"): {PUT},
    ("promoter", "staging runs/"): {GET},
    ("promoter", "staging manifests/"): {GET},
    ("promoter", "nightly files"): {PUT, GET},
    ("promoter", "nightly index"): {PUT, GET},
    # An account administrator keeps read access but cannot write, delete or unlock anything.
    ("account-admin", "staging runs/"): {GET},
    ("account-admin", "staging manifests/"): {GET},
    ("account-admin", "nightly files"): {GET},
    ("account-admin", "nightly index"): {GET},
}


@pytest.fixture(scope="module")
def cells(
    template_json: dict[str, Any], artifacts_dir: Path, request: pytest.FixtureRequest
) -> list[Cell]:
    cells = compute(template_json)
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


def test_nobody_but_the_promoter_writes_nightly(cells: list[Cell]) -> None:
    writers = {
        c.principal
        for c in cells
        if c.allowed and c.target.startswith("nightly") and c.action != GET
    }
    assert writers == {"promoter"}
    assert not any(c.allowed for c in cells if c.action in (DELETE, RETENTION, BYPASS))


def test_security_doc_shows_the_current_matrix(cells: list[Cell]) -> None:
    document = SECURITY_DOC.read_text()
    start, end = document.index(MARK_START) + len(MARK_START), document.index(MARK_END)
    assert document[start:end].strip() == render(cells).strip(), (
        "docs/security.md is stale: run `.venv/bin/python -m tests.infra.iam_matrix "
        "--write docs/security.md`"
    )


def test_matrix_notices_a_missing_bucket_policy_deny(template_json: dict[str, Any]) -> None:
    """The evaluator really reads the bucket policy: without its Deny, an admin could write."""
    mutated = copy.deepcopy(template_json)
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
    assert writers == {"promoter", "account-admin"}
