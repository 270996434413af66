"""Synthesize the stack once per test session; every infra test reads that template."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.infra.summary import SUMMARY_KEY
from tests.infra.synth import REPO_ROOT, Synthesis, synthesize

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

ARTIFACTS = REPO_ROOT / "test-artifacts"


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    for title, text in config.stash.get(SUMMARY_KEY, {}).items():
        terminalreporter.write_sep("-", title)
        terminalreporter.write_line(text.rstrip())


@pytest.fixture(scope="session")
def synthesis(tmp_path_factory: pytest.TempPathFactory) -> Synthesis:
    if not (REPO_ROOT / "build" / "layer" / "python").is_dir():
        pytest.fail("build/layer is missing: run `make layer` before the infra tests")
    return synthesize(tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="session")
def template_json(synthesis: Synthesis) -> dict[str, object]:
    return synthesis.template


@pytest.fixture(scope="session")
def template(synthesis: Synthesis):  # type: ignore[no-untyped-def]
    from aws_cdk.assertions import Template

    return Template.from_json(synthesis.template)


@pytest.fixture(scope="session")
def matrix_template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The template synthesized with a break-glass role configured, as the matrix CLIs
    (tests/infra/iam_matrix.py, oidc_matrix.py) do."""
    from tests.infra.iam_matrix import matrix_context

    return synthesize(tmp_path_factory.mktemp("matrix.out"), matrix_context()).template


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
