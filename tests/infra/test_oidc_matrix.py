"""OIDC claims matrix over the synthesized trust policies: which job can assume which role.

Computed for each way WheelGate is deployed (``deployed``), with the workflow files that
deployment's settings name: every role decision must be the same in each. Across the two
stages of one app, see tests/infra/test_environments.py.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.infra.iam_matrix import between
from tests.infra.oidc_matrix import (
    MARK_END,
    MARK_START,
    REPO,
    Job,
    Row,
    compute,
    jobs,
    render,
    roles_trusting,
    string_like,
)
from tests.infra.resolve import Resolver
from tests.infra.summary import publish
from tests.infra.synth import REPO_ROOT, Deployed

SECURITY_DOC = REPO_ROOT / "docs" / "security.md"


@pytest.fixture(scope="module")
def rows(deployed: Deployed, artifacts_dir: Path, request: pytest.FixtureRequest) -> list[Row]:
    rows = compute(deployed.template, deployed.workflows)
    if deployed.name == "this app":
        title = "OIDC claims matrix"
        publish(request.config, artifacts_dir, "oidc-matrix.md", title, render(rows))
    return rows


def _roles(rows: list[Row], workflow: str, event: str, ref_suffix: str = "") -> set[str]:
    (row,) = [
        r
        for r in rows
        if r.job.workflow == workflow
        and r.job.event == event
        and r.job.aud == "sts.amazonaws.com"
        and r.job.job_workflow_ref.endswith(ref_suffix or r.job.ref)
    ]
    return set(row.roles)


def test_the_subject_is_built_as_github_builds_it() -> None:
    job = Job(
        "release",
        "schedule",
        "schedule",
        "refs/heads/main",
        "ref:refs/heads/main",
        f"{REPO}/.github/workflows/release-nightly.yml@refs/heads/main",
    )
    assert job.sub == (
        "repo:ROCm/TheRock:ref:refs/heads/main:job_workflow_ref:ROCm/TheRock/.github/workflows/"
        "release-nightly.yml@refs/heads/main:event_name:schedule"
    )
    # A ':' inside a claim value is escaped, so a '*' cannot reach into the next claim.
    assert "%3A" in Job("x", "e", "e", "r", "ref:r", "o/r/w.yml@refs/heads/a:b").sub


def test_no_build_dev_or_deps_job_can_assume_the_reporter_role(rows: list[Row]) -> None:
    assert [r for r in rows if r.job.workflow != "reporter" and "reporter" in r.roles] == []


def test_no_reporter_dev_or_deps_job_can_assume_the_build_role(rows: list[Row]) -> None:
    assert [r for r in rows if r.job.workflow != "release" and "build" in r.roles] == []


@pytest.mark.parametrize(
    ("workflow", "event", "roles"),
    [
        ("release", "schedule", {"build", "dev"}),
        ("release", "push", {"build", "dev"}),
        ("reporter", "schedule", {"reporter", "dev"}),
        ("deps", "push", {"deps", "dev"}),
        # Manual runs, pull requests (pull_request_target included), other branches: dev at most.
        ("release", "workflow_dispatch", {"dev"}),
        ("reporter", "workflow_dispatch", {"dev"}),
        ("release", "pull_request_target", {"dev"}),
        ("release", "pull_request_target (ref)", {"dev"}),
        ("reporter", "pull_request_target (ref)", {"dev"}),
        ("deps", "pull_request_target (ref)", {"dev"}),
        ("reporter", "pull_request", {"dev"}),
        ("release", "push (branch)", {"dev"}),
        ("deps", "schedule", {"dev"}),
        # Tags: nothing while release_tags is empty.
        ("release", "tag push", set()),
        ("reporter", "tag push", set()),
        ("deps", "tag push", set()),
    ],
)
def test_roles_by_job(rows: list[Row], workflow: str, event: str, roles: set[str]) -> None:
    assert _roles(rows, workflow, event) == roles


def test_a_branch_run_calling_the_reporter_on_main_is_refused(rows: list[Row]) -> None:
    assert _roles(rows, "reporter", "push (branch)", "@refs/heads/main") == {"dev"}


def test_a_token_for_another_audience_is_refused(rows: list[Row]) -> None:
    (row,) = [r for r in rows if r.job.aud != "sts.amazonaws.com"]
    assert row.roles == frozenset()


def test_every_row_is_evaluated(rows: list[Row], deployed: Deployed) -> None:
    assert [r.job for r in rows] == jobs(deployed.workflows)


def test_security_doc_shows_the_current_oidc_matrix(rows: list[Row], deployed: Deployed) -> None:
    # Each row under the documented job of the same label and event (a deployment with other
    # workflow files must give its own jobs the documented roles)
    pairs = list(zip(jobs(), rows, strict=True))
    assert all((j.workflow, j.event) == (r.job.workflow, r.job.event) for j, r in pairs)
    documented = render([Row(job, row.roles) for job, row in pairs])
    assert between(SECURITY_DOC.read_text(), MARK_START, MARK_END) == documented.strip(), (
        "docs/security.md is stale: run `.venv/bin/python -m tests.infra.oidc_matrix "
        "--write docs/security.md`"
    )


def test_string_like_is_iam_string_like() -> None:
    assert string_like("a*c", "a:b:c")
    assert string_like("a?c", "abc")
    assert not string_like("a?c", "abbc")
    assert not string_like("a.c", "abc")


def test_matrix_notices_a_reporter_trusting_the_release_workflow(
    matrix_template: dict[str, Any],
) -> None:
    """The evaluator really reads the trust: give the reporter the build role's subjects (as
    before the reporter had its own workflow) and the build jobs can act as the reporter."""
    mutated = copy.deepcopy(matrix_template)
    resources = mutated["Resources"]
    resolver = Resolver(mutated)
    build = resources[resolver.logical_id("build")]["Properties"]["AssumeRolePolicyDocument"]
    resources[resolver.logical_id("reporter")]["Properties"]["AssumeRolePolicyDocument"] = (
        copy.deepcopy(build)
    )
    (job,) = [
        j
        for j in jobs()
        if j.workflow == "release" and j.event == "schedule" and j.aud == "sts.amazonaws.com"
    ]
    assert "reporter" in roles_trusting(mutated, job)


def test_an_unknown_condition_operator_fails_the_evaluation(
    matrix_template: dict[str, Any],
) -> None:
    mutated = copy.deepcopy(matrix_template)
    resolver = Resolver(mutated)
    trust = mutated["Resources"][resolver.logical_id("build")]["Properties"]
    conditions = trust["AssumeRolePolicyDocument"]["Statement"][0]["Condition"]
    conditions["ForAnyValue:StringLike"] = conditions.pop("StringLike")
    with pytest.raises(ValueError, match="not modelled"):
        roles_trusting(mutated, jobs()[0])
