"""CloudFront: OAC origins, staging's fallback to nightly, HTTPS only, router, caching, logs."""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

from aws_cdk.assertions import Match, Template

from stacks.cdn import INDEX_ROUTER_SOURCE
from tests.infra.resolve import Resolver
from wheelgate.core.layout import PAGES, STAGING


def _distributions(template_json: dict[str, Any]) -> dict[str, dict[str, Any]]:
    resolver = Resolver(template_json)
    return {
        resolver.physical_name(lid): r["Properties"]["DistributionConfig"]
        for lid, r in resolver.of_type("AWS::CloudFront::Distribution").items()
    }


def test_function_is_js2_with_the_router_source(template: Template) -> None:
    template.has_resource_properties(
        "AWS::CloudFront::Function",
        {
            "FunctionCode": INDEX_ROUTER_SOURCE.read_text(),
            "FunctionConfig": Match.object_like({"Runtime": "cloudfront-js-2.0"}),
            "AutoPublish": True,
        },
    )


def test_page_cache_policy_keys_on_accept_with_short_ttl(template: Template) -> None:
    template.has_resource_properties(
        "AWS::CloudFront::CachePolicy",
        {
            "CachePolicyConfig": Match.object_like(
                {
                    "DefaultTTL": 60,
                    "MaxTTL": 300,
                    "MinTTL": 0,
                    "ParametersInCacheKeyAndForwardedToOrigin": Match.object_like(
                        {
                            "HeadersConfig": {
                                "HeaderBehavior": "whitelist",
                                "Headers": ["Accept"],
                            },
                            "QueryStringsConfig": {"QueryStringBehavior": "none"},
                            "CookiesConfig": {"CookieBehavior": "none"},
                        }
                    ),
                }
            )
        },
    )


def test_file_cache_policy_is_long(template: Template) -> None:
    year = 365 * 24 * 3600
    template.has_resource_properties(
        "AWS::CloudFront::CachePolicy",
        {
            "CachePolicyConfig": Match.object_like(
                {
                    "DefaultTTL": year,
                    "MaxTTL": year,
                    "ParametersInCacheKeyAndForwardedToOrigin": Match.object_like(
                        {"HeadersConfig": {"HeaderBehavior": "none"}}
                    ),
                }
            )
        },
    )


def test_distributions_route_pages_through_the_function(template_json: dict[str, Any]) -> None:
    resolver = Resolver(template_json)
    (function_id,) = resolver.of_type("AWS::CloudFront::Function")
    policies = resolver.of_type("AWS::CloudFront::CachePolicy")
    by_ttl = {
        p["Properties"]["CachePolicyConfig"]["DefaultTTL"]: lid for lid, p in policies.items()
    }
    page_policy, file_policy = by_ttl[60], by_ttl[365 * 24 * 3600]
    distributions = _distributions(template_json)
    assert set(distributions) == {"ENIGHTLY", "ESTAGING"}
    for name, config in distributions.items():
        default = config["DefaultCacheBehavior"]
        assert default["ViewerProtocolPolicy"] == "https-only", name
        assert default["CachePolicyId"] == {"Ref": page_policy}, name
        assert default["FunctionAssociations"] == [
            {
                "EventType": "viewer-request",
                "FunctionARN": {"Fn::GetAtt": [function_id, "FunctionARN"]},
            }
        ], name
        files = {
            b["PathPattern"]: b for b in config["CacheBehaviors"] if b["PathPattern"] != "status/*"
        }
        assert set(files) == {"*.whl", "*.metadata", "*.tar.gz", "*.zip"}, name
        for behavior in files.values():
            assert behavior["ViewerProtocolPolicy"] == "https-only"
            assert behavior["CachePolicyId"] == {"Ref": file_policy}
            assert "FunctionAssociations" not in behavior
            # Files use the same origin (group) as pages.
            assert behavior["TargetOriginId"] == default["TargetOriginId"], name
        assert config["Logging"]["Prefix"] == f"cloudfront/{name[1:].lower()}/"
        for origin in config["Origins"]:
            assert "OriginAccessControlId" in origin
            assert origin["S3OriginConfig"] == {"OriginAccessIdentity": ""}


