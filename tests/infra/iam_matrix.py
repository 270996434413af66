"""IAM proof matrix: who may do what to which WheelGate key, evaluated offline.

Identity policies and bucket policies come from the synthesized template (intrinsics resolved
by :mod:`tests.infra.resolve`) and are evaluated by principalmapper's full local authorization
check (explicit deny, resource policy, identity policy, cross-account rules).

The template is synthesized with a break-glass role configured (:func:`matrix_context`), so the
matrix shows what the bucket policies leave it; the role is created outside the stack and is
modelled with ``Action: *``, like ``account-admin``.

The matrix also shows an import source (``import_sources``: a bucket outside the stack with no
bucket policy, so identity policies decide), under its prefix and outside it.

Each column is one request: an action with the condition keys S3 sets for it
(:data:`REQUESTS`). Object creation is shown four ways, because the staging bucket policy
makes ``runs/*`` write-once: a ``PutObject`` without a condition, one with
``If-None-Match: *``, one with ``If-Match`` (an update in place), and a part upload
(``UploadPart``, authorized as ``s3:PutObject``), which S3 evaluates with
``s3:ObjectCreationOperation`` false. Ceph RGW, the real S3 server of the
integration tests, never sets ``s3:if-none-match``, so this evaluator is the only proof of that
rule.

A third table (:func:`compute_services`) shows who may start the fan-out state machine and
invoke the promoter function (identity policies alone: neither has a resource policy). A fourth
(:func:`compute_verdict_key`) shows who may sign with the verdict key and take it out of
service, its key policy evaluated as the resource policy.

Run ``python -m tests.infra.iam_matrix`` to print the tables, or with ``--write docs/security.md``
to refresh the tables between the markers in that file.
"""

from __future__ import annotations

import argparse
import collections
import collections.abc
import copy
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.infra.resolve import ACCOUNT, DEPLOY_ROLE_ARN, PARTITION, Resolver
from wheelgate.core.import_rules import import_id
from wheelgate.core.layout import HTML_PAGE, NIGHTLY, PAGES, STAGING, STATUS_PREFIX
from wheelgate.core.override import new_request_id

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

LOCK_MARK_START = "<!-- lock-matrix:start -->"
LOCK_MARK_END = "<!-- lock-matrix:end -->"
MARK_START = "<!-- iam-matrix:start -->"
MARK_END = "<!-- iam-matrix:end -->"
BUCKET_MARK_START = "<!-- bucket-settings-matrix:start -->"
BUCKET_MARK_END = "<!-- bucket-settings-matrix:end -->"
SERVICE_MARK_START = "<!-- service-matrix:start -->"
SERVICE_MARK_END = "<!-- service-matrix:end -->"
KEY_MARK_START = "<!-- verdict-key-matrix:start -->"
KEY_MARK_END = "<!-- verdict-key-matrix:end -->"
OTHER_ACCOUNT = "444455556666"

#: Condition keys as AWS's "Enforce conditional writes on Amazon S3 buckets" names them:
#: ``s3:if-none-match`` / ``s3:if-match`` carry the headers' values (``*``, an ETag) and are
#: absent without them; ``s3:ObjectCreationOperation`` is true for PutObject,
#: CompleteMultipartUpload and CopyObject, false for CreateMultipartUpload, UploadPart and
#: UploadPartCopy.
SOURCE_FUNCTION = "lambda:SourceFunctionArn"
OTHER_FUNCTION_ARN = f"arn:{PARTITION}:lambda:us-east-1:{ACCOUNT}:function:other"
IF_NONE_MATCH = "s3:if-none-match"
IF_MATCH = "s3:if-match"
CREATION = "s3:ObjectCreationOperation"
#: Object Lock condition keys, present only when the request sets a lock (S3 User Guide,
#: "Object Lock considerations", condition keys): its mode and its days from now.
LOCK_MODE = "s3:object-lock-mode"
LOCK_DAYS = "s3:object-lock-remaining-retention-days"


