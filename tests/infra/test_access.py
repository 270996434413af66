"""Roles: exact actions and resources, OIDC trust, and the bucket policies' Deny statements."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from tests.infra.oidc_matrix import string_like
from tests.infra.resolve import ACCOUNT, DEPLOY_ROLE_ARN, Resolver
from wheelgate.core.layout import VERDICT_KEYS_KEY

STAGING = "arn:aws:s3:::wheelgate-staging"
NIGHTLY = "arn:aws:s3:::wheelgate-nightly"
DEV = "arn:aws:s3:::therock-dev-python"
CACHE = "arn:aws:s3:::wheelgate-cache"
ROLE = f"arn:aws:iam::{ACCOUNT}:role"


def _statements(template_json: dict[str, Any], role: str) -> dict[str, tuple[str, Any, Any]]:
    """Sid -> (effect, actions, resources) of the role's WheelGate access policy."""
    documents = Resolver(template_json).role_policies(role)
    statements = [s for doc in documents for s in doc["Statement"] if "Sid" in s]
    return {s["Sid"]: (s["Effect"], s["Action"], s["Resource"]) for s in statements}


def test_build_role_policy(template_json: dict[str, Any]) -> None:
    assert _statements(template_json, "build") == {
        # No staging index page grant: each run's pages are under runs/<run>/.
        "UploadStagedRuns": (
            "Allow",
            ["s3:PutObject", "s3:AbortMultipartUpload"],
            f"{STAGING}/runs/*",
        ),
        # One entry per stage call in the run history, created once (If-None-Match) ...
        "WriteHistoryEntries": ("Allow", "s3:PutObject", f"{STAGING}/history/_entries/*"),
        # ... never replaced: the bucket policy says it too (each alone: test_history_access)
        "DenyHistoryEntryRewrites": ("Deny", "s3:PutObject", f"{STAGING}/history/_entries/*"),
        # The tag of a run's pages, which selects their shorter lifecycle rule.
        "TagRunPages": (
            "Allow",
            "s3:PutObjectTagging",
            [f"{STAGING}/runs/*/index.html", f"{STAGING}/runs/*/index.json"],
        ),
        "DenyMirrorRuns": (
            "Deny",
            ["s3:PutObject", "s3:AbortMultipartUpload", "s3:PutObjectTagging"],
            f"{STAGING}/runs/deps-*",
        ),
        # What an import gathers is the promoter's alone.
        "DenyImportRuns": (
            "Deny",
            ["s3:PutObject", "s3:AbortMultipartUpload", "s3:PutObjectTagging"],
            f"{STAGING}/runs/import-*",
        ),
        "ReadStaging": ("Allow", "s3:GetObject", f"{STAGING}/*"),
        "ReadNightlyIndexPages": (
            "Allow",
            "s3:GetObject",
            [f"{NIGHTLY}/*/index.html", f"{NIGHTLY}/*/index.json", f"{NIGHTLY}/*.metadata"],
        ),
        "ListBuckets": ("Allow", "s3:ListBucket", [STAGING, NIGHTLY]),
    }


def test_reporter_role_policy(template_json: dict[str, Any]) -> None:
    assert _statements(template_json, "reporter") == {
        "WriteManifests": ("Allow", "s3:PutObject", f"{STAGING}/manifests/*"),
        "DenyMirrorManifests": ("Deny", "s3:PutObject", f"{STAGING}/manifests/deps-*"),
        # Import requests are the break-glass role's alone.
        "DenyImportRequests": ("Deny", "s3:PutObject", f"{STAGING}/manifests/import-*"),
        "ReadRunsAndRecords": (
            "Allow",
            "s3:GetObject",
            [f"{STAGING}/runs/*", f"{STAGING}/records/*"],
        ),
        # report holds each test's evidence to nightly's bytes (pages, metadata, wheels).
        "ReadNightly": ("Allow", "s3:GetObject", f"{NIGHTLY}/*"),
        "ListBuckets": ("Allow", "s3:ListBucket", [STAGING, NIGHTLY]),
    }


