"""Buckets: Object Lock only on nightly, lifecycle, encryption, TLS, logging, retention."""

from __future__ import annotations

from typing import Any

from aws_cdk.assertions import Match, Template

from tests.infra.resolve import Resolver
from wheelgate.core.env_names import (
    ENV_LISTING_RETENTION,
    ENV_NIGHTLY_PAGE_RETENTION_DAYS,
    ENV_NIGHTLY_RETENTION_MODE,
)
from wheelgate.core.layout import RUN_PAGE_TAG_KEY, RUN_PAGE_TAG_VALUE, RUNS_PREFIX, STAGING
from wheelgate.core.settings import listing_retention_from_env


def _bucket(template_json: dict[str, Any], name: str) -> dict[str, Any]:
    resolver = Resolver(template_json)
    return template_json["Resources"][resolver.logical_id(name)]  # type: ignore[no-any-return]


def test_object_lock_only_on_nightly(template_json: dict[str, Any]) -> None:
    buckets = Resolver(template_json).of_type("AWS::S3::Bucket")
    locked = {lid for lid, r in buckets.items() if r["Properties"].get("ObjectLockEnabled") is True}
    assert locked == {Resolver(template_json).logical_id("wheelgate-nightly")}
    nightly = _bucket(template_json, "wheelgate-nightly")["Properties"]
    assert nightly["ObjectLockConfiguration"] == {
        "ObjectLockEnabled": "Enabled",
        "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 365}},
    }
    assert nightly["VersioningConfiguration"] == {"Status": "Enabled"}


def test_nightly_is_retained_on_stack_deletion(template_json: dict[str, Any]) -> None:
    nightly = _bucket(template_json, "wheelgate-nightly")
    assert nightly["DeletionPolicy"] == "Retain"
    assert nightly["UpdateReplacePolicy"] == "Retain"


def test_nightly_expires_noncurrent_index_versions(template_json: dict[str, Any]) -> None:
    rules = _bucket(template_json, "wheelgate-nightly")["Properties"]["LifecycleConfiguration"]
    (rule,) = [r for r in rules["Rules"] if r["Id"] == "ExpireNoncurrentIndexVersions"]
    # The whole bucket: only pages ever have noncurrent versions (files are write-once).
    assert rule["NoncurrentVersionExpiration"] == {"NoncurrentDays": 30}
    assert rule["Status"] == "Enabled"
    assert "Prefix" not in rule
    assert "TagFilters" not in rule
    assert all("ExpirationInDays" not in r for r in rules["Rules"])


def test_promoter_locks_nightly_pages_for_the_configured_days(
    template_json: dict[str, Any],
) -> None:
    # Given cdk.json: 365-day GOVERNANCE files, pages locked 7 days, noncurrent after 30.
    # Then the promoter is told the bucket's mode and the page days.
    resolver = Resolver(template_json)
    functions = resolver.of_type("AWS::Lambda::Function").values()
    (env,) = [
        f["Properties"]["Environment"]["Variables"]
        for f in functions
        if ENV_NIGHTLY_PAGE_RETENTION_DAYS
        in f["Properties"].get("Environment", {}).get("Variables", {})
    ]
    assert env[ENV_NIGHTLY_PAGE_RETENTION_DAYS] == "7"
    assert env[ENV_NIGHTLY_RETENTION_MODE] == "GOVERNANCE"


def test_staging_expires_runs_and_keeps_manifests_and_records(
    template_json: dict[str, Any],
) -> None:
    props = _bucket(template_json, "wheelgate-staging")["Properties"]
    expiring = [r for r in props["LifecycleConfiguration"]["Rules"] if "ExpirationInDays" in r]
    assert expiring == [
        {
            "Id": "ExpireStagedRuns",
            "Prefix": RUNS_PREFIX,
            "ExpirationInDays": 14,
            "Status": "Enabled",
        },
        # A run's pages, tagged by `wheelgate stage`, go 7 days after their last write: before
        # any file they list (stage stops writing them 14 - 7 - 1 days after the run began).
        {
            "Id": "ExpireRunPages",
            "Prefix": RUNS_PREFIX,
            "TagFilters": [{"Key": RUN_PAGE_TAG_KEY, "Value": RUN_PAGE_TAG_VALUE}],
            "ExpirationInDays": 7,
            "Status": "Enabled",
        },
    ]
    assert "ObjectLockEnabled" not in props