@dataclass(frozen=True)
class Request:
    """One matrix column: an IAM action and the request context S3 evaluates it with."""

    label: str
    action: str
    context: Mapping[str, str] = field(default_factory=dict)
    #: Further actions S3 authorizes for the same request (a PutObject with Object Lock
    #: headers also needs ``s3:PutObjectRetention``): every one must be allowed.
    also: tuple[str, ...] = ()


REQUESTS = (
    Request("PutObject", "s3:PutObject", {CREATION: "true"}),
    Request("PutObject If-None-Match", "s3:PutObject", {CREATION: "true", IF_NONE_MATCH: "*"}),
    # An update in place (the index pages' optimistic write): replaces what is there.
    Request("PutObject If-Match", "s3:PutObject", {CREATION: "true", IF_MATCH: '"0123abcd"'}),
    Request("UploadPart", "s3:PutObject", {CREATION: "false"}),
    Request("DeleteObject", "s3:DeleteObject"),
    Request("GetObject", "s3:GetObject"),
    Request("PutObjectRetention", "s3:PutObjectRetention"),
    Request("BypassGovernanceRetention", "s3:BypassGovernanceRetention"),
    # A run's pages carry the tag of their shorter expiry rule (PutObject with tags needs it).
    Request("PutObjectTagging", "s3:PutObjectTagging"),
)


def _locked(label: str, mode: str, days: int, condition: Mapping[str, str]) -> Request:
    """A PutObject that sets its own lock: S3 also authorizes it as s3:PutObjectRetention."""
    return Request(
        label,
        "s3:PutObject",
        {CREATION: "true", **condition, LOCK_MODE: mode, LOCK_DAYS: str(days)},
        also=("s3:PutObjectRetention",),
    )


#: Object Lock requests on nightly (the stack's cdk.json: GOVERNANCE, 365 days for files, 7 for
#: pages): how the promoter writes pages (its own short lock) and files (no lock headers: the
#: bucket's default), and the short or other-mode locks nobody may give a file.
LOCK_REQUESTS = (
    Request("copy, no lock headers", "s3:PutObject", {CREATION: "true", IF_NONE_MATCH: "*"}),
    _locked("If-None-Match, 7-day lock", "GOVERNANCE", 7, {IF_NONE_MATCH: "*"}),
    _locked("If-Match, 7-day lock", "GOVERNANCE", 7, {IF_MATCH: '"0123abcd"'}),
    _locked("If-None-Match, 365-day lock", "GOVERNANCE", 365, {IF_NONE_MATCH: "*"}),
    _locked("If-None-Match, COMPLIANCE lock", "COMPLIANCE", 400, {IF_NONE_MATCH: "*"}),
    Request(
        "PutObjectRetention 7 days",
        "s3:PutObjectRetention",
        {LOCK_MODE: "GOVERNANCE", LOCK_DAYS: "7"},
    ),
)
LOCK_TARGETS = ("nightly files", "nightly index", "nightly other dir")

PRINCIPALS = (
    "build",
    "reporter",
    "dev",
    "deps",
    "promoter",
    "promoter-elsewhere",
    "fanout",
    "break-glass",
    "deploy",
    "account-admin",
    "other-account",
    "anonymous",
)
#: The break-glass role the matrix synthesis configures (``break_glass_role_arn``/``_id``).
BREAK_GLASS_ARN = f"arn:{PARTITION}:iam::{ACCOUNT}:role/break-glass"
BREAK_GLASS_ID = "AROABREAKGLASS0000001"