def test_dev_role_touches_only_the_dev_bucket(template_json: dict[str, Any]) -> None:
    assert _statements(template_json, "dev") == {
        "UseDevBucket": (
            "Allow",
            ["s3:PutObject", "s3:GetObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
            f"{DEV}/*",
        ),
        "ListDevBucket": ("Allow", "s3:ListBucket", DEV),
    }


def test_deps_role_policy(template_json: dict[str, Any]) -> None:
    # cdk.json: cache_prefixes ["third-party/"]
    assert _statements(template_json, "deps") == {
        "WriteCache": ("Allow", "s3:PutObject", f"{CACHE}/third-party/*"),
        "ReadCache": ("Allow", "s3:GetObject", f"{CACHE}/third-party/*"),
        "StageMirrorRuns": (
            "Allow",
            "s3:PutObject",
            [f"{STAGING}/runs/deps-*", f"{STAGING}/manifests/deps-*.json"],
        ),
        "ReadMirrorRunsAndRecords": (
            "Allow",
            "s3:GetObject",
            [f"{STAGING}/runs/deps-*", f"{STAGING}/records/deps-*"],
        ),
        "ReadIndexPages": (
            "Allow",
            "s3:GetObject",
            [f"{STAGING}/*/index.json", f"{NIGHTLY}/*/index.json"],
        ),
        "ListBuckets": ("Allow", "s3:ListBucket", [CACHE, STAGING, NIGHTLY]),
    }


def test_promoter_role_policy(template_json: dict[str, Any]) -> None:
    resolver = Resolver(template_json)
    queues = resolver.of_type("AWS::SQS::Queue")
    (main,) = [lid for lid, q in queues.items() if "RedrivePolicy" in q["Properties"]]
    dlq = queues[main]["Properties"]["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
    (key,) = [
        lid
        for lid, r in resolver.of_type("AWS::KMS::Key").items()
        if r["Properties"].get("KeyUsage") == "SIGN_VERIFY"
    ]
    verdict_key = resolver.get_att(key, "Arn")
    assert _statements(template_json, "promoter") == {
        "ReadStaging": ("Allow", ["s3:GetObject", "s3:GetObjectAttributes"], f"{STAGING}/*"),
        "WriteRecordsAndStatus": (
            "Allow",
            "s3:PutObject",
            [f"{STAGING}/records/*", f"{STAGING}/status/*"],
        ),
        # The run history of each index_dirs entry (head, page, shards): never an entry,
        # since no index directory starts with '_' (history/_entries/).
        "WriteRunHistory": (
            "Allow",
            "s3:PutObject",
            [
                f"{STAGING}/history/v2/gfx94X-dcgpu/*",
                f"{STAGING}/history/v2/gfx950-dcgpu/*",
                f"{STAGING}/history/v2/gfx110X-all/*",
                f"{STAGING}/history/v2/gfx120X-all/*",
            ],
        ),
        # The files imports gather, copied from their sources.
        "GatherImports": (
            "Allow",
            ["s3:PutObject", "s3:AbortMultipartUpload"],
            f"{STAGING}/runs/import-*",
        ),
        "ReadNightly": ("Allow", ["s3:GetObject", "s3:GetObjectAttributes"], f"{NIGHTLY}/*"),
        # Only under index_dirs (cdk.json), one resource per directory.
        "WriteNightly": (
            "Allow",
            ["s3:PutObject", "s3:AbortMultipartUpload"],
            [
                f"{NIGHTLY}/v2/gfx94X-dcgpu/*",
                f"{NIGHTLY}/v2/gfx950-dcgpu/*",
                f"{NIGHTLY}/v2/gfx110X-all/*",
                f"{NIGHTLY}/v2/gfx120X-all/*",
            ],
        ),
        # Its own lock on index pages only: root and project pages of each index_dirs entry.
        "LockNightlyPages": (
            "Allow",
            "s3:PutObjectRetention",
            [
                f"{NIGHTLY}/{index}/{page}"
                for index in (
                    "v2/gfx94X-dcgpu",
                    "v2/gfx950-dcgpu",
                    "v2/gfx110X-all",
                    "v2/gfx120X-all",
                )
                for page in ("index.html", "index.json", "*/index.html", "*/index.json")
            ],
        ),
        "ListBuckets": ("Allow", "s3:ListBucket", [STAGING, NIGHTLY]),
        # A failed fan-out execution's manifest goes back to the queue, or to its DLQ.
        "RequeueFailedFanOuts": (
            "Allow",
            "sqs:SendMessage",
            [resolver.get_att(main, "Arn"), resolver.get_att(dlq, "Arn")],
        ),
        # Writes only from the promoter function's own code (lambda:SourceFunctionArn).
        "DenyWritesFromOtherFunctions": (
            "Deny",
            ["s3:PutObject*", "s3:DeleteObject*", "s3:RestoreObject"],
            [f"{STAGING}/*", f"{NIGHTLY}/*"],
        ),
        # The verdicts' public keys: one fixed key outside every index directory.
        "WriteVerdictKeys": ("Allow", "s3:PutObject", f"{NIGHTLY}/{VERDICT_KEYS_KEY}"),
        # Signing verdicts with the stack's key, from the promoter function's code alone.
        "SignVerdicts": ("Allow", ["kms:Sign", "kms:GetPublicKey"], verdict_key),
        "DenySigningFromOtherFunctions": ("Deny", "kms:Sign", verdict_key),
    }


def test_promoter_writes_only_from_its_function(template_json: dict[str, Any]) -> None:
    resolver = Resolver(template_json)
    (deny,) = [
        s
        for doc in resolver.role_policies("promoter")
        for s in doc["Statement"]
        if s.get("Sid") == "DenyWritesFromOtherFunctions"
    ]
    (function,) = [
        lid
        for lid, r in resolver.of_type("AWS::Lambda::Function").items()
        if r["Properties"].get("Role") == {"Fn::GetAtt": [resolver.logical_id("promoter"), "Arn"]}
    ]
    assert deny["Condition"] == {
        "ArnNotEquals": {"lambda:SourceFunctionArn": resolver.get_att(function, "Arn")}
    }


def test_promoter_runtime_grants(template_json: dict[str, Any]) -> None:
    """The Lambda wiring adds queue consumption, logs, tracing, invalidation and starting the
    fan-out state machine (tests/infra/test_fanout.py checks which one); nothing else."""
    documents = Resolver(template_json).role_policies("promoter")
    unnamed = [s for doc in documents for s in doc["Statement"] if "Sid" not in s]
    actions = sorted(
        a for s in unnamed for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    )
    assert actions == sorted(
        [
            "cloudfront:CreateInvalidation",
            "logs:CreateLogStream",
            "logs:PutLogEvents",
            "sqs:ChangeMessageVisibility",
            "sqs:DeleteMessage",
            "sqs:GetQueueAttributes",
            "sqs:GetQueueUrl",
            "sqs:ReceiveMessage",
            "states:StartExecution",
            "xray:PutTelemetryRecords",
            "xray:PutTraceSegments",
        ]
    )
    invalidation = [
        s["Resource"] for s in unnamed if s["Action"] == "cloudfront:CreateInvalidation"
    ]
    # Only nightly's pages change on a promotion: staging has no pages the promoter writes.
    assert invalidation == [f"arn:aws:cloudfront::{ACCOUNT}:distribution/ENIGHTLY"]


REPO = "ROCm/TheRock"
WORKFLOWS = f"{REPO}/.github/workflows"


def _subject(ref_context: str, workflow: str, ref: str, event: str) -> str:
    """The ``sub`` GitHub issues under the repository's customized template
    (``repo``, ``context``, ``job_workflow_ref``, ``event_name``)."""
    job_workflow_ref = f"{WORKFLOWS}/{workflow}@{ref}"
    return f"repo:{REPO}:{ref_context}:job_workflow_ref:{job_workflow_ref}:event_name:{event}"


def _release_subs(workflow: str, refs: tuple[str, ...] = ("refs/heads/main",)) -> list[str]:
    return [
        f"repo:{REPO}:ref:{ref}:job_workflow_ref:{WORKFLOWS}/{workflow}@{ref}:event_name:{e}"
        for ref in refs
        for e in ("schedule", "push")
    ]


@pytest.mark.parametrize(
    ("role", "subs"),
    [
        # No tags by default (release_tags is empty): the default branch only.
        ("build", _release_subs("release-nightly.yml")),
        # The reporter trusts its own reusable workflow's job_workflow_ref, not the build's.
        ("reporter", _release_subs("report.yml")),
        ("dev", [f"repo:{REPO}:pull_request:*", f"repo:{REPO}:ref:refs/heads/*"]),
        (
            "deps",
            [
                f"repo:{REPO}:ref:refs/heads/main:job_workflow_ref:{WORKFLOWS}/deps.yml"
                "@refs/heads/main:event_name:push"
            ],
        ),
    ],
)
def test_github_trust_is_scoped_by_sub_and_audience(
    template_json: dict[str, Any], role: str, subs: list[str]
) -> None:
    resolver = Resolver(template_json)
    trust = template_json["Resources"][resolver.logical_id(role)]["Properties"][
        "AssumeRolePolicyDocument"
    ]
    (statement,) = trust["Statement"]
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    provider = resolver.of_type("AWS::IAM::OIDCProvider")
    assert list(provider) == [statement["Principal"]["Federated"]["Ref"]]
    assert statement["Condition"] == {
        "StringEquals": {"token.actions.githubusercontent.com:aud": "sts.amazonaws.com"},
        "StringLike": {"token.actions.githubusercontent.com:sub": subs},
    }


def _roles_trusting(template_json: dict[str, Any], sub: str) -> set[str]:
    resolver = Resolver(template_json)
    # (The full claims matrix, aud included, is tests/infra/oidc_matrix.py.)
    trusted = set()
    for role in ("build", "reporter", "dev", "deps"):
        trust = template_json["Resources"][resolver.logical_id(role)]["Properties"]
        (statement,) = trust["AssumeRolePolicyDocument"]["Statement"]
        patterns = statement["Condition"]["StringLike"]["token.actions.githubusercontent.com:sub"]
        if any(string_like(p, sub) for p in patterns):
            trusted.add(role)
    return trusted


@pytest.mark.parametrize(
    ("sub", "roles"),
    [
        # The nightly schedule of the release workflow on main: the build role (and dev, as
        # any branch run), never the reporter role.
        (
            _subject("ref:refs/heads/main", "release-nightly.yml", "refs/heads/main", "schedule"),
            {"build", "dev"},
        ),
        # Its report job, a call of the reusable report.yml: the reporter role.
        (
            _subject("ref:refs/heads/main", "report.yml", "refs/heads/main", "schedule"),
            {"reporter", "dev"},
        ),
        # The reusable report.yml called by a run on another branch: not the reporter role.
        (
            _subject("ref:refs/heads/feature", "report.yml", "refs/heads/feature", "push"),
            {"dev"},
        ),
        # A tag pushed: nothing, while release_tags is empty.
        (
            _subject("ref:refs/tags/v7.1.0", "release-nightly.yml", "refs/tags/v7.1.0", "push"),
            set(),
        ),
        (_subject("ref:refs/tags/v7.1.0", "deps.yml", "refs/tags/v7.1.0", "push"), set()),
        # A manual run of the very same workflow file on main: dev role only.
        (
            _subject(
                "ref:refs/heads/main", "release-nightly.yml", "refs/heads/main", "workflow_dispatch"
            ),
            {"dev"},
        ),
        # A push of the deps workflow on main: the deps role (and dev, as any branch run).
        (_subject("ref:refs/heads/main", "deps.yml", "refs/heads/main", "push"), {"deps", "dev"}),
        # The deps workflow on a pull request or a manual run: never the deps role.
        (_subject("pull_request", "deps.yml", "refs/pull/7/merge", "pull_request"), {"dev"}),
        (
            _subject("ref:refs/heads/main", "deps.yml", "refs/heads/main", "workflow_dispatch"),
            {"dev"},
        ),
        # Another workflow file on main, even on a schedule: dev role only.
        (_subject("ref:refs/heads/main", "dev.yml", "refs/heads/main", "schedule"), {"dev"}),
        # The release workflow run from another branch: dev role only.
        (
            _subject("ref:refs/heads/feature", "release-nightly.yml", "refs/heads/feature", "push"),
            {"dev"},
        ),
        # A pull request (its ref is the merge ref): dev role only.
        (_subject("pull_request", "dev.yml", "refs/pull/7/merge", "pull_request"), {"dev"}),
        # A job with a GitHub environment: nothing.
        (
            _subject("environment:prod", "release-nightly.yml", "refs/heads/main", "schedule"),
            set(),
        ),
        # The repository still on GitHub's default subject: the release roles fail closed.
        (f"repo:{REPO}:ref:refs/heads/main", {"dev"}),
        (f"repo:{REPO}:pull_request", set()),
        # Another repository: nothing.
        (
            _subject(
                "ref:refs/heads/main", "release-nightly.yml", "refs/heads/main", "schedule"
            ).replace(REPO, "ROCm/Other"),
            set(),
        ),
    ],
)
def test_only_release_workflow_runs_get_the_release_roles(
    template_json: dict[str, Any], sub: str, roles: set[str]
) -> None:
    # Given the subject GitHub signs for a job, when STS evaluates the trust policies, then
    # exactly these roles accept it.
    assert _roles_trusting(template_json, sub) == roles


def test_oidc_provider_is_github(template_json: dict[str, Any]) -> None:
    (provider,) = Resolver(template_json).of_type("AWS::IAM::OIDCProvider").values()
    assert provider["Properties"]["Url"] == "https://token.actions.githubusercontent.com"
    assert provider["Properties"]["ClientIdList"] == ["sts.amazonaws.com"]


def test_promoter_role_is_for_lambda_only(template_json: dict[str, Any]) -> None:
    resolver = Resolver(template_json)
    trust = template_json["Resources"][resolver.logical_id("promoter")]["Properties"]
    assert trust["AssumeRolePolicyDocument"]["Statement"] == [
        {
            "Action": "sts:AssumeRole",
            "Effect": "Allow",
            "Principal": {"Service": "lambda.amazonaws.com"},
        }
    ]
    assert "ManagedPolicyArns" not in trust


def _denies(template_json: dict[str, Any], bucket: str) -> dict[str, dict[str, Any]]:
    document = Resolver(template_json).bucket_policy(bucket)
    return {s["Sid"]: s for s in document["Statement"] if s["Effect"] == "Deny" and "Sid" in s}


def test_staging_bucket_policy_denies(template_json: dict[str, Any]) -> None:
    denies = _denies(template_json, "wheelgate-staging")

    def exempt(sid: str) -> Any:
        return denies[sid].get("Condition", {}).get("ArnNotEquals", {}).get("aws:PrincipalArn")

    build, reporter, promoter, deps = (
        f"{ROLE}/{r}" for r in ("build", "reporter", "promoter", "deps")
    )
    overrides = f"{STAGING}/manifests/override-*"
    imports = f"{STAGING}/manifests/import-*"
    assert exempt("DenyObjectWritesExceptWheelGateRoles") == [build, reporter, promoter, deps]
    assert denies["DenyObjectWritesExceptWheelGateRoles"]["Action"] == [
        "s3:PutObject*",
        "s3:DeleteObject*",
        "s3:RestoreObject",
    ]
    assert denies["DenyObjectWritesExceptWheelGateRoles"]["NotResource"] == [overrides, imports]
    # No break-glass role in cdk.json: nobody may write an override or import request.
    assert denies["DenyOverrideWritesExceptBreakGlass"]["Resource"] == overrides
    assert "Condition" not in denies["DenyOverrideWritesExceptBreakGlass"]
    assert denies["DenyImportWritesExceptBreakGlass"]["Resource"] == imports
    assert "Condition" not in denies["DenyImportWritesExceptBreakGlass"]
    assert exempt("DenyRunWritesExceptBuildDepsAndPromoter") == [build, deps, promoter]
    assert denies["DenyRunWritesExceptBuildDepsAndPromoter"]["Resource"] == f"{STAGING}/runs/*"
    # What an import gathered is the promoter's alone.
    assert exempt("DenyImportRunWritesExceptPromoter") == [promoter]
    assert denies["DenyImportRunWritesExceptPromoter"]["Resource"] == f"{STAGING}/runs/import-*"
    assert exempt("DenyManifestWritesExceptReporterDepsAndBreakGlass") == [reporter, deps]
    assert (
        denies["DenyManifestWritesExceptReporterDepsAndBreakGlass"]["Resource"]
        == f"{STAGING}/manifests/*"
    )
    assert denies["DenyDepsWritesOutsideMirrorRuns"]["Condition"] == {
        "ArnEquals": {"aws:PrincipalArn": [deps]}
    }
    assert denies["DenyDepsWritesOutsideMirrorRuns"]["NotResource"] == [
        f"{STAGING}/runs/deps-*",
        f"{STAGING}/manifests/deps-*.json",
    ]
    assert exempt("DenyRecordWritesExceptPromoter") == [promoter]
    assert exempt("DenyStatusWritesExceptPromoter") == [promoter]
    assert denies["DenyStatusWritesExceptPromoter"]["Resource"] == f"{STAGING}/status/*"
    # No break-glass role in cdk.json: deletes and retention changes are denied to everyone.
    assert "Condition" not in denies["DenyDeletes"]
    assert "Condition" not in denies["DenyRetentionChanges"]
    _assert_bucket_settings_are_the_deploy_roles(denies, STAGING)
    assert all(
        s["Principal"] == {"AWS": "*"}
        for sid, s in denies.items()
        if sid != "DenyCloudFrontBookkeeping"
    )
    allows = [
        s
        for s in Resolver(template_json).bucket_policy("wheelgate-staging")["Statement"]
        if s["Effect"] == "Allow" and s.get("Sid", "").startswith("AllowBreakGlass")
    ]
    assert allows == []


def _staging_policy_has(template: Template, statement: dict[str, Any]) -> None:
    """The staging bucket policy has ``statement`` (a Deny for everyone), as written."""
    staging_id = Resolver(template.to_json()).logical_id("wheelgate-staging")
    template.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "Bucket": {"Ref": staging_id},
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Effect": "Deny", "Principal": {"AWS": "*"}, **statement})]
                )
            },
        },
    )


