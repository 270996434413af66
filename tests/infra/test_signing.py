"""The verdict key: an asymmetric P-256 signing key, retained, that the promoter is given; a
new generation is a new key, the old one kept."""

from __future__ import annotations

from typing import Any

from aws_cdk.assertions import Match, Template

from tests.infra.resolve import Resolver
from tests.infra.synth import synthesize
from wheelgate.core.env_names import ENV_VERDICT_KEY_ARN
from wheelgate.core.layout import VERDICT_KEYS_KEY


def _signing_keys(template_json: dict[str, Any]) -> dict[str, Any]:
    return {
        lid: r
        for lid, r in template_json["Resources"].items()
        if r["Type"] == "AWS::KMS::Key" and r["Properties"].get("KeyUsage") == "SIGN_VERIFY"
    }


def test_the_verdict_key_is_an_ecc_p256_signing_key_kept_on_removal(template: Template) -> None:
    template.has_resource(
        "AWS::KMS::Key",
        {
            "Properties": Match.object_like(
                {"KeySpec": "ECC_NIST_P256", "KeyUsage": "SIGN_VERIFY"}
            ),
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
        },
    )


def test_the_key_policy_denies_signing_and_retiring_to_everyone_else(
    template_json: dict[str, Any],
) -> None:
    ((_, key),) = _signing_keys(template_json).items()
    resolver = Resolver(template_json)
    statements = {
        s["Sid"]: s for s in resolver.resolve(key["Properties"]["KeyPolicy"])["Statement"]
    }
    promoter = resolver.get_att(resolver.logical_id("promoter"), "Arn")
    sign = statements["DenySigningExceptPromoter"]
    assert (sign["Effect"], sign["Action"], sign["Principal"]) == ("Deny", "kms:Sign", {"AWS": "*"})
    assert sign["Condition"] == {"ArnNotEquals": {"aws:PrincipalArn": [promoter]}}
    retire = statements["DenyRetirementExceptDeploys"]
    assert set(retire["Action"]) == {
        "kms:ScheduleKeyDeletion",
        "kms:DisableKey",
        "kms:PutKeyPolicy",
    }
    assert "cfn-exec-role" in retire["Condition"]["ArnNotEquals"]["aws:PrincipalArn"][0]


def test_the_promoter_is_given_the_key_and_may_update_only_the_keys_document(
    template_json: dict[str, Any],
) -> None:
    ((key_id, _),) = _signing_keys(template_json).items()
    resolver = Resolver(template_json)
    functions = resolver.of_type("AWS::Lambda::Function")
    envs = [f["Properties"].get("Environment", {}).get("Variables", {}) for f in functions.values()]
    (env,) = [e for e in envs if ENV_VERDICT_KEY_ARN in e]
    assert env[ENV_VERDICT_KEY_ARN] == {"Fn::GetAtt": [key_id, "Arn"]}
    documents = [resolver.resolve(d) for d in resolver.role_policies("promoter")]
    statements = {s.get("Sid"): s for d in documents for s in d["Statement"]}
    assert statements["WriteVerdictKeys"]["Resource"].endswith(f"/{VERDICT_KEYS_KEY}")
    assert statements["SignVerdicts"]["Action"] == ["kms:Sign", "kms:GetPublicKey"]
    confined = statements["DenySigningFromOtherFunctions"]
    assert confined["Effect"] == "Deny"
    assert "lambda:SourceFunctionArn" in confined["Condition"]["ArnNotEquals"]


def test_a_new_generation_is_a_new_key(tmp_path: Any) -> None:
    from tests.infra.iam_matrix import matrix_context

    first = _signing_keys(synthesize(tmp_path / "1", matrix_context()).template)
    second = _signing_keys(
        synthesize(tmp_path / "2", {**matrix_context(), "verdict_key_generation": 2}).template
    )
    assert set(first).isdisjoint(second)
    assert all(k["DeletionPolicy"] == "Retain" for k in first.values())