_RUN, _MIRROR_RUN, _INDEX, _WHEEL, _DEP_WHEEL = (
    "12345-1",
    "deps-0123456789ab",
    "v2/gfx94X-dcgpu",
    "torch-2.7.0+rocm7.0-cp312-cp312-linux_x86_64.whl",
    "filelock-3.18.0-py3-none-any.whl",
)
_OVERRIDE = new_request_id(_RUN, datetime(2025, 1, 1, tzinfo=UTC))
#: The import source the matrix synthesis allows (``import_sources``), a key under it, and one
#: of the same bucket outside it.
IMPORT_SOURCE_BUCKET = "old-release-bucket"
IMPORT_SOURCE = f"{IMPORT_SOURCE_BUCKET}/v2/"
_IMPORT = import_id(f"s3://{IMPORT_SOURCE}gfx94X-dcgpu/", _INDEX, None)
#: Target name -> (bucket friendly name, example key).
TARGETS: dict[str, tuple[str, str]] = {
    "staging runs/": ("wheelgate-staging", STAGING.artifact(_RUN, _INDEX, _WHEEL)),
    "staging runs/ page": (
        "wheelgate-staging",
        STAGING.run_pages_prefix(_RUN) + PAGES.project_page(_INDEX, "torch"),
    ),
    "staging manifests/": ("wheelgate-staging", STAGING.manifest(_RUN)),
    "staging records/": ("wheelgate-staging", STAGING.record(_RUN)),
    # A fan-out job's items: the one kind of staging key the state machine reads.
    "staging records/_jobs/": ("wheelgate-staging", STAGING.job_items(_RUN)),
    "staging runs/deps-*": (
        "wheelgate-staging",
        STAGING.artifact(_MIRROR_RUN, _INDEX, _DEP_WHEEL),
    ),
    "staging manifests/deps-*": ("wheelgate-staging", STAGING.manifest(_MIRROR_RUN)),
    "staging manifests/override-*": ("wheelgate-staging", STAGING.manifest(_OVERRIDE)),
    "staging manifests/import-*": ("wheelgate-staging", STAGING.manifest(_IMPORT)),
    # What an import gathers: the promoter's copies of its source's files.
    "staging runs/import-*": ("wheelgate-staging", STAGING.artifact(_IMPORT, _INDEX, _WHEEL)),
    "staging status/": ("wheelgate-staging", f"{STATUS_PREFIX}{HTML_PAGE}"),
    # The run history: a stage call's entry (create-only, the build role's), and what the
    # promoter folds entries into (head, page, a month's shard); in a directory outside
    # index_dirs its grant stops.
    "staging history/_entries/": (
        "wheelgate-staging",
        STAGING.history_entry(_INDEX, _RUN, "1-0123456789abcdef0123456789abcdef"),
    ),
    "staging history/ head": ("wheelgate-staging", STAGING.history_head(_INDEX)),
    "staging history/ page": ("wheelgate-staging", STAGING.history_page(_INDEX)),
    "staging history/ month": ("wheelgate-staging", STAGING.history_month(_INDEX, "2026-03")),
    "staging history/ other dir": (
        "wheelgate-staging",
        STAGING.history_month("v1/gfx90X-legacy", "2026-03"),
    ),
    # Where the shared staging index pages were: outside every prefix WheelGate writes.
    "staging other keys": ("wheelgate-staging", PAGES.project_page(_INDEX, "torch")),
    "nightly files": ("wheelgate-nightly", NIGHTLY.artifact(_INDEX, _WHEEL)),
    # A wheel's PEP 658 metadata: `stage` reads it to walk its run index's dependency closure.
    "nightly .metadata": ("wheelgate-nightly", NIGHTLY.metadata(_INDEX, _WHEEL)),
    "nightly index": ("wheelgate-nightly", PAGES.project_page(_INDEX, "torch")),
    # A directory that is not in index_dirs: the promoter's grant stops at the configured ones.
    "nightly other dir": ("wheelgate-nightly", NIGHTLY.artifact("v1/gfx90X-legacy", _WHEEL)),
    "cache third-party/": ("wheelgate-cache", "third-party/ninja/1.12.1/ninja-linux.zip"),
    "cache other prefix": ("wheelgate-cache", "toolchains/gcc-14.2.0.tar.xz"),
    # A bucket outside the stack (no bucket policy: identity policies decide), under the
    # import_sources entry and outside it.
    "import source": (IMPORT_SOURCE_BUCKET, f"v2/gfx94X-dcgpu/{_WHEEL}"),
    "import source, other prefix": (IMPORT_SOURCE_BUCKET, f"v1/gfx90X/{_WHEEL}"),
}

