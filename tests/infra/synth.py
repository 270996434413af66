"""Synthesize the WheelGate app in-process, the way ``cdk synth`` runs ``app.py``: the default
stack, or two stages in one app; and compare templates of different apps, names masked."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
CDK_JSON = REPO_ROOT / "cdk.json"
STACK_NAME = "WheelGate"


@dataclass(frozen=True)
class Deployed:
    """One way WheelGate is deployed, with the matrix's settings: its template, and the
    workflow files (tests/infra/oidc_matrix.py labels) its roles trust."""

    name: str
    template: dict[str, Any]
    workflows: Mapping[str, str]


@dataclass(frozen=True)
class Synthesis:
    """The synthesized stack template and the cdk-nag validation report."""

    template: dict[str, Any]
    report: dict[str, Any]
    outdir: Path


def cdk_json_context() -> dict[str, Any]:
    """The ``context`` object of ``cdk.json``."""
    context: dict[str, Any] = json.loads(CDK_JSON.read_text())["context"]
    return context


def synthesize(outdir: Path, wheelgate: Mapping[str, Any] | None = None) -> Synthesis:
    """Synthesize with the ``cdk.json`` context (``wheelgate`` replaces its WheelGate object).

    The cdk-nag plugin runs as in ``app.py``: an unacknowledged finding raises.
    """
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    import aws_cdk as cdk

    from app import build_app

    context = cdk_json_context()
    if wheelgate is not None:
        context["wheelgate"] = dict(wheelgate)
    app = cdk.App(context=context, outdir=str(outdir), analytics_reporting=False)
    stack = build_app(app)
    assembly = app.synth()
    template: dict[str, Any] = assembly.get_stack_by_name(stack.stack_name).template
    report_path = outdir / "validation-report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    return Synthesis(template=template, report=report, outdir=outdir)


#: Two stages in one app (tests/infra/test_environments.py): ``prod`` with the base settings,
#: ``test`` with workflow files of its own (so its roles trust its own jobs) and ``prod``'s
#: GitHub OIDC provider (the one the account has: tests/infra/resolve.py's fake account).
TEST_WORKFLOWS = {
    "release": ".github/workflows/release-test.yml",
    "reporter": ".github/workflows/report-test.yml",
    "dev": ".github/workflows/dev.yml",
    "deps": ".github/workflows/deps-test.yml",
}
STAGES: dict[str, dict[str, Any]] = {
    "prod": {},
    "test": {
        "oidc_provider_arn": (
            "arn:aws:iam::111122223333:oidc-provider/token.actions.githubusercontent.com"
        ),
        "release_workflows": [TEST_WORKFLOWS["release"]],
        "reporter_workflow": TEST_WORKFLOWS["reporter"],
        "deps_workflows": [TEST_WORKFLOWS["deps"]],
        "dev_bucket_name": "therock-dev-python-test",
    },
}
#: The environment both stages pin (``-c account=... -c region=...``): resolve.py's fake one.
STAGE_ENVIRONMENT = {"account": "111122223333", "region": "us-east-1"}


def synthesize_stages(
    outdir: Path, wheelgate: Mapping[str, Any], stages: Mapping[str, Any] = STAGES
) -> dict[str, Synthesis]:
    """One app with a stack per stage of ``stages`` (``wheelgate_stages``), over the base
    settings ``wheelgate``, as ``cdk deploy -c stage=<stage>`` would make each; cdk-nag runs as
    a gate. Returns each stage's synthesis."""
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    import aws_cdk as cdk

    from app import add_nag_gate, add_stack

    context = {
        **cdk_json_context(),
        "wheelgate": dict(wheelgate),
        "wheelgate_stages": dict(stages),
        **STAGE_ENVIRONMENT,
    }
    app = cdk.App(context=context, outdir=str(outdir), analytics_reporting=False)
    stacks = {stage: add_stack(app, stage=stage) for stage in stages}
    add_nag_gate(app)
    assembly = app.synth()
    report_path = outdir / "validation-report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    return {
        stage: Synthesis(
            template=assembly.get_stack_by_name(stack.stack_name).template,
            report=report,
            outdir=outdir,
        )
        for stage, stack in stacks.items()
    }