def test_staging_runs_are_write_once_for_everyone(
    template: Template, template_json: dict[str, Any]
) -> None:
    # AWS's "Enforce conditional writes" policy: a creating request (PutObject,
    # CompleteMultipartUpload, CopyObject) without If-None-Match is refused, part uploads are
    # not; no principal is exempt.
    condition = {
        "Null": {"s3:if-none-match": "true"},
        "Bool": {"s3:ObjectCreationOperation": "true"},
    }
    _staging_policy_has(
        template,
        {
            "Sid": "DenyRunWritesWithoutIfNoneMatch",
            "Action": "s3:PutObject",
            "Condition": condition,
        },
    )
    # Nested objects match partially above; the exact statement, no exemption in it:
    write_once = _denies(template_json, "wheelgate-staging")["DenyRunWritesWithoutIfNoneMatch"]
    # Everything under runs/ but a run's own index pages (the other prefixes are named so the
    # Deny leaves them alone; keys outside the prefixes are refused by another statement).
    assert "Resource" not in write_once
    assert write_once["NotResource"] == [
        f"{STAGING}/runs/*/index.html",
        f"{STAGING}/runs/*/index.json",
        f"{STAGING}/manifests/*",
        f"{STAGING}/records/*",
        f"{STAGING}/status/*",
        f"{STAGING}/history/*",
    ]
    assert write_once["Condition"] == condition
    # The history's own pages are updated in place; its entries are create-only, as runs are
    entries = _denies(template_json, "wheelgate-staging")[
        "DenyHistoryEntryWritesWithoutIfNoneMatch"
    ]
    assert entries["Action"] == "s3:PutObject"
    assert entries["Resource"] == f"{STAGING}/history/_entries/*"
    assert entries["Condition"] == condition
    (role_deny,) = [
        s
        for doc in Resolver(template_json).role_policies("build")
        for s in doc["Statement"]
        if s.get("Sid") == "DenyHistoryEntryRewrites"
    ]
    assert role_deny["Condition"] == condition


