#!/usr/bin/env python3
"""CDK entry point: reads the ``wheelgate`` context and synthesizes the WheelGate stack.

Synthesis needs no AWS credentials: nothing here calls AWS.
"""

from __future__ import annotations

import sys

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from stacks.config import ConfigError, WheelGateConfig
from stacks.wheelgate_stack import WheelGateStack

STACK_NAME = "WheelGate"


def build_app(app: cdk.App) -> WheelGateStack:
    """Add the WheelGate stack and the cdk-nag AwsSolutions gate to ``app``.

    Raises :class:`stacks.config.ConfigError` if the context is incomplete.
    """
    config = WheelGateConfig.from_context(app.node.try_get_context)
    stack = WheelGateStack(
        app,
        STACK_NAME,
        config=config,
        description="WheelGate: gated promotion of CI-built wheels to a nightly index",
    )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
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
