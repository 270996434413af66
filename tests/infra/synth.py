"""Synthesize the WheelGate app in-process, the way ``cdk synth`` runs ``app.py``."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
CDK_JSON = REPO_ROOT / "cdk.json"
STACK_NAME = "WheelGate"


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
