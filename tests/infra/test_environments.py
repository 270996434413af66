"""Two environments: ``-c stage=prod`` and ``-c stage=test`` synthesized as two stacks of one
app (tests/infra/synth.py ``STAGES``, pinned to one account and region), and the construct's
own rules for where it may go.

The stages collide in no physical name, export or log group; the test stage reuses the prod
stage's GitHub OIDC provider through ``oidc_provider_arn``, and each stage's roles trust only its
own workflows' jobs. The IAM and OIDC matrices of each stage are in test_iam_matrix.py and
test_oidc_matrix.py (``deployed``).
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest

from app import LAYER_DIR
from stacks.setting_errors import ConfigError
from stacks.wheelgate import WheelGate
from tests.infra.oidc_matrix import GITHUB_ROLES, WORKFLOWS, Row, compute
from tests.infra.resolve import OIDC_PROVIDER_ARN, Resolver
from tests.infra.synth import (
    STAGES,
    TEST_WORKFLOWS,
    Synthesis,
    cdk_json_context,
    differences,
    masked,
)

#: Properties that name a resource account- or region-wide (CloudFormation makes up a name,
#: from the stack's, for each one a template leaves out), by resource type.
NAME_PROPERTIES = {
    "AWS::S3::Bucket": ("BucketName",),
    "AWS::Lambda::Function": ("FunctionName",),
    "AWS::Lambda::LayerVersion": ("LayerName",),
    "AWS::Logs::LogGroup": ("LogGroupName",),
    "AWS::StepFunctions::StateMachine": ("StateMachineName",),
    "AWS::CloudWatch::Dashboard": ("DashboardName",),
    "AWS::CloudWatch::Alarm": ("AlarmName",),
    "AWS::CloudFront::Function": ("Name",),
    "AWS::CloudFront::CachePolicy": ("CachePolicyConfig", "Name"),
    "AWS::CloudFront::OriginAccessControl": ("OriginAccessControlConfig", "Name"),
    "AWS::SNS::Topic": ("TopicName",),
    "AWS::SQS::Queue": ("QueueName",),
    "AWS::IAM::Role": ("RoleName",),
    "AWS::Events::Rule": ("Name",),
    "AWS::WAFv2::WebACL": ("Name",),
    # One GitHub provider per account: its URL is its name.
    "AWS::IAM::OIDCProvider": ("Url",),
}


def physical_names(template: dict[str, Any]) -> dict[str, set[str]]:
    """Resource type (or ``Export``) -> the names ``template`` gives explicitly, resolved."""
    resolver = Resolver(template)
    names: dict[str, set[str]] = {}
    for resource in template["Resources"].values():
        path = NAME_PROPERTIES.get(resource["Type"])
        value: Any = resource.get("Properties", {})
        for part in path or ("-",):
            value = value.get(part) if isinstance(value, dict) else None
        if path and value is not None:
            names.setdefault(resource["Type"], set()).add(str(resolver.resolve(value)))
    for output in template.get("Outputs", {}).values():
        if "Export" in output:
            names.setdefault("Export", set()).add(str(resolver.resolve(output["Export"]["Name"])))
    return names


def collisions(first: dict[str, Any], second: dict[str, Any]) -> list[str]:
    """Names both templates give (per type): what two stacks in one account would fight over."""
    ours, theirs = physical_names(first), physical_names(second)
    shared = ours.keys() & theirs.keys()
    return sorted(f"{kind}: {name}" for kind in shared for name in ours[kind] & theirs[kind])


def test_two_stages_are_two_stacks_of_one_app(stage_syntheses: dict[str, Synthesis]) -> None:
    # Given -c stage=prod and -c stage=test in one app, then each is a stack of its own name
    assert set(stage_syntheses) == set(STAGES)
    (outdir,) = {s.outdir for s in stage_syntheses.values()}
    assert {p.name for p in outdir.glob("*.template.json")} == {
        "WheelGate-prod.template.json",
        "WheelGate-test.template.json",
    }
    # And the fan-out state machine and the dashboard are named after it
    names = physical_names(stage_syntheses["test"].template)
    assert names["AWS::StepFunctions::StateMachine"] == {"WheelGate-test-fanout"}
    assert names["AWS::CloudWatch::Dashboard"] == {"WheelGate-test-promotion"}


def test_the_stages_share_no_physical_name_export_or_log_group(
    stage_syntheses: dict[str, Synthesis],
) -> None:
    prod, test = (stage_syntheses[s].template for s in ("prod", "test"))
    # Given the names each stage's template gives: the check sees the kinds that could collide
    named = physical_names(prod)
    assert {
        "AWS::StepFunctions::StateMachine",
        "AWS::CloudWatch::Dashboard",
        "AWS::CloudFront::Function",
        "AWS::CloudFront::CachePolicy",
        "AWS::CloudFront::OriginAccessControl",
    } <= named.keys()
    # ... and would report one stage deployed twice
    assert collisions(prod, prod) != []
    # Then the two stages share none
    assert collisions(prod, test) == []
    # And log groups, queues, topics and buckets are named by CloudFormation from each stack's
    # name (the templates give them none); nothing is exported
    for template in (prod, test):
        kinds = physical_names(template).keys()
        assert not kinds & {"AWS::Logs::LogGroup", "AWS::S3::Bucket", "AWS::SQS::Queue", "Export"}
        assert not any("Export" in output for output in template["Outputs"].values())


def test_the_test_stage_reuses_the_prod_stages_oidc_provider(
    stage_syntheses: dict[str, Synthesis],
) -> None:
    prod, test = (Resolver(stage_syntheses[s].template) for s in ("prod", "test"))
    # Given the prod stage created the account's GitHub provider
    (provider,) = prod.of_type("AWS::IAM::OIDCProvider")
    assert prod.ref(provider) == OIDC_PROVIDER_ARN == STAGES["test"]["oidc_provider_arn"]
    # Then the test stage creates none, and every one of its GitHub roles trusts that one
    assert test.of_type("AWS::IAM::OIDCProvider") == {}
    for role in GITHUB_ROLES:
        (statement,) = test.trust_policy(role)["Statement"]
        assert statement["Principal"] == {"Federated": OIDC_PROVIDER_ARN}, role


def _release_roles(rows: list[Row]) -> set[str]:
    return {role for row in rows for role in row.roles if role != "dev"}


def test_each_stages_roles_trust_only_its_own_jobs(stage_syntheses: dict[str, Synthesis]) -> None:
    prod, test = (stage_syntheses[s].template for s in ("prod", "test"))
    # Given each stage's own release, reporter and deps jobs get its release roles
    assert _release_roles(compute(prod, WORKFLOWS)) == {"build", "reporter", "deps"}
    assert _release_roles(compute(test, TEST_WORKFLOWS)) == {"build", "reporter", "deps"}
    # Then no job of one stage's workflows can assume a build, reporter or deps role of the
    # other (the shared dev_sub_patterns give both stages' dev roles to a pull request, which
    # writes only the dev bucket)
    assert _release_roles(compute(test, WORKFLOWS)) == set()
    assert _release_roles(compute(prod, TEST_WORKFLOWS)) == set()


def _plain(template: dict[str, Any], stack_name: str) -> Any:
    """Resources and outputs with every reference resolved (an environment-agnostic stack's
    ``AWS::Region`` and a pinned one's region alike) and the stack's names masked."""
    resolver = Resolver(template)
    sections = {k: resolver.resolve(template[k]) for k in ("Resources", "Outputs")}
    return masked(sections, stack_name=stack_name, construct_id="Default")


def test_a_stage_differs_from_the_default_stack_only_where_its_settings_do(
    stage_syntheses: dict[str, Synthesis], matrix_template: dict[str, Any]
) -> None:
    default = _plain(matrix_template, "WheelGate")
    # Given the prod stage, with the default settings: the default stack's template
    assert differences(_plain(stage_syntheses["prod"].template, "WheelGate-prod"), default) == []
    # And the test stage differs in what its settings change alone: no OIDC provider of its
    # own (it trusts the same one), its release roles' subjects, the dev bucket
    changed = differences(_plain(stage_syntheses["test"].template, "WheelGate-test"), default)
    where = {
        (path.split("/")[2], path.split("/")[4] if path.count("/") > 3 else "only on one side")
        for path in changed
    }
    assert where == {
        ("<AccessGitHubOidcProvider>: only on one side", "only on one side"),
        ("<AccessBuildRole>", "AssumeRolePolicyDocument"),
        ("<AccessReporterRole>", "AssumeRolePolicyDocument"),
        ("<AccessDepsRole>", "AssumeRolePolicyDocument"),
        ("<AccessDevRoleAccess>", "PolicyDocument"),
    }


def test_a_second_wheelgate_in_one_stack_is_refused() -> None:
    # Its state machine and dashboard would take the names of the first one's.
    from stacks.context import props_from_context

    stack = cdk.Stack(cdk.App(), "Twice")
    props = props_from_context(cdk_json_context())
    WheelGate(stack, "First", props, layer_dir=LAYER_DIR)
    with pytest.raises(ValueError, match=r"stack Twice already has a WheelGate \(Twice/First\)"):
        WheelGate(stack, "Second", props, layer_dir=LAYER_DIR)


def test_a_waf_rate_limit_outside_us_east_1_is_refused_at_synthesis() -> None:
    # CloudFront takes web ACLs from us-east-1 only: a stack pinned elsewhere cannot have one.
    from stacks.context import props_from_context

    context = cdk_json_context()
    context["wheelgate"] = {**context["wheelgate"], "waf_rate_limit": 2000}
    stack = cdk.Stack(cdk.App(), "Elsewhere", env=cdk.Environment(region="eu-west-1"))
    with pytest.raises(ConfigError, match=r"waf_rate_limit is set and the stack is in eu-west-1"):
        WheelGate(stack, "Default", props_from_context(context), layer_dir=LAYER_DIR)
