"""An optional AWS WAF web ACL for the distributions: one rate-based rule per client IP."""

from __future__ import annotations

from aws_cdk import Aws, CfnRule, CfnRuleAssertion, Fn
from aws_cdk import aws_wafv2 as wafv2
from constructs import Construct

#: CloudFront accepts only web ACLs of scope CLOUDFRONT, which exist in us-east-1 alone.
CLOUDFRONT_WAF_REGION = "us-east-1"


class RateLimitAcl(Construct):
    """A CloudFront-scope web ACL that allows everything but blocks a client IP sending more
    than ``rate_limit`` requests in 5 minutes (WAF's default evaluation window).

    The stack must be deployed in us-east-1: a template rule stops the deployment anywhere
    else, before any resource is created (docs/deploy.md says how to use WAF from another
    region: an existing web ACL, ``waf_web_acl_arn``).

    Attributes:
        web_acl_arn: the ARN to give each distribution (``webAclId``).
    """

    def __init__(self, scope: Construct, construct_id: str, *, rate_limit: int) -> None:
        super().__init__(scope, construct_id)
        CfnRule(
            self,
            "DeployedInUsEast1",
            assertions=[
                CfnRuleAssertion(
                    assert_=Fn.condition_equals(Aws.REGION, CLOUDFRONT_WAF_REGION),
                    assert_description=(
                        "waf_rate_limit creates a CloudFront web ACL, which AWS WAF keeps in "
                        "us-east-1 only: deploy this stack there, or set waf_web_acl_arn to a "
                        "web ACL created in us-east-1 instead (docs/deploy.md)"
                    ),
                )
            ],
        )
        acl = wafv2.CfnWebACL(
            self,
            "WebAcl",
            scope="CLOUDFRONT",
            default_action=wafv2.CfnWebACL.DefaultActionProperty(allow={}),
            visibility_config=_visibility("WheelGateWebAcl"),
            rules=[
                wafv2.CfnWebACL.RuleProperty(
                    name="RateLimitPerIp",
                    priority=0,
                    action=wafv2.CfnWebACL.RuleActionProperty(block={}),
                    statement=wafv2.CfnWebACL.StatementProperty(
                        rate_based_statement=wafv2.CfnWebACL.RateBasedStatementProperty(
                            limit=rate_limit, aggregate_key_type="IP"
                        )
                    ),
                    visibility_config=_visibility("WheelGateRateLimitPerIp"),
                )
            ],
        )
        self.web_acl_arn: str = acl.attr_arn


def _visibility(metric_name: str) -> wafv2.CfnWebACL.VisibilityConfigProperty:
    return wafv2.CfnWebACL.VisibilityConfigProperty(
        cloud_watch_metrics_enabled=True,
        metric_name=metric_name,
        sampled_requests_enabled=True,
    )
