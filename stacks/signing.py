"""The KMS key that signs released files' verdicts (docs/verdicts.md)."""

from __future__ import annotations

from aws_cdk import Aws, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

#: What the promoter does with the key: sign, and read the public key it publishes.
SIGNER_ACTIONS = ["kms:Sign", "kms:GetPublicKey"]
#: What takes the key out of service: the deploy role's alone (a stack change), as the bucket
#: policies keep their own changes to it.
KEY_LIFECYCLE_ACTIONS = ["kms:ScheduleKeyDeletion", "kms:DisableKey", "kms:PutKeyPolicy"]


class VerdictKey(Construct):
    """An asymmetric KMS key (``ECC_NIST_P256``, ``SIGN_VERIFY``) only ``signer`` may sign with.

    Its key policy keeps the account's administration of the key (AWS's default statement,
    without which a key cannot be managed at all) and adds two Denies: ``kms:Sign`` for every
    principal but ``signer``, and deletion, disabling and key policy changes for every principal
    but ``deploy_role_arn`` (CloudFormation's execution role). The identity side
    (:meth:`stacks.access.Access.confine_promoter_to`) confines the signer's ``kms:Sign`` to the
    promoter function's own code, as its S3 writes are. Retained when removed from the stack: a
    rotation (``verdict_key_generation``) replaces the key, and the old one's verdicts keep
    verifying under its published public key.

    Attributes:
        key: the key.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        signer: iam.IRole,
        deploy_role_arn: str,
        generation: int,
    ) -> None:
        super().__init__(scope, construct_id)
        account_root = iam.AccountRootPrincipal()
        policy = iam.PolicyDocument(
            statements=[
                iam.PolicyStatement(
                    sid="AccountAdministersTheKey",
                    principals=[account_root],
                    actions=["kms:*"],
                    resources=["*"],
                ),
                iam.PolicyStatement(
                    sid="PromoterSigns",
                    principals=[signer],
                    actions=SIGNER_ACTIONS,
                    resources=["*"],
                ),
                iam.PolicyStatement(
                    sid="DenySigningExceptPromoter",
                    effect=iam.Effect.DENY,
                    principals=[iam.AnyPrincipal()],
                    actions=["kms:Sign"],
                    resources=["*"],
                    conditions={"ArnNotEquals": {"aws:PrincipalArn": [signer.role_arn]}},
                ),
                iam.PolicyStatement(
                    sid="DenyRetirementExceptDeploys",
                    effect=iam.Effect.DENY,
                    principals=[iam.AnyPrincipal()],
                    actions=KEY_LIFECYCLE_ACTIONS,
                    resources=["*"],
                    conditions={"ArnNotEquals": {"aws:PrincipalArn": [deploy_role_arn]}},
                ),
            ]
        )
        self.key = kms.Key(
            self,
            f"Key{generation}",
            key_spec=kms.KeySpec.ECC_NIST_P256,
            key_usage=kms.KeyUsage.SIGN_VERIFY,
            description=f"WheelGate verdicts, generation {generation} ({Aws.STACK_NAME})",
            policy=policy,
            removal_policy=RemovalPolicy.RETAIN,
        )
        signer.add_to_principal_policy(
            iam.PolicyStatement(
                sid="SignVerdicts", actions=SIGNER_ACTIONS, resources=[self.key.key_arn]
            )
        )
