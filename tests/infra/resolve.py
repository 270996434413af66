"""Turn a synthesized template's intrinsic functions into concrete, fake AWS values.

Policies in the template reference buckets and roles with ``Ref``/``Fn::GetAtt``/``Fn::Join``.
For assertions and the offline IAM evaluation they are resolved with a fixed account, region
and readable physical names (``wheelgate-staging``, ``role/build``...). The WheelGate construct
may sit under any id in its stack (``Default`` in this repository's app, which CDK leaves out of
logical ids; ``Wheels`` in another app, which prefixes them): the prefix is found from the
staging bucket.
"""

from __future__ import annotations

import re
from typing import Any

ACCOUNT = "111122223333"
REGION = "us-east-1"
PARTITION = "aws"
#: cdk bootstrap's CloudFormation execution role (default qualifier) in the fake account.
DEPLOY_ROLE_ARN = (
    f"arn:{PARTITION}:iam::{ACCOUNT}:role/cdk-hnb659fds-cfn-exec-role-{ACCOUNT}-{REGION}"
)

# Construct path prefix (as it appears in the logical id) -> physical name.
FRIENDLY_NAMES = {
    "StorageStaging": "wheelgate-staging",
    "StorageNightly": "wheelgate-nightly",
    "StorageAccessLogs": "wheelgate-logs",
    "StorageCache": "wheelgate-cache",
    "AccessBuildRole": "build",
    "AccessReporterRole": "reporter",
    "AccessDevRole": "dev",
    "AccessDepsRole": "deps",
    "AccessPromoterRole": "promoter",
    "FanOutRole": "fanout",
    "CdnNightly": "ENIGHTLY",
    "CdnStaging": "ESTAGING",
}
#: Names a template may lack: the cache bucket is not created when cache_bucket_name is set.
OPTIONAL_NAMES = frozenset({"wheelgate-cache"})
#: The logical id of the staging bucket, under the construct's prefix.
_STAGING_BUCKET = re.compile(r"(?P<prefix>[A-Za-z0-9]*?)StorageStaging[0-9A-F]{8}")
#: GitHub's OIDC issuer; an IAM OIDC provider's ARN ends with its URL's host and path.
OIDC_PROVIDER_ARN = (
    f"arn:{PARTITION}:iam::{ACCOUNT}:oidc-provider/token.actions.githubusercontent.com"
)
_PSEUDO = {
    "AWS::Partition": PARTITION,
    "AWS::AccountId": ACCOUNT,
    "AWS::Region": REGION,
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackName": "WheelGate",
}


