"""OIDC claims matrix: which GitHub jobs can assume which WheelGate role, evaluated offline.

Each row is one kind of job: a workflow file (the release workflow, the reporter's reusable
workflow, the dev and deps workflows), the event that started the run, the ref GitHub gives that
event, and the job's ``job_workflow_ref``. From them the token's ``sub`` is built as GitHub builds
it under the repository's customized subject template (``OIDC_SUBJECT_CLAIM_KEYS``: ``repo``,
``context``, ``job_workflow_ref``, ``event_name``; ``context`` is ``ref:<ref>``, or
``pull_request`` for pull request events; a ``:`` inside a value is written ``%3A``) and its
``aud`` as ``aws-actions/configure-aws-credentials`` requests it (``sts.amazonaws.com``). The
synthesized trust policies are then evaluated the way STS does for
``sts:AssumeRoleWithWebIdentity``: an Allow statement for the action and the OIDC provider whose
every condition holds (``StringEquals``, ``StringLike``: any of the listed values; IAM's ``*``
and ``?`` wildcards, ``*`` crossing ``:``); an operator this evaluator does not know fails the
evaluation rather than being skipped.

Run ``python -m tests.infra.oidc_matrix`` to print the table, or with ``--write docs/security.md``
to refresh it between the markers in that file.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stacks.oidc_subjects import OIDC_SUBJECT_CLAIM_KEYS
from tests.infra.resolve import OIDC_PROVIDER_ARN, Resolver

MARK_START = "<!-- oidc-matrix:start -->"
MARK_END = "<!-- oidc-matrix:end -->"
ISSUER = "token.actions.githubusercontent.com"
STS_AUDIENCE = "sts.amazonaws.com"
ASSUME = "sts:AssumeRoleWithWebIdentity"
GITHUB_ROLES = ("build", "reporter", "dev", "deps")

REPO = "ROCm/TheRock"
Workflows = Mapping[str, str]
#: Matrix label -> workflow file (as cdk.json names them).
WORKFLOWS: Workflows = {
    "release": ".github/workflows/release-nightly.yml",
    "reporter": ".github/workflows/report.yml",
    "dev": ".github/workflows/dev.yml",
    "deps": ".github/workflows/deps.yml",
}
MAIN = "refs/heads/main"
FEATURE = "refs/heads/feature"
TAG = "refs/tags/v7.1.0"
#: (label, event_name, ref GitHub gives the run, context of the subject).
EVENTS = (
    ("push", "push", MAIN, f"ref:{MAIN}"),
    ("push (branch)", "push", FEATURE, f"ref:{FEATURE}"),
    ("schedule", "schedule", MAIN, f"ref:{MAIN}"),
    ("pull_request", "pull_request", "refs/pull/7/merge", "pull_request"),
    # Runs the base branch's workflow, with the base ref, for a fork's pull request. Its
    # context is modelled both ways (pull_request, and the base ref): either is refused the
    # release roles, whose patterns name the events of release_events.
    ("pull_request_target", "pull_request_target", MAIN, "pull_request"),
    ("pull_request_target (ref)", "pull_request_target", MAIN, f"ref:{MAIN}"),
    ("workflow_dispatch", "workflow_dispatch", MAIN, f"ref:{MAIN}"),
    ("tag push", "push", TAG, f"ref:{TAG}"),
)


@dataclass(frozen=True)
class Job:
    """One matrix row: a job's claims (``event`` is the row's label for ``event_name``)."""

    workflow: str
    event: str
    event_name: str
    ref: str
    context: str
    job_workflow_ref: str
    aud: str = STS_AUDIENCE

    @property
    def sub(self) -> str:
        """The ``sub`` claim under the customized template, as GitHub writes it: ``repo`` and
        ``context`` read as in the default subject, the others as ``key:value`` with any ``:``
        of the value written ``%3A``."""
        parts = {
            "repo": f"repo:{REPO}",
            "context": self.context,
            "job_workflow_ref": f"job_workflow_ref:{_escape(self.job_workflow_ref)}",
            "event_name": f"event_name:{_escape(self.event_name)}",
        }
        return ":".join(parts[key] for key in OIDC_SUBJECT_CLAIM_KEYS)


def _escape(value: str) -> str:
    return value.replace(":", "%3A")


def jobs(workflows: Workflows = WORKFLOWS) -> list[Job]:
    """Every row: each workflow file (of ``workflows``, label -> file) x event with its jobs'
    own ``job_workflow_ref`` (a reusable file is named at the caller's ref), then a branch run
    calling the reporter's workflow pinned to main, and a token with GitHub's default
    audience."""
    rows = [
        Job(workflow, label, event, ref, context, f"{REPO}/{path}@{ref}")
        for workflow, path in workflows.items()
        for label, event, ref, context in EVENTS
    ]
    reporter_on_main = f"{REPO}/{workflows['reporter']}@{MAIN}"
    rows.append(
        Job("reporter", "push (branch)", "push", FEATURE, f"ref:{FEATURE}", reporter_on_main)
    )
    rows.append(
        Job(
            "release",
            "schedule",
            "schedule",
            MAIN,
            f"ref:{MAIN}",
            f"{REPO}/{workflows['release']}@{MAIN}",
            aud=f"https://github.com/{REPO.split('/')[0]}",
        )
    )
    return rows


def string_like(pattern: str, value: str) -> bool:
    """IAM ``StringLike``: ``*`` matches any run of characters (``:`` included), ``?`` one."""
    translated = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(translated, value, flags=re.DOTALL) is not None


_OPERATORS = {
    "StringEquals": lambda pattern, value: pattern == value,
    "StringLike": string_like,
}


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _conditions_hold(conditions: Mapping[str, Any], claims: Mapping[str, str]) -> bool:
    for operator, keys in conditions.items():
        if operator not in _OPERATORS:
            raise ValueError(f"trust condition operator {operator} is not modelled")
        for key, patterns in keys.items():
            # A missing claim never satisfies a string condition.
            value = claims.get(key)
            if value is None or not any(_OPERATORS[operator](p, value) for p in _as_list(patterns)):
                return False
    return True


def trusts(trust: Mapping[str, Any], provider: str, job: Job) -> bool:
    """Whether ``trust`` lets ``job``'s token, issued by ``provider``, assume the role: an
    Allow whose conditions all hold, and no Deny that applies."""
    claims = {f"{ISSUER}:sub": job.sub, f"{ISSUER}:aud": job.aud}
    applying = [
        statement["Effect"]
        for statement in trust["Statement"]
        if ASSUME in _as_list(statement["Action"])
        and statement.get("Principal", {}).get("Federated") == provider
        and _conditions_hold(statement.get("Condition", {}), claims)
    ]
    return "Allow" in applying and "Deny" not in applying


def roles_trusting(template: dict[str, Any], job: Job) -> set[str]:
    """The WheelGate roles whose trust policies accept ``job``'s token from the account's
    GitHub OIDC provider (:data:`OIDC_PROVIDER_ARN`: the one the stack creates, or the one it
    names in ``oidc_provider_arn``)."""
    resolver = Resolver(template)
    return {
        role for role in GITHUB_ROLES if trusts(resolver.trust_policy(role), OIDC_PROVIDER_ARN, job)
    }


@dataclass(frozen=True)
class Row:
    job: Job
    roles: frozenset[str]


def compute(template: dict[str, Any], workflows: Workflows = WORKFLOWS) -> list[Row]:
    """Evaluate every row of :func:`jobs` of ``workflows`` against ``template``'s trust
    policies."""
    return [Row(job, frozenset(roles_trusting(template, job))) for job in jobs(workflows)]


def render(rows: Sequence[Row]) -> str:
    """The matrix as a Markdown table."""
    lines = [
        "| workflow | event | ref | job_workflow_ref | aud | roles |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        job = row.job
        workflow_ref = job.job_workflow_ref.removeprefix(f"{REPO}/.github/workflows/")
        roles = ", ".join(f"**{r}**" for r in GITHUB_ROLES if r in row.roles) or "none"
        lines.append(
            f"| {job.workflow} | {job.event} | `{job.ref}` | `{workflow_ref}` | `{job.aud}` | "
            f"{roles} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    from tests.infra.iam_matrix import matrix_context, replace_table
    from tests.infra.synth import synthesize

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="refresh the table in this Markdown file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as outdir:
        table = render(compute(synthesize(Path(outdir), matrix_context()).template))
    if args.write:
        args.write.write_text(replace_table(args.write.read_text(), table, MARK_START, MARK_END))
    else:
        sys.stdout.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