def _origin_buckets(config: dict[str, Any], resolver: Resolver) -> dict[str, str]:
    """Origin id -> friendly bucket name of each origin of a distribution."""
    return {
        o["Id"]: resolver.physical_name(o["DomainName"]["Fn::GetAtt"][0]) for o in config["Origins"]
    }


def test_staging_fails_over_to_nightly_on_403_and_404(template_json: dict[str, Any]) -> None:
    # Given the staging distribution: a project only nightly has must resolve through it.
    resolver = Resolver(template_json)
    staging = _distributions(template_json)["ESTAGING"]
    buckets = _origin_buckets(staging, resolver)
    # Then its one origin group tries the staging bucket first and nightly second
    (group,) = staging["OriginGroups"]["Items"]
    assert staging["OriginGroups"]["Quantity"] == 1
    members = [m["OriginId"] for m in group["Members"]["Items"]]
    assert [buckets[m] for m in members] == ["wheelgate-staging", "wheelgate-nightly"]
    assert group["Members"]["Quantity"] == 2
    # And fails over on "missing" as S3 spells it through OAC (403 without ListBucket, or 404)
    assert group["FailoverCriteria"] == {"StatusCodes": {"Items": [403, 404], "Quantity": 2}}
    # And every behavior, pages and files, targets the group
    assert staging["DefaultCacheBehavior"]["TargetOriginId"] == group["Id"]
    assert {b["TargetOriginId"] for b in staging["CacheBehaviors"]} == {group["Id"]}
    # And both origins sign their requests with an Origin Access Control
    oacs = resolver.of_type("AWS::CloudFront::OriginAccessControl")
    for origin in staging["Origins"]:
        oac_id = origin["OriginAccessControlId"]["Fn::GetAtt"][0]
        assert oac_id in oacs, origin["Id"]


def test_nightly_distribution_has_no_fallback(template_json: dict[str, Any]) -> None:
    resolver = Resolver(template_json)
    nightly = _distributions(template_json)["ENIGHTLY"]
    assert "OriginGroups" not in nightly
    buckets = _origin_buckets(nightly, resolver)
    assert buckets[nightly["DefaultCacheBehavior"]["TargetOriginId"]] == "wheelgate-nightly"


def test_nightly_serves_the_status_site_from_staging(template_json: dict[str, Any]) -> None:
    # The status site records rejections; it lives in staging so they never write nightly.
    resolver = Resolver(template_json)
    nightly = _distributions(template_json)["ENIGHTLY"]
    buckets = _origin_buckets(nightly, resolver)
    [status] = [b for b in nightly["CacheBehaviors"] if b["PathPattern"] == "status/*"]
    assert buckets[status["TargetOriginId"]] == "wheelgate-staging"
    assert status["ViewerProtocolPolicy"] == "https-only"
    assert status["CachePolicyId"] == nightly["DefaultCacheBehavior"]["CachePolicyId"]
    assert status["FunctionAssociations"] == nightly["DefaultCacheBehavior"]["FunctionAssociations"]
    # Every other path of the nightly domain is served from the nightly bucket.
    others = {b["TargetOriginId"] for b in nightly["CacheBehaviors"] if b is not status}
    assert {buckets[o] for o in others} == {"wheelgate-nightly"}


def test_origins_use_origin_access_control(template_json: dict[str, Any]) -> None:
    oacs = Resolver(template_json).of_type("AWS::CloudFront::OriginAccessControl")
    assert oacs
    for oac in oacs.values():
        config = oac["Properties"]["OriginAccessControlConfig"]
        assert config["OriginAccessControlOriginType"] == "s3"
        assert config["SigningBehavior"] == "always"
        assert config["SigningProtocol"] == "sigv4"