_NO_BUCKET_POLICY: dict[str, Any] = {"Version": "2012-10-17", "Statement": []}
_ADMIN_POLICY = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
}
#: Trust of the roles made outside the stack: the account (any principal its policies allow).
_ACCOUNT_TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:{PARTITION}:iam::{ACCOUNT}:root"},
            "Action": "sts:AssumeRole",
        }
    ],
}

#: Bucket-level requests a stack update makes (a changed bucket policy, a new
#: ``nightly_retention``), each on the bucket ARN.
BUCKET_REQUESTS = (
    Request("PutBucketPolicy", "s3:PutBucketPolicy"),
    Request("DeleteBucketPolicy", "s3:DeleteBucketPolicy"),
    Request("PutBucketObjectLockConfiguration", "s3:PutBucketObjectLockConfiguration"),
)
BUCKET_TARGETS = {
    "staging bucket": "wheelgate-staging",
    "nightly bucket": "wheelgate-nightly",
    "cache bucket": "wheelgate-cache",
}


@dataclass(frozen=True)
class Cell:
    principal: str
    target: str
    #: The :class:`Request` label (the column).
    request: str
    allowed: bool


def _node(arn: str, documents: Sequence[dict[str, Any]], trust: dict[str, Any]) -> Node:
    policies = [Policy(arn, f"policy{i}", doc) for i, doc in enumerate(documents)]
    # The role's real trust policy (the stack's, or the account's for roles made outside it);
    # authorization of an S3 request does not read it, tests/infra/oidc_matrix.py does.
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


def matrix_context() -> dict[str, Any]:
    """The ``cdk.json`` WheelGate context with the matrix's break-glass role and an import
    source configured."""
    from tests.infra.synth import cdk_json_context

    return {
        **cdk_json_context()["wheelgate"],
        "break_glass_role_arn": BREAK_GLASS_ARN,
        "break_glass_role_id": BREAK_GLASS_ID,
        "import_sources": [IMPORT_SOURCE],
    }


def _nodes(resolver: Resolver) -> dict[str, Node | None]:
    """Each principal of the matrix as principalmapper sees it (None: anonymous)."""
    nodes: dict[str, Node | None] = {
        name: _node(
            f"arn:{PARTITION}:iam::{ACCOUNT}:role/{name}",
            resolver.role_policies(name),
            resolver.trust_policy(name),
        )
        for name in ("build", "reporter", "dev", "deps", "promoter", "fanout")
    }
    # The break-glass role, cdk bootstrap's CloudFormation execution role (which deploys the
    # stack; AdministratorAccess by default) and an administrator: Action * each.
    nodes["break-glass"] = _node(BREAK_GLASS_ARN, [_ADMIN_POLICY], _ACCOUNT_TRUST)
    nodes["deploy"] = _node(DEPLOY_ROLE_ARN, [_ADMIN_POLICY], _ACCOUNT_TRUST)
    nodes["account-admin"] = _node(
        f"arn:{PARTITION}:iam::{ACCOUNT}:role/admin", [_ADMIN_POLICY], _ACCOUNT_TRUST
    )
    nodes["other-account"] = _node(
        f"arn:{PARTITION}:iam::{OTHER_ACCOUNT}:role/other-admin", [_ADMIN_POLICY], _ACCOUNT_TRUST
    )
    # The promoter role passed to another function (iam:PassRole + lambda:CreateFunction).
    nodes["promoter-elsewhere"] = nodes["promoter"]
    nodes["anonymous"] = None
    return nodes