#: What a lifecycle rule can remove an object with (AbortIncompleteMultipartUpload removes none).
_EXPIRING = ("ExpirationInDays", "ExpirationDate", "NoncurrentVersionExpiration", "Transitions")


def _expiring_rules_for(rules: list[dict[str, Any]], key: str) -> list[str]:
    """The ids of ``rules`` that expire or move objects and whose prefix ``key`` is under
    (whatever their tag filters: the test does not count on an object's tags)."""
    found = []
    for rule in rules:
        prefix = rule.get("Prefix", rule.get("Filter", {}).get("Prefix", ""))
        if key.startswith(prefix) and any(field in rule for field in _EXPIRING):
            found.append(rule["Id"])
    return found


def test_no_lifecycle_rule_expires_the_run_history(template_json: dict[str, Any]) -> None:
    # Given every key the run history holds: entries, a month's shard, the head and the page
    index, run = "v2/gfx94X-dcgpu", "12345-1"
    history = (
        STAGING.history_entry(index, run, "1-0123abcdef"),
        STAGING.history_month(index, "2026-03"),
        STAGING.history_head(index),
        STAGING.history_page(index),
    )
    rules = _bucket(template_json, "wheelgate-staging")["Properties"]["LifecycleConfiguration"]
    # Then no staging rule expires one: a run stays findable after its files are gone ...
    for key in history:
        assert _expiring_rules_for(rules["Rules"], key) == [], key
    # ... while the same check sees the rules that expire a run's files and pages
    assert _expiring_rules_for(
        rules["Rules"], STAGING.artifact(run, index, "a-1-py3-none-any.whl")
    ) == [
        "ExpireStagedRuns",
        "ExpireRunPages",
    ]


