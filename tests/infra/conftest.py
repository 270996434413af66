"""Synthesize each app once per test session; every infra test reads those templates.

``synthesis``: this repository's app as cdk.json configures it. ``matrix_template``: the same
with a break-glass role, as the matrices of docs/security.md show it. ``stage_syntheses``: one
app with the stages ``prod`` and ``test`` (tests/infra/synth.py ``STAGES``) over the matrix's
settings. ``another_app``: the construct installed with pip into a fresh virtualenv and composed
by another app (tests/infra/another_app.py), over the matrix's settings too; the slowest.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.infra.summary import SUMMARY_KEY
from tests.infra.synth import (
    REPO_ROOT,
    TEST_WORKFLOWS,
    Deployed,
    Synthesis,
    synthesize,
    synthesize_stages,
)

if TYPE_CHECKING:
    from tests.infra.another_app import AnotherApp

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
def stage_syntheses(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Synthesis]:
    """The stages ``prod`` and ``test`` in one app, over the matrix's settings."""
    from tests.infra.iam_matrix import matrix_context

    return synthesize_stages(tmp_path_factory.mktemp("stages.out"), matrix_context())


@pytest.fixture(scope="session")
def another_app(tmp_path_factory: pytest.TempPathFactory) -> AnotherApp:
    """The construct as another app installs and composes it, over the matrix's settings."""
    from tests.infra.another_app import synthesize_another_app
    from tests.infra.iam_matrix import matrix_context

    return synthesize_another_app(tmp_path_factory.mktemp("another-app"), matrix_context())


#: What the IAM and OIDC matrices cover: this repository's app, another app that installed the
#: construct with pip, and each of two stages synthesized in one app.
DEPLOYMENTS = ("this app", "another app", "stage prod", "stage test")


@pytest.fixture(scope="session", params=DEPLOYMENTS)
def deployed(request: pytest.FixtureRequest) -> Deployed:
    from tests.infra.oidc_matrix import WORKFLOWS

    name: str = request.param
    if name == "this app":
        return Deployed(name, request.getfixturevalue("matrix_template"), WORKFLOWS)
    if name == "another app":
        another: AnotherApp = request.getfixturevalue("another_app")
        return Deployed(name, another.synthesis.template, WORKFLOWS)
    stage = name.removeprefix("stage ")
    syntheses: dict[str, Synthesis] = request.getfixturevalue("stage_syntheses")
    workflows = TEST_WORKFLOWS if stage == "test" else WORKFLOWS
    return Deployed(name, syntheses[stage].template, workflows)


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
