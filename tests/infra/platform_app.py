"""Another team's CDK app, outside this repository: it installed ``wheelgate[cdk]`` with pip and
composes ``WheelGate`` in a stack of its own, with no layer directory (pip builds the layer).

tests/infra/test_another_app.py copies it into a fresh virtualenv's folder and runs it there:
``python platform_app.py SETTINGS_JSON OUTDIR``. It prints, as JSON, its stack's name, the
construct's id and where it imported the package from.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks
from wheelgate.cdk import WheelGate, WheelGateProps

import wheelgate

STACK_NAME = "Platform"
CONSTRUCT_ID = "Wheels"


def main(settings: str, outdir: str) -> int:
    app = cdk.App(outdir=outdir, analytics_reporting=False)
    stack = cdk.Stack(app, STACK_NAME)
    props = WheelGateProps.model_validate(json.loads(Path(settings).read_text()))
    WheelGate(stack, CONSTRUCT_ID, props)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()
    print(
        json.dumps(
            {"stack": STACK_NAME, "construct": CONSTRUCT_ID, "wheelgate": wheelgate.__file__}
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