def test_cloudfront_reads_each_bucket_only_for_the_distributions_serving_it(
    template_json: dict[str, Any],
) -> None:
    # Nightly is read by its own distribution and by staging's fallback origin; staging by its
    # own distribution and by nightly's status behavior.
    resolver = Resolver(template_json)
    for bucket, readers, listers in (
        ("wheelgate-nightly", {"ENIGHTLY", "ESTAGING"}, {"ENIGHTLY", "ESTAGING"}),
        # The nightly distribution reads staging for /status/* only (its one behavior there).
        ("wheelgate-staging", {"ESTAGING", "ENIGHTLY"}, {"ESTAGING"}),
    ):
        statements = resolver.bucket_policy(bucket)["Statement"]
        allows = [
            s
            for s in statements
            if s["Effect"] == "Allow" and s["Principal"] == {"Service": "cloudfront.amazonaws.com"}
        ]
        granted: dict[str, set[str]] = {}
        for statement in allows:
            source = statement["Condition"]["StringEquals"]["AWS:SourceArn"]
            assert source.startswith("arn:aws:cloudfront::111122223333:distribution/"), source
            granted.setdefault(statement["Action"], set()).add(source.rsplit("/", 1)[1])
        # GetObject to read, ListBucket so that a key missing everywhere is a 404, not a 403
        assert granted == {"s3:GetObject": readers, "s3:ListBucket": listers}, bucket


def test_staging_distribution_cannot_read_manifests_records_or_history_entries(
    template_json: dict[str, Any],
) -> None:
    statements = Resolver(template_json).bucket_policy("wheelgate-staging")["Statement"]
    (deny,) = [s for s in statements if s.get("Sid") == "DenyCloudFrontBookkeeping"]
    assert deny["Effect"] == "Deny"
    assert deny["Resource"] == [
        "arn:aws:s3:::wheelgate-staging/manifests/*",
        "arn:aws:s3:::wheelgate-staging/records/*",
        "arn:aws:s3:::wheelgate-staging/history/_entries/*",
    ]


def _staging_distribution_reads(template_json: dict[str, Any], key: str) -> bool:
    """Whether the staging bucket's policy lets the staging distribution (CloudFront, through
    its Origin Access Control) GET ``key``, as principalmapper evaluates it."""
    from tests.infra.iam_matrix import ResourcePolicyEvalResult, resource_policy_authorization

    policy = Resolver(template_json).bucket_policy("wheelgate-staging")
    sources = {
        s["Condition"]["StringEquals"]["AWS:SourceArn"]
        for s in policy["Statement"]
        if s["Effect"] == "Allow" and s["Action"] == "s3:GetObject" and "Condition" in s
    }
    (source,) = [arn for arn in sources if arn.endswith("/ESTAGING")]
    decision = resource_policy_authorization(
        "cloudfront.amazonaws.com",
        "111122223333",
        policy,
        "s3:GetObject",
        f"arn:aws:s3:::wheelgate-staging/{key}",
        {"aws:SourceArn": source, "aws:SecureTransport": "true"},
    )
    return bool(decision == ResourcePolicyEvalResult.SERVICE_MATCH)


def test_the_staging_distribution_serves_the_run_history_beside_the_runs(
    template_json: dict[str, Any],
) -> None:
    index, run = "v2/gfx94X-dcgpu", "12345-1"
    # Given the history's page, head and a month's shard, and a run's page beside them
    served = (
        STAGING.history_page(index),
        STAGING.history_head(index),
        STAGING.history_month(index, "2026-03"),
        STAGING.run_pages_prefix(run) + PAGES.root_page(index),
    )
    # Then the staging distribution reads each, and not a history entry nor a manifest
    assert [key for key in served if not _staging_distribution_reads(template_json, key)] == []
    assert not _staging_distribution_reads(template_json, STAGING.history_entry(index, run, "1-ab"))
    assert not _staging_distribution_reads(template_json, STAGING.manifest(run))
    # And they are pages: no file behavior (long TTL, no router) takes one; the default
    # behavior does, which maps history/<index>/ to its index.html and keeps them a minute
    staging = _distributions(template_json)["ESTAGING"]
    patterns = [b["PathPattern"] for b in staging["CacheBehaviors"]]
    assert [(k, p) for k in served for p in patterns if fnmatch.fnmatchcase(k, p)] == []
    assert "FunctionAssociations" in staging["DefaultCacheBehavior"]