def test_the_history_is_held_to_its_writers(template_json: dict[str, Any]) -> None:
    denies = _denies(template_json, "wheelgate-staging")
    writes = ["s3:PutObject*", "s3:DeleteObject*", "s3:RestoreObject"]
    # Under history/ the build role and the promoter alone write ...
    anyone = denies["DenyHistoryWritesExceptBuildAndPromoter"]
    assert (anyone["Action"], anyone["Resource"]) == (writes, f"{STAGING}/history/*")
    assert anyone["Condition"] == {
        "ArnNotEquals": {"aws:PrincipalArn": [f"{ROLE}/build", f"{ROLE}/promoter"]}
    }
    # ... the entries are the build role's alone ...
    entries = denies["DenyHistoryEntryWritesExceptBuild"]
    assert (entries["Action"], entries["Resource"]) == (writes, f"{STAGING}/history/_entries/*")
    assert entries["Condition"] == {"ArnNotEquals": {"aws:PrincipalArn": [f"{ROLE}/build"]}}
    # ... and the build role writes nothing but runs/ and the entries
    build = denies["DenyBuildWritesOutsideRunsAndHistoryEntries"]
    assert build["Action"] == writes
    assert build["NotResource"] == [f"{STAGING}/runs/*", f"{STAGING}/history/_entries/*"]
    assert build["Condition"] == {"ArnEquals": {"aws:PrincipalArn": [f"{ROLE}/build"]}}


