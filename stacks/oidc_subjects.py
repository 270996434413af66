"""The GitHub OIDC subjects WheelGate's roles trust: the customized subject format and the
``sub`` patterns of the jobs allowed to build, report and sync dependencies."""

from __future__ import annotations

#: The repository's OIDC subject template (``include_claim_keys``, set through GitHub's REST API
#: ``PUT /repos/{owner}/{repo}/actions/oidc/customization/sub``; see docs/deploy.md). GitHub
#: joins the claims in this order as ``key:value`` (``repo`` and ``context`` as in the default
#: subject) and writes any ``:`` inside a value as ``%3A``.
OIDC_SUBJECT_CLAIM_KEYS = ("repo", "context", "job_workflow_ref", "event_name")
#: Events whose runs of a deps workflow may assume the deps role: pushes to the default branch.
DEPS_EVENTS = ("push",)


def branch_ref(branch: str) -> str:
    """The ref of a branch name."""
    return f"refs/heads/{branch}"


def build_subject_patterns(
    repo: str, refs: tuple[str, ...], workflows: tuple[str, ...], events: tuple[str, ...]
) -> tuple[str, ...]:
    """``sub`` patterns (IAM ``StringLike``) for each ref x workflow x event of ``repo``.

    A workflow that is not reusable has ``job_workflow_ref`` = ``<repo>/<file>@<ref>``. Git refs,
    file names under .github/workflows and event names cannot contain ``:`` (GitHub would write
    it as ``%3A``), so a ``*`` in a ref cannot reach into the next claim's ``key:``.
    """
    return tuple(
        f"repo:{repo}:ref:{ref}:job_workflow_ref:{repo}/{workflow}@{ref}:event_name:{event}"
        for ref in refs
        for workflow in workflows
        for event in events
    )


def customized_subject(pattern: str) -> bool:
    """Whether ``pattern`` can match a subject built from :data:`OIDC_SUBJECT_CLAIM_KEYS`."""
    if not pattern.startswith("repo:"):
        return False
    return pattern.endswith("*") or (":job_workflow_ref:" in pattern and ":event_name:" in pattern)
