"""IAM proof matrix: who may do what to which WheelGate key, evaluated offline.

Identity policies and bucket policies come from the synthesized template (intrinsics resolved
by :mod:`tests.infra.resolve`) and are evaluated by principalmapper's full local authorization
check (explicit deny, resource policy, identity policy, cross-account rules).

Run ``python -m tests.infra.iam_matrix`` to print the table, or with ``--write docs/security.md``
to refresh the table between the markers in that file.
"""

from __future__ import annotations

import argparse
import collections
import collections.abc
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.infra.resolve import ACCOUNT, PARTITION, Resolver
from wheelgate.layout import NIGHTLY, PAGES, STAGING

# principalmapper 1.1.5 still imports these names from `collections` (removed in 3.10).
for _name in ("Mapping", "MutableMapping", "Sequence", "Iterable", "Callable"):
    if not hasattr(collections, _name):
        setattr(collections, _name, getattr(collections.abc, _name))

from principalmapper.common import Node, Policy  # noqa: E402
from principalmapper.querying.local_policy_simulation import (  # noqa: E402
    ResourcePolicyEvalResult,
    resource_policy_authorization,
)
from principalmapper.querying.query_interface import local_check_authorization_full  # noqa: E402

MARK_START = "<!-- iam-matrix:start -->"
MARK_END = "<!-- iam-matrix:end -->"
OTHER_ACCOUNT = "444455556666"

ACTIONS = (
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:GetObject",
    "s3:PutObjectRetention",
    "s3:BypassGovernanceRetention",
)
PRINCIPALS = ("build", "reporter", "dev", "promoter", "account-admin", "other-account", "anonymous")

_RUN, _INDEX, _WHEEL = (
    "12345-1",
    "v2/gfx94X-dcgpu",
    "torch-2.7.0+rocm7.0-cp312-cp312-linux_x86_64.whl",
)
#: Target name -> (bucket friendly name, example key).
TARGETS: dict[str, tuple[str, str]] = {
    "staging runs/": ("wheelgate-staging", STAGING.artifact(_RUN, _INDEX, _WHEEL)),
    "staging manifests/": ("wheelgate-staging", STAGING.manifest(_RUN)),
    "nightly files": ("wheelgate-nightly", NIGHTLY.artifact(_INDEX, _WHEEL)),
    "nightly index": ("wheelgate-nightly", PAGES.project_page(_INDEX, "torch")),
}

_ADMIN_POLICY = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
}


@dataclass(frozen=True)
class Cell:
    principal: str
    target: str
    action: str
    allowed: bool


def _node(arn: str, documents: Sequence[dict[str, Any]]) -> Node:
    policies = [Policy(arn, f"policy{i}", doc) for i, doc in enumerate(documents)]
    # The trust policy does not take part in authorization; principalmapper only requires one.
    trust = {"Version": "2012-10-17", "Statement": []}
    return Node(
        arn,
        f"AROA{arn.rsplit('/', 1)[1].upper()}",
        policies,
        [],
        trust,
        [],
        0,
        False,
        False,
        None,
        False,
        {},
    )


def compute(template: dict[str, Any]) -> list[Cell]:
    """Evaluate every principal x target x action of the matrix against ``template``."""
    resolver = Resolver(template)
    nodes: dict[str, Node | None] = {
        name: _node(f"arn:{PARTITION}:iam::{ACCOUNT}:role/{name}", resolver.role_policies(name))
        for name in ("build", "reporter", "dev", "promoter")
    }
    nodes["account-admin"] = _node(f"arn:{PARTITION}:iam::{ACCOUNT}:role/admin", [_ADMIN_POLICY])
    nodes["other-account"] = _node(
        f"arn:{PARTITION}:iam::{OTHER_ACCOUNT}:role/other-admin", [_ADMIN_POLICY]
    )
    nodes["anonymous"] = None
    policies = {b: resolver.bucket_policy(b) for b in ("wheelgate-staging", "wheelgate-nightly")}

    cells = []
    for principal in PRINCIPALS:
        node = nodes[principal]
        for target, (bucket, key) in TARGETS.items():
            resource = f"arn:{PARTITION}:s3:::{bucket}/{key}"
            for action in ACTIONS:
                if node is None:
                    # No identity policy: only a bucket policy Allow for "*" could grant access.
                    result = resource_policy_authorization(
                        "anonymous",
                        ACCOUNT,
                        policies[bucket],
                        action,
                        resource,
                        {"aws:SecureTransport": "true"},
                    )
                    allowed = result == ResourcePolicyEvalResult.SERVICE_MATCH
                else:
                    allowed = local_check_authorization_full(
                        node, action, resource, {}, policies[bucket], ACCOUNT
                    )
                cells.append(Cell(principal, target, action, allowed))
    return cells


def render(cells: Sequence[Cell]) -> str:
    """The matrix as a Markdown table: one row per principal and target, one column per action."""
    short = [a.removeprefix("s3:") for a in ACTIONS]
    lines = [
        "| principal | target | " + " | ".join(short) + " |",
        "|---|---|" + "---|" * len(ACTIONS),
    ]
    by_key = {(c.principal, c.target, c.action): c.allowed for c in cells}
    for principal in PRINCIPALS:
        for target in TARGETS:
            marks = ["**allow**" if by_key[(principal, target, a)] else "deny" for a in ACTIONS]
            lines.append(f"| {principal} | {target} | " + " | ".join(marks) + " |")
    return "\n".join(lines) + "\n"


def replace_table(document: str, table: str) -> str:
    """``document`` with the text between the matrix markers replaced by ``table``."""
    start, end = document.index(MARK_START), document.index(MARK_END)
    return document[: start + len(MARK_START)] + "\n" + table + document[end:]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="refresh the table in this Markdown file")
    args = parser.parse_args(argv)

    from tests.infra.synth import synthesize

    with tempfile.TemporaryDirectory() as outdir:
        table = render(compute(synthesize(Path(outdir)).template))
    if args.write:
        args.write.write_text(replace_table(args.write.read_text(), table))
    else:
        sys.stdout.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