def test_only_deps_writes_mirror_runs_and_their_manifests(template_json: dict[str, Any]) -> None:
    mirror = _denies(template_json, "wheelgate-staging")["DenyMirrorWritesExceptDeps"]
    assert mirror["Action"] == "s3:PutObject"
    assert mirror["Resource"] == [f"{STAGING}/runs/deps-*", f"{STAGING}/manifests/deps-*"]
    assert mirror["Condition"] == {"ArnNotEquals": {"aws:PrincipalArn": [f"{ROLE}/deps"]}}


def test_nobody_writes_staging_outside_its_prefixes(
    template: Template, template_json: dict[str, Any]
) -> None:
    # No shared staging index pages: no principal is exempt, break-glass included.
    _staging_policy_has(
        template, {"Sid": "DenyWritesOutsideStagingPrefixes", "Action": "s3:PutObject"}
    )
    outside = _denies(template_json, "wheelgate-staging")["DenyWritesOutsideStagingPrefixes"]
    assert outside["NotResource"] == [
        f"{STAGING}/history/*",
        f"{STAGING}/manifests/*",
        f"{STAGING}/records/*",
        f"{STAGING}/runs/*",
        f"{STAGING}/status/*",
    ]
    assert "Condition" not in outside
    assert "DenyIndexPageWritesExceptBuildAndPromoter" not in _denies(
        template_json, "wheelgate-staging"
    )