def _principal_context(resolver: Resolver) -> dict[str, dict[str, str]]:
    """Request context a principal's credentials carry: Lambda sets ``lambda:SourceFunctionArn``
    to the function whose code makes the request."""
    promoter_role = {"Fn::GetAtt": [resolver.logical_id("promoter"), "Arn"]}
    (function,) = [
        lid
        for lid, r in resolver.of_type("AWS::Lambda::Function").items()
        if r["Properties"].get("Role") == promoter_role
    ]
    return {
        "promoter": {SOURCE_FUNCTION: resolver.get_att(function, "Arn")},
        "promoter-elsewhere": {SOURCE_FUNCTION: OTHER_FUNCTION_ARN},
    }


def _decide(
    node: Node | None,
    request: Request,
    resource: str,
    bucket_policy: dict[str, Any],
    principal_context: Mapping[str, str],
) -> bool:
    context = {**request.context, **principal_context}
    if node is None:
        # No identity policy: only a bucket policy Allow for "*" could grant access.
        return all(
            resource_policy_authorization(
                "anonymous",
                ACCOUNT,
                bucket_policy,
                action,
                resource,
                {**context, "aws:SecureTransport": "true"},
            )
            == ResourcePolicyEvalResult.SERVICE_MATCH
            for action in (request.action, *request.also)
        )
    return all(
        local_check_authorization_full(node, action, resource, context, bucket_policy, ACCOUNT)
        for action in (request.action, *request.also)
    )


def without_statements(template: dict[str, Any], *sids: str) -> dict[str, Any]:
    """A copy of ``template`` without the bucket or role policy statements named ``sids``: what
    the matrix would be without them (a check that the evaluator reads a statement)."""
    mutated = copy.deepcopy(template)
    for resource in mutated["Resources"].values():
        if resource["Type"] in ("AWS::S3::BucketPolicy", "AWS::IAM::Policy"):
            statements = resource["Properties"]["PolicyDocument"]["Statement"]
            statements[:] = [s for s in statements if s.get("Sid") not in sids]
    return mutated


def compute_bucket_settings(template: dict[str, Any]) -> list[Cell]:
    """Evaluate every principal x bucket x :data:`BUCKET_REQUESTS` against ``template``."""
    resolver = Resolver(template)
    nodes = _nodes(resolver)
    principal_context = _principal_context(resolver)
    cells = []
    for principal in PRINCIPALS:
        for target, bucket in BUCKET_TARGETS.items():
            policy = resolver.bucket_policy(bucket)
            for request in BUCKET_REQUESTS:
                resource = f"arn:{PARTITION}:s3:::{bucket}"
                allowed = _decide(
                    nodes[principal],
                    request,
                    resource,
                    policy,
                    principal_context.get(principal, {}),
                )
                cells.append(Cell(principal, target, request.label, allowed))
    return cells


def compute(
    template: dict[str, Any],
    requests: Sequence[Request] = REQUESTS,
    targets: Sequence[str] = tuple(TARGETS),
) -> list[Cell]:
    """Evaluate every principal x target x request (the matrix's columns and rows by default)
    against ``template``."""
    resolver = Resolver(template)
    nodes = _nodes(resolver)
    principal_context = _principal_context(resolver)
    buckets = {bucket for bucket, _ in TARGETS.values()}
    # A bucket outside the stack (an import source) is shown with an empty bucket policy: what
    # the stack's identity policies grant in its account, nothing to another account.
    policies = {
        b: resolver.bucket_policy(b) if b.startswith("wheelgate-") else _NO_BUCKET_POLICY
        for b in sorted(buckets)
    }

    cells = []
    for principal in PRINCIPALS:
        node = nodes[principal]
        for target in targets:
            bucket, key = TARGETS[target]
            resource = f"arn:{PARTITION}:s3:::{bucket}/{key}"
            for request in requests:
                allowed = _decide(
                    node, request, resource, policies[bucket], principal_context.get(principal, {})
                )
                cells.append(Cell(principal, target, request.label, allowed))
    return cells