def test_every_bucket_is_private_encrypted_and_logged(template_json: dict[str, Any]) -> None:
    for name in ("wheelgate-staging", "wheelgate-nightly", "wheelgate-cache", "wheelgate-logs"):
        props = _bucket(template_json, name)["Properties"]
        assert props["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }, name
        sse = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
        assert sse == [{"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}], name
    log_id = Resolver(template_json).logical_id("wheelgate-logs")
    for name, prefix in (
        ("wheelgate-staging", "s3/staging/"),
        ("wheelgate-nightly", "s3/nightly/"),
        ("wheelgate-cache", "s3/cache/"),
    ):
        logging = _bucket(template_json, name)["Properties"]["LoggingConfiguration"]
        assert logging == {"DestinationBucketName": {"Ref": log_id}, "LogFilePrefix": prefix}


def test_every_bucket_policy_denies_plain_http(template: Template) -> None:
    buckets = template.find_resources("AWS::S3::Bucket")
    policies = template.find_resources("AWS::S3::BucketPolicy")
    assert len(policies) == len(buckets)
    for logical_id in buckets:
        template.has_resource_properties(
            "AWS::S3::BucketPolicy",
            {
                "Bucket": {"Ref": logical_id},
                "PolicyDocument": {
                    "Statement": Match.array_with(
                        [
                            Match.object_like(
                                {
                                    "Effect": "Deny",
                                    "Action": "s3:*",
                                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                                }
                            )
                        ]
                    )
                },
            },
        )


def test_log_bucket_takes_server_access_logs_by_policy_not_acl(
    template_json: dict[str, Any],
) -> None:
    resolver = Resolver(template_json)
    props = _bucket(template_json, "wheelgate-logs")["Properties"]
    assert "AccessControl" not in props
    statements = resolver.bucket_policy("wheelgate-logs")["Statement"]
    deliveries = {
        s["Condition"]["ArnLike"]["aws:SourceArn"]: s["Resource"]
        for s in statements
        if s["Principal"] == {"Service": "logging.s3.amazonaws.com"}
    }
    assert deliveries == {
        "arn:aws:s3:::wheelgate-staging": "arn:aws:s3:::wheelgate-logs/s3/staging/*",
        "arn:aws:s3:::wheelgate-nightly": "arn:aws:s3:::wheelgate-logs/s3/nightly/*",
        "arn:aws:s3:::wheelgate-cache": "arn:aws:s3:::wheelgate-logs/s3/cache/*",
    }


def test_cache_is_versioned_unlocked_and_retained(template_json: dict[str, Any]) -> None:
    cache = _bucket(template_json, "wheelgate-cache")
    assert cache["Properties"]["VersioningConfiguration"] == {"Status": "Enabled"}
    assert "ObjectLockEnabled" not in cache["Properties"]
    assert cache["DeletionPolicy"] == "Retain"


def test_named_cache_bucket_is_used_not_created(tmp_path: Any) -> None:
    from tests.infra.synth import cdk_json_context, synthesize

    # Given an existing cache bucket named in the context
    config = {**cdk_json_context()["wheelgate"], "cache_bucket_name": "therock-cache"}
    # When the app is synthesized
    template = synthesize(tmp_path, config).template
    # Then no cache bucket is created and the deps role writes the named one
    resolver = Resolver(template)
    assert "wheelgate-cache" not in resolver.names.values()
    deps = resolver.role_policies("deps")
    writes = [s for d in deps for s in d["Statement"] if s.get("Sid") == "WriteCache"]
    assert [s["Resource"] for s in writes] == ["arn:aws:s3:::therock-cache/third-party/*"]
    assert template["Outputs"]["CacheBucketName"]["Value"] == "therock-cache"


def test_staging_versioning_is_off_unless_configured(
    template_json: dict[str, Any], tmp_path: Any
) -> None:
    from tests.infra.synth import cdk_json_context, synthesize

    staging = _bucket(template_json, "wheelgate-staging")["Properties"]
    assert "VersioningConfiguration" not in staging
    config = {**cdk_json_context()["wheelgate"], "staging_versioned": True}
    template = synthesize(tmp_path, config).template
    versioned = _bucket(template, "wheelgate-staging")["Properties"]
    assert versioned["VersioningConfiguration"] == {"Status": "Enabled"}
    assert "ObjectLockEnabled" not in versioned


def test_ci_and_operators_get_the_window_and_the_page_lock(template_json: dict[str, Any]) -> None:
    # 14-day files and 7-day run pages leave `wheelgate stage` 14 - 7 - 1 days per run.
    outputs = {name: o["Value"] for name, o in template_json["Outputs"].items()}
    assert outputs["RunStageWindowDays"] == "6"
    assert outputs["NightlyRetentionMode"] == "GOVERNANCE"
    assert outputs["NightlyPageRetentionDays"] == "7"


def test_operators_get_the_listing_retention_the_promoter_applies(
    template_json: dict[str, Any],
) -> None:
    # `wheelgate index rebuild` reads the same variable as the promoter: the output is its value
    outputs = {name: o["Value"] for name, o in template_json["Outputs"].items()}
    [function] = [
        r["Properties"]
        for r in template_json["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
        and r["Properties"].get("Handler") == "wheelgate.lambda_function.handler.lambda_handler"
    ]
    env = function["Environment"]["Variables"]
    assert outputs["ListingRetention"] == env[ENV_LISTING_RETENTION]
    rule = listing_retention_from_env({ENV_LISTING_RETENTION: outputs["ListingRetention"]})
    assert rule.rule_for("v2/gfx94X-dcgpu").keep_versions == 30
