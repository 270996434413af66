"""CloudFront: OAC origins, HTTPS only, the index router, cache policies and logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk.assertions import Match, Template

from stacks.cdn import INDEX_ROUTER_SOURCE
from tests.infra.resolve import Resolver


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
        files = {b["PathPattern"]: b for b in config["CacheBehaviors"]}
        assert set(files) == {"*.whl", "*.metadata", "*.tar.gz", "*.zip"}, name
        for behavior in files.values():
            assert behavior["ViewerProtocolPolicy"] == "https-only"
            assert behavior["CachePolicyId"] == {"Ref": file_policy}
            assert "FunctionAssociations" not in behavior
        assert config["Logging"]["Prefix"] == f"cloudfront/{name[1:].lower()}/"
        (origin,) = config["Origins"]
        assert "OriginAccessControlId" in origin
        assert origin["S3OriginConfig"] == {"OriginAccessIdentity": ""}


def test_origins_use_origin_access_control(template: Template) -> None:
    template.resource_properties_count_is(
        "AWS::CloudFront::OriginAccessControl",
        {
            "OriginAccessControlConfig": Match.object_like(
                {"OriginAccessControlOriginType": "s3", "SigningBehavior": "always"}
            )
        },
        2,
    )


def test_cloudfront_reads_each_bucket_only_for_its_distribution(
    template_json: dict[str, Any],
) -> None:
    resolver = Resolver(template_json)
    for bucket, distribution in (
        ("wheelgate-nightly", "ENIGHTLY"),
        ("wheelgate-staging", "ESTAGING"),
    ):
        statements = resolver.bucket_policy(bucket)["Statement"]
        reads = [
            s
            for s in statements
            if s["Effect"] == "Allow" and s["Principal"] == {"Service": "cloudfront.amazonaws.com"}
        ]
        assert reads, bucket
        for statement in reads:
            assert statement["Condition"]["StringEquals"]["AWS:SourceArn"].endswith(
                f":distribution/{distribution}"
            )


def test_staging_distribution_cannot_read_manifests_or_records(
    template_json: dict[str, Any],
) -> None:
    statements = Resolver(template_json).bucket_policy("wheelgate-staging")["Statement"]
    (deny,) = [s for s in statements if s.get("Sid") == "DenyCloudFrontBookkeeping"]
    assert deny["Effect"] == "Deny"
    assert deny["Resource"] == [
        "arn:aws:s3:::wheelgate-staging/manifests/*",
        "arn:aws:s3:::wheelgate-staging/records/*",
    ]


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