def test_cache_bucket_policy_lets_only_deps_write(template_json: dict[str, Any]) -> None:
    denies = _denies(template_json, "wheelgate-cache")
    assert denies["DenyObjectWritesExceptDeps"]["Resource"] == f"{CACHE}/*"
    assert denies["DenyObjectWritesExceptDeps"]["Condition"] == {
        "ArnNotEquals": {"aws:PrincipalArn": [f"{ROLE}/deps"]}
    }
    assert "Condition" not in denies["DenyRetentionChanges"]
    _assert_bucket_settings_are_the_deploy_roles(denies, CACHE)


def _assert_bucket_settings_are_the_deploy_roles(denies: dict[str, Any], bucket: str) -> None:
    """CloudFormation's execution role (cdk bootstrap's, default qualifier) alone may change
    the bucket policy and the Object Lock configuration (no break-glass role in cdk.json)."""
    lock = denies["DenyLockConfigurationChangesExceptDeploys"]
    assert lock["Action"] == "s3:PutBucketObjectLockConfiguration"
    assert lock["Resource"] == bucket
    assert lock["Condition"] == {"ArnNotEquals": {"aws:PrincipalArn": [DEPLOY_ROLE_ARN]}}
    policy = denies["DenyPolicyChangesExceptDeploys"]
    assert policy["Action"] == ["s3:PutBucketPolicy", "s3:DeleteBucketPolicy"]
    assert policy["Resource"] == bucket
    assert policy["Condition"] == {"ArnNotEquals": {"aws:PrincipalArn": [DEPLOY_ROLE_ARN]}}


def test_the_deploy_role_is_cdk_bootstraps_execution_role(template_json: dict[str, Any]) -> None:
    # Named through the synthesizer (qualifier, account, region), not spelled out by hand.
    document = template_json["Resources"][
        next(
            lid
            for lid, r in Resolver(template_json).of_type("AWS::S3::BucketPolicy").items()
            if "DenyPolicyChangesExceptDeploys" in str(r)
        )
    ]["Properties"]["PolicyDocument"]
    (statement,) = [
        s for s in document["Statement"] if s.get("Sid") == "DenyPolicyChangesExceptDeploys"
    ]
    assert statement["Condition"]["ArnNotEquals"]["aws:PrincipalArn"] == [
        {
            "Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:role/"
            "cdk-hnb659fds-cfn-exec-role-${AWS::AccountId}-${AWS::Region}"
        }
    ]