#: A logical id: CDK's readable part, then an 8-digit hash of the construct path (none for an
#: id directly in the stack, such as an output).
_LOGICAL_ID = re.compile(r"(?P<readable>[A-Za-z0-9]+?)(?P<hash>[0-9A-F]{8})?")
_ASSET_HASH = re.compile(r"[0-9a-f]{64}")


def masked(template: Mapping[str, Any], *, stack_name: str, construct_id: str) -> Any:
    """``template`` with what depends on the app's names masked, so two apps that hold the
    same WheelGate compare equal: logical ids (the construct's id prefix and the path hash
    dropped), names CDK derives from the construct path (``<stack><construct>...<hash>``),
    names made of the stack's (``<stack>-fanout``), asset hashes, and the stack's description.

    Raises ``ValueError`` if two logical ids would mask to the same name (the comparison would
    then prove nothing about them).
    """
    prefix = "" if construct_id == "Default" else construct_id
    # CDK's unique ids of the construct path: the stack's and construct's names, alphanumeric.
    unique = re.escape(re.sub(r"[^A-Za-z0-9]", "", stack_name) + prefix)
    ids = [*template.get("Resources", {}), *template.get("Outputs", {})]
    tokens: dict[str, str] = {}
    for logical_id in ids:
        found = _LOGICAL_ID.fullmatch(logical_id.removeprefix(prefix))
        readable = found.group("readable") if found else logical_id
        # A permission's id names its target by the target's unique id.
        readable = re.sub(rf"{unique}([A-Za-z0-9]+?)[0-9A-F]{{8}}", r"(\1)", readable)
        tokens[logical_id] = f"<{readable}>"
    if len(set(tokens.values())) != len(tokens):
        raise ValueError(f"logical ids of {stack_name} mask ambiguously")
    text = json.dumps({k: v for k, v in template.items() if k != "Description"}, sort_keys=True)
    for logical_id in sorted(tokens, key=len, reverse=True):
        text = re.sub(rf"(?<![A-Za-z0-9]){logical_id}(?![A-Za-z0-9])", tokens[logical_id], text)
    # (A CloudFront function's name is the region, then its unique id: no boundary before.)
    text = re.sub(rf"{unique}([A-Za-z0-9]+?)[0-9A-F]{{8}}(?![A-Za-z0-9])", r"<uid:\1>", text)
    text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(stack_name)}-", "<stack>-", text)
    text = _ASSET_HASH.sub("<asset>", text)
    return json.loads(text)


def differences(left: Any, right: Any, path: str = "") -> list[str]:
    """Where two JSON values differ, as ``/``-separated paths with both values (shortened)."""
    if isinstance(left, dict) and isinstance(right, dict):
        found = [f"{path}/{k}: only on one side" for k in sorted(set(left) ^ set(right))]
        for key in sorted(set(left) & set(right)):
            found.extend(differences(left[key], right[key], f"{path}/{key}"))
        return found
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        return [
            found
            for i, (a, b) in enumerate(zip(left, right, strict=True))
            for found in differences(a, b, f"{path}/{i}")
        ]
    if left == right:
        return []
    return [f"{path}: {json.dumps(left)[:120]} != {json.dumps(right)[:120]}"]


def asset_dir(outdir: Path, stack_name: str, s3_key: str) -> Path:
    """The folder the cloud assembly in ``outdir`` uploads (zipped) as ``s3_key``."""
    assets = json.loads((outdir / f"{stack_name}.assets.json").read_text())
    (path,) = (
        asset["source"]["path"]
        for asset in assets["files"].values()
        if any(d["objectKey"] == s3_key for d in asset["destinations"].values())
    )
    return outdir / path