class Resolver:
    """Resolves intrinsics of one template."""

    def __init__(self, template: dict[str, Any]) -> None:
        self.resources: dict[str, Any] = template["Resources"]
        self.names: dict[str, str] = {}
        found = (_STAGING_BUCKET.fullmatch(lid) for lid in self.resources)
        #: The construct's logical id prefix ("" for the id ``Default``).
        self.prefix = next((m.group("prefix") for m in found if m), "")
        for logical_id in self.resources:
            for path, name in FRIENDLY_NAMES.items():
                if re.fullmatch(rf"{self.prefix}{path}[0-9A-F]{{8}}", logical_id):
                    self.names[logical_id] = name
        missing = set(FRIENDLY_NAMES.values()) - set(self.names.values()) - OPTIONAL_NAMES
        if missing:
            raise LookupError(f"template has no resource for {sorted(missing)}")

    def logical_id(self, name: str) -> str:
        """The logical id given the friendly physical ``name``."""
        return next(lid for lid, n in self.names.items() if n == name)

    def physical_name(self, logical_id: str) -> str:
        return self.names.get(logical_id, logical_id.lower())

    def _type(self, logical_id: str) -> str:
        return str(self.resources[logical_id]["Type"])

    def ref(self, logical_id: str) -> str:
        if logical_id in _PSEUDO:
            return _PSEUDO[logical_id]
        name = self.physical_name(logical_id)
        if self._type(logical_id) == "AWS::IAM::OIDCProvider":
            url = self.resources[logical_id]["Properties"]["Url"]
            return f"arn:{PARTITION}:iam::{ACCOUNT}:oidc-provider/{url.removeprefix('https://')}"
        if self._type(logical_id) == "AWS::SNS::Topic":
            return f"arn:{PARTITION}:sns:{REGION}:{ACCOUNT}:{name}"
        if self._type(logical_id) == "AWS::SQS::Queue":
            return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}"
        if self._type(logical_id) == "AWS::StepFunctions::StateMachine":
            # Named (StateMachineName) state machines keep their name in the ARN.
            name = self.resources[logical_id]["Properties"].get("StateMachineName", name)
            return f"arn:{PARTITION}:states:{REGION}:{ACCOUNT}:stateMachine:{name}"
        return name

    def get_att(self, logical_id: str, attribute: str) -> str:
        kind = self._type(logical_id)
        name = self.physical_name(logical_id)
        if attribute == "Arn":
            if kind == "AWS::S3::Bucket":
                return f"arn:{PARTITION}:s3:::{name}"
            if kind == "AWS::IAM::Role":
                return f"arn:{PARTITION}:iam::{ACCOUNT}:role/{name}"
            if kind == "AWS::SQS::Queue":
                return f"arn:{PARTITION}:sqs:{REGION}:{ACCOUNT}:{name}"
            if kind == "AWS::Logs::LogGroup":
                return f"arn:{PARTITION}:logs:{REGION}:{ACCOUNT}:log-group:{name}:*"
            if kind == "AWS::Lambda::Function":
                return f"arn:{PARTITION}:lambda:{REGION}:{ACCOUNT}:function:{name}"
            service = kind.split("::")[1].lower()
            return f"arn:{PARTITION}:{service}:{REGION}:{ACCOUNT}:{name}"
        if attribute == "RoleId":
            return f"AROA{name.upper()}"
        if attribute in ("DomainName", "RegionalDomainName"):
            return f"{name}.example.net"
        return f"{name}.{attribute}"

    def resolve(self, node: Any) -> Any:
        """``node`` with every ``Ref``/``Fn::GetAtt``/``Fn::Join``/``Fn::Sub`` (of names only)/
        ``Fn::Select``/``Fn::Split`` replaced by a string (a list, for ``Fn::Split``)."""
        if isinstance(node, list):
            return [self.resolve(item) for item in node]
        if not isinstance(node, dict):
            return node
        if set(node) == {"Ref"}:
            return self.ref(node["Ref"])
        if set(node) == {"Fn::GetAtt"}:
            logical_id, attribute = node["Fn::GetAtt"]
            return self.get_att(logical_id, attribute)
        if set(node) == {"Fn::Sub"} and isinstance(node["Fn::Sub"], str):
            return re.sub(r"\$\{([^}]+)\}", lambda m: self.ref(m.group(1)), node["Fn::Sub"])
        if set(node) == {"Fn::Join"}:
            separator, parts = node["Fn::Join"]
            return separator.join(str(self.resolve(p)) for p in parts)
        if set(node) == {"Fn::Split"}:
            separator, value = node["Fn::Split"]
            return str(self.resolve(value)).split(separator)
        if set(node) == {"Fn::Select"}:
            index, values = node["Fn::Select"]
            return self.resolve(values)[int(index)]
        return {key: self.resolve(value) for key, value in node.items()}

    def of_type(self, kind: str) -> dict[str, Any]:
        """Resources of CloudFormation type ``kind`` by logical id."""
        return {lid: r for lid, r in self.resources.items() if r["Type"] == kind}

    def role_policies(self, role: str) -> list[dict[str, Any]]:
        """Resolved policy documents attached to the role with friendly name ``role``."""
        role_id = self.logical_id(role)
        documents = []
        for policy in self.of_type("AWS::IAM::Policy").values():
            if {"Ref": role_id} in policy["Properties"].get("Roles", []):
                documents.append(self.resolve(policy["Properties"]["PolicyDocument"]))
        return documents

    def trust_policy(self, role: str) -> dict[str, Any]:
        """Resolved trust policy (``AssumeRolePolicyDocument``) of the role ``role``."""
        properties = self.resources[self.logical_id(role)]["Properties"]
        document: dict[str, Any] = self.resolve(properties["AssumeRolePolicyDocument"])
        return document

    def bucket_policy(self, bucket: str) -> dict[str, Any]:
        """Resolved bucket policy document of the bucket with friendly name ``bucket``."""
        bucket_id = self.logical_id(bucket)
        for policy in self.of_type("AWS::S3::BucketPolicy").values():
            if policy["Properties"]["Bucket"] == {"Ref": bucket_id}:
                document: dict[str, Any] = self.resolve(policy["Properties"]["PolicyDocument"])
                return document
        raise LookupError(f"no bucket policy for {bucket}")