def test_nightly_bucket_policy_denies(template_json: dict[str, Any]) -> None:
    denies = _denies(template_json, "wheelgate-nightly")
    assert denies["DenyObjectWritesExceptPromoter"]["Condition"] == {
        "ArnNotEquals": {"aws:PrincipalArn": [f"{ROLE}/promoter"]}
    }
    assert denies["DenyDeletes"]["Action"] == ["s3:DeleteObject", "s3:DeleteObjectVersion"]
    assert "Condition" not in denies["DenyDeletes"]
    pages = [f"{NIGHTLY}/*/index.html", f"{NIGHTLY}/*/index.json"]
    assert denies["DenyRetentionChanges"]["Action"] == [
        "s3:BypassGovernanceRetention",
        "s3:PutObjectLegalHold",
    ]
    assert denies["DenyRetentionChanges"]["Resource"] == f"{NIGHTLY}/*"
    assert "Condition" not in denies["DenyRetentionChanges"]
    # A file's retention is nobody's (no break-glass role here); a page's is the promoter's,
    # which a PutObject with lock headers needs.
    assert denies["DenyFileRetentionChanges"]["Action"] == "s3:PutObjectRetention"
    assert denies["DenyFileRetentionChanges"]["NotResource"] == pages
    assert "Condition" not in denies["DenyFileRetentionChanges"]
    page_lock = denies["DenyPageRetentionChangesExceptPromoter"]
    assert (page_lock["Action"], page_lock["Resource"]) == ("s3:PutObjectRetention", pages)
    assert page_lock["Condition"] == {"ArnNotEquals": {"aws:PrincipalArn": [f"{ROLE}/promoter"]}}
    # No file is written or re-locked with less than the bucket's 365 days (cdk.json); a copy
    # without lock headers has no such key and takes the default retention.
    short = denies["DenyShortFileLocks"]
    assert short["Action"] == ["s3:PutObject", "s3:PutObjectRetention"]
    assert short["NotResource"] == pages
    assert short["Condition"] == {
        "NumericLessThan": {"s3:object-lock-remaining-retention-days": "365"}
    }
    # Nor any object in another mode than the bucket's GOVERNANCE.
    modes = denies["DenyOtherLockModes"]
    assert modes["Action"] == ["s3:PutObject", "s3:PutObjectRetention"]
    assert modes["Resource"] == f"{NIGHTLY}/*"
    assert modes["Condition"] == {
        "Null": {"s3:object-lock-mode": "false"},
        "StringNotEquals": {"s3:object-lock-mode": "GOVERNANCE"},
    }
    # A changed nightly_retention is applied by CloudFormation's execution role.
    _assert_bucket_settings_are_the_deploy_roles(denies, NIGHTLY)
    # A released file is created once: the staging runs/ condition, on every key but the pages.
    write_once = denies["DenyFileWritesWithoutIfNoneMatch"]
    assert write_once["Action"] == "s3:PutObject"
    assert write_once["NotResource"] == [f"{NIGHTLY}/*/index.html", f"{NIGHTLY}/*/index.json"]
    assert write_once["Condition"] == {
        "Null": {"s3:if-none-match": "true"},
        "Bool": {"s3:ObjectCreationOperation": "true"},
    }


def test_break_glass_exception_and_imported_oidc_provider(tmp_path: Any) -> None:
    from tests.infra.synth import cdk_json_context, synthesize

    # Given a break-glass role and an existing OIDC provider in the context (one synth for both)
    break_glass = f"{ROLE}/break-glass"
    provider = f"arn:aws:iam::{ACCOUNT}:oidc-provider/token.actions.githubusercontent.com"
    config = {
        **cdk_json_context()["wheelgate"],
        "break_glass_role_arn": break_glass,
        "break_glass_role_id": "AROABREAKGLASS0000001",
        "block_all_on_failure": False,
        "oidc_provider_arn": provider,
    }
    # When the app is synthesized
    synthesis = synthesize(tmp_path, config)
    # Then only the break-glass role escapes the nightly delete and retention denies
    denies = _denies(synthesis.template, "wheelgate-nightly")
    for sid in ("DenyRetentionChanges", "DenyFileRetentionChanges", "DenyDeletes"):
        assert denies[sid]["Condition"] == {"ArnNotEquals": {"aws:PrincipalArn": [break_glass]}}
    assert denies["DenyPageRetentionChangesExceptPromoter"]["Condition"] == {
        "ArnNotEquals": {"aws:PrincipalArn": [f"{ROLE}/promoter", break_glass]}
    }
    # But not the short file lock: nobody shortens a released file's lock
    assert break_glass not in str(denies["DenyShortFileLocks"])
    assert denies["DenyLockConfigurationChangesExceptDeploys"]["Condition"] == {
        "ArnNotEquals": {"aws:PrincipalArn": [DEPLOY_ROLE_ARN, break_glass]}
    }
    # Never the bucket policy, though
    assert break_glass not in str(denies["DenyPolicyChangesExceptDeploys"])
    # And in staging it alone may write override requests, with allow-list grants for it
    staging = Resolver(synthesis.template).bucket_policy("wheelgate-staging")["Statement"]
    by_sid = {s["Sid"]: s for s in staging if "Sid" in s}
    for sid in ("DenyOverrideWritesExceptBreakGlass", "DenyImportWritesExceptBreakGlass"):
        assert by_sid[sid]["Condition"] == {"ArnNotEquals": {"aws:PrincipalArn": [break_glass]}}
    assert by_sid["DenyManifestWritesExceptReporterDepsAndBreakGlass"]["Condition"] == {
        "ArnNotEquals": {"aws:PrincipalArn": [f"{ROLE}/reporter", f"{ROLE}/deps", break_glass]}
    }
    assert break_glass not in str(by_sid["DenyObjectWritesExceptWheelGateRoles"])
    for sid in ("DenyRunWritesWithoutIfNoneMatch", "DenyWritesOutsideStagingPrefixes"):
        assert break_glass not in str(by_sid[sid])
    grants = {
        sid: (s["Principal"], s["Action"], s["Resource"])
        for sid, s in by_sid.items()
        if s["Effect"] == "Allow" and sid.startswith("AllowBreakGlass")
    }
    assert grants == {
        "AllowBreakGlassOverrides": (
            {"AWS": break_glass},
            "s3:PutObject",
            f"{STAGING}/manifests/override-*",
        ),
        "AllowBreakGlassImports": (
            {"AWS": break_glass},
            "s3:PutObject",
            f"{STAGING}/manifests/import-*",
        ),
        "AllowBreakGlassRecordReads": (
            {"AWS": break_glass},
            "s3:GetObject",
            f"{STAGING}/records/*",
        ),
        "AllowBreakGlassListing": ({"AWS": break_glass}, "s3:ListBucket", STAGING),
    }
    # And the promoter honours its override requests, and promotes passing sets on their own
    (function,) = [
        r
        for r in Resolver(synthesis.template).of_type("AWS::Lambda::Function").values()
        if "WHEELGATE_BREAK_GLASS_ID" in r["Properties"].get("Environment", {}).get("Variables", {})
    ]
    env = function["Properties"]["Environment"]["Variables"]
    assert env["WHEELGATE_BREAK_GLASS_ID"] == "AROABREAKGLASS0000001"
    assert env["WHEELGATE_BLOCK_ALL_ON_FAILURE"] == "false"
    # And the roles trust the existing provider instead of a new one
    resolver = Resolver(synthesis.template)
    assert resolver.of_type("AWS::IAM::OIDCProvider") == {}
    for role in ("build", "reporter", "dev", "deps"):
        trust = synthesis.template["Resources"][resolver.logical_id(role)]["Properties"]
        (statement,) = trust["AssumeRolePolicyDocument"]["Statement"]
        assert statement["Principal"] == {"Federated": provider}