#: Columns of the service matrix: (label, action, what the resource is).
SERVICE_REQUESTS = (
    ("StartExecution fan-out", "states:StartExecution", "the fan-out state machine"),
    ("InvokeFunction promoter", "lambda:InvokeFunction", "the promoter function"),
    ("InvokeFunction other", "lambda:InvokeFunction", "another function"),
)
#: The stack's own roles: the roles made outside it have ``Action: *`` and are not shown.
SERVICE_PRINCIPALS = ("build", "reporter", "dev", "deps", "promoter", "fanout")
SERVICE_TARGET = "service"


def _service_resources(resolver: Resolver) -> dict[str, str]:
    """The ARN each :data:`SERVICE_REQUESTS` column asks about."""
    (machine,) = resolver.of_type("AWS::StepFunctions::StateMachine")
    promoter_role = {"Fn::GetAtt": [resolver.logical_id("promoter"), "Arn"]}
    (function,) = [
        lid
        for lid, r in resolver.of_type("AWS::Lambda::Function").items()
        if r["Properties"].get("Role") == promoter_role
    ]
    arns = (resolver.ref(machine), resolver.get_att(function, "Arn"), OTHER_FUNCTION_ARN)
    return {label: arn for (label, _, _), arn in zip(SERVICE_REQUESTS, arns, strict=True)}


def compute_services(template: dict[str, Any]) -> list[Cell]:
    """Evaluate every :data:`SERVICE_PRINCIPALS` x :data:`SERVICE_REQUESTS` against
    ``template`` (the state machine and the function have no resource policy)."""
    resolver = Resolver(template)
    nodes = _nodes(resolver)
    resources = _service_resources(resolver)
    cells = []
    for principal in SERVICE_PRINCIPALS:
        for label, action, _ in SERVICE_REQUESTS:
            allowed = local_check_authorization_full(
                nodes[principal], action, resources[label], {}, None, ACCOUNT
            )
            cells.append(Cell(principal, SERVICE_TARGET, label, bool(allowed)))
    return cells


def render_services(cells: Sequence[Cell]) -> str:
    """The service matrix (:func:`compute_services`) as a Markdown table."""
    labels = [label for label, _, _ in SERVICE_REQUESTS]
    lines = [
        "| principal | " + " | ".join(labels) + " |",
        "|---|" + "---|" * len(labels),
    ]
    by_key = {(c.principal, c.request): c.allowed for c in cells}
    for principal in SERVICE_PRINCIPALS:
        marks = ["**allow**" if by_key[(principal, label)] else "deny" for label in labels]
        lines.append(f"| {principal} | " + " | ".join(marks) + " |")
    return "\n".join(lines) + "\n"


#: Columns of the verdict key matrix: KMS actions on the key.
KEY_REQUESTS = (
    Request("Sign", "kms:Sign"),
    Request("GetPublicKey", "kms:GetPublicKey"),
    Request("ScheduleKeyDeletion", "kms:ScheduleKeyDeletion"),
    Request("DisableKey", "kms:DisableKey"),
    Request("PutKeyPolicy", "kms:PutKeyPolicy"),
)
KEY_TARGET = "verdict key"


