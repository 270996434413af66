#!/usr/bin/env python3
"""This repository's CDK app: one stack holding the WheelGate construct, configured by the
``cdk.json`` context (``wheelgate``, or the JSON file ``-c wheelgate_file=wheelgate.json`` names,
and ``stage``, ``account``, ``region``: stacks/context.py).

Synthesis needs no AWS credentials: nothing here calls AWS.
"""

from __future__ import annotations

import sys
from pathlib import Path

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from stacks import ConfigError, WheelGate, deployment_from_context

#: Built by `make layer`, so synthesis here runs no pip (another app leaves layer_dir unset).
LAYER_DIR = Path(__file__).resolve().parent / "build" / "layer"
#: The construct's id in the stack. CDK leaves a "Default" out of logical ids, so every
#: resource keeps the logical id it had when the stack held the components directly: an
#: existing deployment updates in place (its Object Lock buckets are never replaced).
CONSTRUCT_ID = "Default"
DESCRIPTION = "WheelGate: gated promotion of CI-built wheels to a nightly index"


def add_stack(app: cdk.App, *, stage: str | None = None) -> cdk.Stack:
    """Add the WheelGate stack of ``stage`` (``None``: the context's ``stage``, if any).

    Raises :class:`stacks.props.ConfigError` if the context is incomplete or wrong.
    """
    deployment = deployment_from_context(app.node.get_all_context(), stage=stage)
    stack = cdk.Stack(
        app,
        deployment.stack_name,
        env=cdk.Environment(account=deployment.account, region=deployment.region),
        description=DESCRIPTION,
    )
    WheelGate(stack, CONSTRUCT_ID, deployment.props, layer_dir=LAYER_DIR)
    return stack


def add_nag_gate(app: cdk.App) -> None:
    """cdk-nag's AwsSolutions checks on every stack of ``app``: an unacknowledged finding
    stops synthesis."""
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))


def build_app(app: cdk.App) -> cdk.Stack:
    """Add the WheelGate stack and the cdk-nag AwsSolutions gate to ``app``.

    Raises :class:`stacks.props.ConfigError` if the context is incomplete or wrong.
    """
    stack = add_stack(app)
    add_nag_gate(app)
    return stack


def main() -> int:
    app = cdk.App()
    try:
        build_app(app)
    except (ConfigError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
