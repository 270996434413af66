"""CloudFront in front of the nightly and staging indexes."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Duration
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from wheelgate.core.layout import MANIFESTS_PREFIX, METADATA_SUFFIX, RECORDS_PREFIX, STATUS_PREFIX

from .access_table import HISTORY_ENTRIES
from .nag import acknowledge
from .setting_types import CustomDomain

INDEX_ROUTER_SOURCE = Path(__file__).parent / "functions" / "index_router.js"

# Index pages change on every promotion; a minute of staleness is what pip users will see at
# most (the promoter also invalidates them).
PAGE_TTL = Duration.seconds(60)
PAGE_MAX_TTL = Duration.minutes(5)
# Wheels and their metadata never change once written (Object Lock on nightly, unique run
# prefixes on staging), so edges may keep them for as long as CloudFront allows.
FILE_TTL = Duration.days(365)
FILE_PATTERNS = ("*.whl", f"*{METADATA_SUFFIX}", "*.tar.gz", "*.zip")


class IndexCdn(Construct):
    """Two distributions (nightly, staging) with S3 origins behind Origin Access Control.

    Directory URLs go through the ``index_router.js`` CloudFront Function and the short-TTL page
    cache policy, which has ``Accept`` in its cache key (PEP 691 content negotiation); files
    use the long-TTL policy. HTTPS only; standard logs go to ``log_bucket``. The staging
    distribution does not serve ``manifests/``, ``records/`` or the run history's entries
    (``history/_entries/``); it serves each directory's run history (``history/<index>/``:
    its page, head and month shards, rewritten by every decision) as it serves a run's pages,
    through the router and the short-TTL policy.

    The staging distribution's origin is an origin group: the staging bucket first, the nightly
    bucket when staging answers 403 or 404. A project that was never staged (a dependency only
    nightly has) therefore still resolves through the staging index, and so do the files its
    nightly page links relatively.

    With ``web_acl_arn`` (a CloudFront-scope AWS WAF web ACL) both distributions use it.

    Attributes:
        nightly / staging: the distributions.
        nightly_base_url / staging_base_url: ``https://<domain>/`` of each index (the custom
            domain when one is configured, else the distribution's own domain).
        index_router: the CloudFront Function.
        page_cache_policy / file_cache_policy: the cache policies.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        nightly_bucket: s3.IBucket,
        staging_bucket: s3.IBucket,
        log_bucket: s3.IBucket,
        nightly_domain: CustomDomain | None,
        staging_domain: CustomDomain | None,
        web_acl_arn: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self._web_acl_arn = web_acl_arn
        self.index_router = cloudfront.Function(
            self,
            "IndexRouter",
            code=cloudfront.FunctionCode.from_file(file_path=str(INDEX_ROUTER_SOURCE)),
            runtime=cloudfront.FunctionRuntime.JS_2_0,
            comment="Maps index directories to index.html or index.json (PEP 503/691)",
        )
        self.page_cache_policy = self._cache_policy(
            "PageCachePolicy",
            "WheelGate index pages: short TTL, Accept in the key",
            default_ttl=PAGE_TTL,
            min_ttl=Duration.seconds(0),
            max_ttl=PAGE_MAX_TTL,
            headers=cloudfront.CacheHeaderBehavior.allow_list("Accept"),
        )
        self.file_cache_policy = self._cache_policy(
            "FileCachePolicy",
            "WheelGate immutable files: long TTL",
            default_ttl=FILE_TTL,
            min_ttl=Duration.days(1),
            max_ttl=FILE_TTL,
            headers=cloudfront.CacheHeaderBehavior.none(),
        )
        self.nightly = self._distribution(
            "Nightly",
            nightly_bucket,
            log_bucket,
            nightly_domain,
            "WheelGate nightly index",
            # The status site lives in staging so that a rejected run never writes nightly.
            status_bucket=staging_bucket,
        )
        self.staging = self._distribution(
            "Staging",
            staging_bucket,
            log_bucket,
            staging_domain,
            "WheelGate staging index",
            fallback_bucket=nightly_bucket,
        )
        staging_bucket.add_to_resource_policy(
            iam.PolicyStatement(
                # Manifests and promotion records are CI bookkeeping, not part of the index;
                # so are history entries, a build job's word until the promoter checks it.
                sid="DenyCloudFrontBookkeeping",
                effect=iam.Effect.DENY,
                principals=[iam.ServicePrincipal("cloudfront.amazonaws.com")],
                actions=["s3:GetObject"],
                resources=[
                    staging_bucket.arn_for_objects(f"{MANIFESTS_PREFIX}*"),
                    staging_bucket.arn_for_objects(f"{RECORDS_PREFIX}*"),
                    staging_bucket.arn_for_objects(str(HISTORY_ENTRIES.pattern)),
                ],
            )
        )
        nightly_host = (
            nightly_domain.domain_name if nightly_domain else self.nightly.distribution_domain_name
        )
        self.nightly_base_url = f"https://{nightly_host}/"
        staging_host = (
            staging_domain.domain_name if staging_domain else self.staging.distribution_domain_name
        )
        self.staging_base_url = f"https://{staging_host}/"

    def _cache_policy(
        self,
        construct_id: str,
        comment: str,
        *,
        default_ttl: Duration,
        min_ttl: Duration,
        max_ttl: Duration,
        headers: cloudfront.CacheHeaderBehavior,
    ) -> cloudfront.CachePolicy:
        # Query strings and cookies never select a different object in a static index.
        return cloudfront.CachePolicy(
            self,
            construct_id,
            comment=comment,
            default_ttl=default_ttl,
            min_ttl=min_ttl,
            max_ttl=max_ttl,
            header_behavior=headers,
            query_string_behavior=cloudfront.CacheQueryStringBehavior.none(),
            cookie_behavior=cloudfront.CacheCookieBehavior.none(),
            enable_accept_encoding_gzip=True,
            enable_accept_encoding_brotli=True,
        )

    def _status_behavior(self, bucket: s3.IBucket | None) -> dict[str, cloudfront.BehaviorOptions]:
        """``/status/*`` from ``bucket`` (short TTL, directory URLs through the router)."""
        if bucket is None:
            return {}
        return {
            f"{STATUS_PREFIX}*": self._page_behavior(
                origins.S3BucketOrigin.with_origin_access_control(bucket)
            )
        }

    def _page_behavior(self, origin: cloudfront.IOrigin) -> cloudfront.BehaviorOptions:
        """Directory URLs: through the router function, short TTL, ``Accept`` in the key."""
        return cloudfront.BehaviorOptions(
            origin=origin,
            viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
            allowed_methods=cloudfront.AllowedMethods.ALLOW_GET_HEAD,
            cache_policy=self.page_cache_policy,
            response_headers_policy=cloudfront.ResponseHeadersPolicy.SECURITY_HEADERS,
            compress=True,
            function_associations=[
                cloudfront.FunctionAssociation(
                    function=self.index_router,
                    event_type=cloudfront.FunctionEventType.VIEWER_REQUEST,
                )
            ],
        )

    def _distribution(
        self,
        name: str,
        bucket: s3.IBucket,
        log_bucket: s3.IBucket,
        domain: CustomDomain | None,
        comment: str,
        fallback_bucket: s3.IBucket | None = None,
        status_bucket: s3.IBucket | None = None,
    ) -> cloudfront.Distribution:
        origin: cloudfront.IOrigin = origins.S3BucketOrigin.with_origin_access_control(bucket)
        if fallback_bucket is not None:
            # Every behavior uses the group, so files a nightly page links relatively resolve too.
            origin = origins.OriginGroup(
                primary_origin=origin,
                fallback_origin=origins.S3BucketOrigin.with_origin_access_control(fallback_bucket),
                # Through OAC, S3 answers 403 for a missing key unless ListBucket is granted;
                # both mean "not in this bucket".
                fallback_status_codes=[403, 404],
            )
        files = cloudfront.BehaviorOptions(
            origin=origin,
            viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
            allowed_methods=cloudfront.AllowedMethods.ALLOW_GET_HEAD,
            cache_policy=self.file_cache_policy,
            response_headers_policy=cloudfront.ResponseHeadersPolicy.SECURITY_HEADERS,
            compress=True,
        )
        distribution = cloudfront.Distribution(
            self,
            name,
            comment=comment,
            default_behavior=self._page_behavior(origin),
            additional_behaviors={
                **dict.fromkeys(FILE_PATTERNS, files),
                **self._status_behavior(status_bucket),
            },
            enable_logging=True,
            log_bucket=log_bucket,
            log_file_prefix=f"cloudfront/{name.lower()}/",
            http_version=cloudfront.HttpVersion.HTTP2_AND_3,
            domain_names=[domain.domain_name] if domain else None,
            certificate=(
                acm.Certificate.from_certificate_arn(
                    self, f"{name}Certificate", domain.certificate_arn
                )
                if domain
                else None
            ),
            minimum_protocol_version=(
                cloudfront.SecurityPolicyProtocol.TLS_V1_2_2021 if domain else None
            ),
            web_acl_id=self._web_acl_arn,
        )
        for listed in (bucket, fallback_bucket):
            if listed is None:
                continue
            listed.add_to_resource_policy(
                iam.PolicyStatement(
                    # Lets S3 answer 404 (not 403) for a missing page, which pip reports clearly.
                    sid=f"AllowCloudFront{name}List",
                    principals=[iam.ServicePrincipal("cloudfront.amazonaws.com")],
                    actions=["s3:ListBucket"],
                    resources=[listed.bucket_arn],
                    conditions={"StringEquals": {"AWS:SourceArn": distribution.distribution_arn}},
                )
            )
        if domain is None:
            acknowledge(
                distribution,
                "AwsSolutions-CFR4",
                "No custom domain is configured (custom_domain in cdk.json), so the default "
                "*.cloudfront.net certificate is the only one available.",
            )
        acknowledge(
            distribution,
            "AwsSolutions-CFR1",
            "A public package index for users worldwide; no geographic restriction.",
        )
        if self._web_acl_arn is None:
            acknowledge(
                distribution,
                "AwsSolutions-CFR2",
                "Static, read-only objects behind GET/HEAD only; no application to protect with "
                "WAF rules. A rate-based web ACL is opt-in (waf_rate_limit, waf_web_acl_arn).",
            )
        return distribution