def test_the_promoter_reads_the_import_sources_and_nothing_more(tmp_path: Any) -> None:
    from tests.infra.synth import cdk_json_context, synthesize

    # Given two import sources, a bucket's prefix and a whole bucket...
    config = {
        **cdk_json_context()["wheelgate"],
        "break_glass_role_arn": f"{ROLE}/break-glass",
        "break_glass_role_id": "AROABREAKGLASS0000001",
        "import_sources": ["old-release-bucket/v2/", "older-bucket"],
    }
    template = synthesize(tmp_path, config).template
    resolver = Resolver(template)
    documents = resolver.role_policies("promoter")
    statements = {s["Sid"]: s for doc in documents for s in doc["Statement"] if "Sid" in s}
    # Then the promoter may read the objects under each, and list each under its prefix...
    assert statements["ReadImportSources"]["Effect"] == "Allow"
    assert statements["ReadImportSources"]["Action"] == "s3:GetObject"
    assert statements["ReadImportSources"]["Resource"] == [
        "arn:aws:s3:::old-release-bucket/v2/*",
        "arn:aws:s3:::older-bucket/*",
    ]
    assert statements["ListImportSource0"] == {
        "Sid": "ListImportSource0",
        "Effect": "Allow",
        "Action": "s3:ListBucket",
        "Resource": "arn:aws:s3:::old-release-bucket",
        "Condition": {"StringLike": {"s3:prefix": ["v2/*"]}},
    }
    assert statements["ListImportSource1"] == {
        "Sid": "ListImportSource1",
        "Effect": "Allow",
        "Action": "s3:ListBucket",
        "Resource": "arn:aws:s3:::older-bucket",
    }
    # ...and nothing else outside its own buckets: no other statement names another bucket.
    own = ("wheelgate-staging", "wheelgate-nightly")
    elsewhere = [
        sid
        for sid, s in statements.items()
        if s["Effect"] == "Allow"
        and "s3:" in str(s["Action"])
        and not all(any(b in r for b in own) for r in _resources(s))
    ]
    assert sorted(elsewhere) == ["ListImportSource0", "ListImportSource1", "ReadImportSources"]
    # And the function is told the same allow-list, as CI is (the ImportSources output).
    (function,) = [
        r
        for r in resolver.of_type("AWS::Lambda::Function").values()
        if "WHEELGATE_IMPORT_SOURCES" in r["Properties"].get("Environment", {}).get("Variables", {})
    ]
    variables = function["Properties"]["Environment"]["Variables"]
    assert variables["WHEELGATE_IMPORT_SOURCES"] == '["old-release-bucket/v2/", "older-bucket"]'
    assert template["Outputs"]["ImportSources"]["Value"] == variables["WHEELGATE_IMPORT_SOURCES"]


def _resources(statement: dict[str, Any]) -> list[str]:
    found = statement["Resource"]
    return [str(r) for r in (found if isinstance(found, list) else [found])]


def test_without_import_sources_the_promoter_reads_no_other_bucket(
    template_json: dict[str, Any],
) -> None:
    documents = Resolver(template_json).role_policies("promoter")
    sids = {s.get("Sid") for doc in documents for s in doc["Statement"]}
    assert not {sid for sid in sids if sid and "ImportSource" in sid}