def compute_verdict_key(template: dict[str, Any]) -> list[Cell]:
    """Evaluate every principal x :data:`KEY_REQUESTS` on the verdict key, its key policy as
    the resource policy (the account-root statement delegates to identity policies)."""
    resolver = Resolver(template)
    nodes = _nodes(resolver)
    principal_context = _principal_context(resolver)
    (key,) = [
        lid
        for lid, r in resolver.of_type("AWS::KMS::Key").items()
        if r["Properties"].get("KeyUsage") == "SIGN_VERIFY"
    ]
    arn = resolver.get_att(key, "Arn")
    policy = resolver.resolve(resolver.resources[key]["Properties"]["KeyPolicy"])
    cells = []
    for principal in PRINCIPALS:
        for request in KEY_REQUESTS:
            allowed = _decide(
                nodes[principal], request, arn, policy, principal_context.get(principal, {})
            )
            cells.append(Cell(principal, KEY_TARGET, request.label, allowed))
    return cells


def render_verdict_key(cells: Sequence[Cell]) -> str:
    """The verdict key matrix (:func:`compute_verdict_key`) as a Markdown table."""
    return render(cells, KEY_REQUESTS, (KEY_TARGET,))


def render(
    cells: Sequence[Cell],
    requests: Sequence[Request] = REQUESTS,
    targets: Sequence[str] = tuple(TARGETS),
) -> str:
    """The matrix as a Markdown table: one row per principal and target, one column per request."""
    labels = [r.label for r in requests]
    lines = [
        "| principal | target | " + " | ".join(labels) + " |",
        "|---|---|" + "---|" * len(labels),
    ]
    by_key = {(c.principal, c.target, c.request): c.allowed for c in cells}
    for principal in PRINCIPALS:
        for target in targets:
            marks = ["**allow**" if by_key[(principal, target, r)] else "deny" for r in labels]
            lines.append(f"| {principal} | {target} | " + " | ".join(marks) + " |")
    return "\n".join(lines) + "\n"


def render_bucket_settings(cells: Sequence[Cell]) -> str:
    """The bucket settings matrix (:func:`compute_bucket_settings`) as a Markdown table."""
    return render(cells, BUCKET_REQUESTS, tuple(BUCKET_TARGETS))


def compute_locks(template: dict[str, Any]) -> list[Cell]:
    """The Object Lock matrix: :data:`LOCK_REQUESTS` on the nightly targets."""
    return compute(template, LOCK_REQUESTS, LOCK_TARGETS)


def render_locks(cells: Sequence[Cell]) -> str:
    """The Object Lock matrix (:func:`compute_locks`) as a Markdown table."""
    return render(cells, LOCK_REQUESTS, LOCK_TARGETS)


def replace_table(document: str, table: str, start: str = MARK_START, end: str = MARK_END) -> str:
    """``document`` with the text between the markers ``start`` and ``end`` replaced by
    ``table``."""
    first, last = document.index(start), document.index(end)
    return document[: first + len(start)] + "\n" + table + document[last:]


def between(document: str, start: str, end: str) -> str:
    """The text between the markers ``start`` and ``end`` of ``document``, stripped."""
    return document[document.index(start) + len(start) : document.index(end)].strip()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="refresh the table in this Markdown file")
    args = parser.parse_args(argv)

    from tests.infra.synth import synthesize

    with tempfile.TemporaryDirectory() as outdir:
        template = synthesize(Path(outdir), matrix_context()).template
    table = render(compute(template))
    settings = render_bucket_settings(compute_bucket_settings(template))
    services = render_services(compute_services(template))
    locks = render_locks(compute_locks(template))
    key = render_verdict_key(compute_verdict_key(template))
    if args.write:
        document = replace_table(args.write.read_text(), table)
        document = replace_table(document, settings, BUCKET_MARK_START, BUCKET_MARK_END)
        document = replace_table(document, services, SERVICE_MARK_START, SERVICE_MARK_END)
        document = replace_table(document, locks, LOCK_MARK_START, LOCK_MARK_END)
        document = replace_table(document, key, KEY_MARK_START, KEY_MARK_END)
        args.write.write_text(document)
    else:
        sys.stdout.write(table + "\n" + settings + "\n" + services + "\n" + locks + "\n" + key)
    return 0


if __name__ == "__main__":
    sys.exit(main())