def test_custom_domain_gets_its_certificate_and_modern_tls(tmp_path: Path) -> None:
    from tests.infra.synth import cdk_json_context, synthesize

    certificate = "arn:aws:acm:us-east-1:111122223333:certificate/0000"
    config = {
        **cdk_json_context()["wheelgate"],
        "custom_domain": {
            "nightly": {"domain_name": "nightly.example.org", "certificate_arn": certificate}
        },
    }
    # Synthesis also runs the nag gate: CFR4 is only acknowledged without a custom domain.
    synthesis = synthesize(tmp_path, config)
    distributions = _distributions(synthesis.template)
    nightly = distributions["ENIGHTLY"]
    assert nightly["Aliases"] == ["nightly.example.org"]
    assert nightly["ViewerCertificate"] == {
        "AcmCertificateArn": certificate,
        "MinimumProtocolVersion": "TLSv1.2_2021",
        "SslSupportMethod": "sni-only",
    }
    assert "Aliases" not in distributions["ESTAGING"]
    variables = [
        f["Properties"].get("Environment", {}).get("Variables", {})
        for f in Resolver(synthesis.template).of_type("AWS::Lambda::Function").values()
    ]
    assert {"WHEELGATE_NIGHTLY_BASE_URL": "https://nightly.example.org/"}.items() <= {
        k: v for env in variables for k, v in env.items()
    }.items()


def test_no_web_acl_by_default(template_json: dict[str, Any]) -> None:
    # waf_rate_limit and waf_web_acl_arn are null in cdk.json: CFR2 is acknowledged instead.
    assert all("WebACLId" not in d for d in _distributions(template_json).values())
    assert Resolver(template_json).of_type("AWS::WAFv2::WebACL") == {}


def test_waf_rate_limit_puts_both_distributions_behind_a_rate_based_web_acl(
    tmp_path: Path,
) -> None:
    from tests.infra.synth import cdk_json_context, synthesize
    from tests.infra.test_nag import _acknowledgements

    # Given a rate limit in the context
    config = {**cdk_json_context()["wheelgate"], "waf_rate_limit": 2000}
    # When the app is synthesized (the nag gate runs: CFR2 must be satisfied, not acknowledged)
    synthesis = synthesize(tmp_path, config)
    # Then one CloudFront-scope web ACL blocks an IP over the limit and allows the rest
    (acl_id, acl), *others = Resolver(synthesis.template).of_type("AWS::WAFv2::WebACL").items()
    assert others == []
    properties = acl["Properties"]
    assert properties["Scope"] == "CLOUDFRONT"
    assert properties["DefaultAction"] == {"Allow": {}}
    (rule,) = properties["Rules"]
    assert rule["Action"] == {"Block": {}}
    assert rule["Statement"] == {"RateBasedStatement": {"Limit": 2000, "AggregateKeyType": "IP"}}
    # And both distributions use it
    for distribution in _distributions(synthesis.template).values():
        assert distribution["WebACLId"] == {"Fn::GetAtt": [acl_id, "Arn"]}
    # And the template refuses any region but us-east-1, where CloudFront web ACLs live
    assertions = [a for r in synthesis.template["Rules"].values() for a in r["Assertions"]]
    region = {"Fn::Equals": [{"Ref": "AWS::Region"}, "us-east-1"]}
    assert [a["Assert"] for a in assertions if a["Assert"] == region] == [region]
    # And CFR2 is no longer acknowledged anywhere
    assert not any(r == "AwsSolutions-CFR2" for _, r, _ in _acknowledgements(synthesis.outdir))


def test_an_existing_web_acl_is_used_as_given(tmp_path: Path) -> None:
    from tests.infra.synth import cdk_json_context, synthesize

    acl = "arn:aws:wafv2:us-east-1:111122223333:global/webacl/wheelgate/0000"
    config = {**cdk_json_context()["wheelgate"], "waf_web_acl_arn": acl}
    synthesis = synthesize(tmp_path, config)
    assert {d["WebACLId"] for d in _distributions(synthesis.template).values()} == {acl}
    assert Resolver(synthesis.template).of_type("AWS::WAFv2::WebACL") == {}
