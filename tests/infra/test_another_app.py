"""The construct in another CDK app: the distribution built from this checkout, installed with
its ``cdk`` extra into a fresh virtualenv outside the repository, composed by
tests/infra/platform_app.py and synthesized there, with the layer built by pip at synthesis.

Its template is this repository's app's for the same settings, once the names that follow from
each app's own names (logical ids, the stack's name, CDK's unique ids) and asset hashes are
masked: the construct brings everything, the repository's layout nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from stacks.promoter_function import promoter_files
from stacks.promoter_layer import REQUIREMENTS
from stacks.wheelgate import package_code_dir
from tests.infra.another_app import AnotherApp
from tests.infra.summary import publish
from tests.infra.synth import STACK_NAME, asset_dir, differences, masked

pytestmark = pytest.mark.slow


def _resource(template: dict[str, Any], kind: str, description: str) -> dict[str, Any]:
    (properties,) = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == kind and r["Properties"].get("Description") == description
    ]
    return properties


FUNCTION = ("AWS::Lambda::Function", "Verifies a staged run's manifest and promotes it to nightly")
LAYER = (
    "AWS::Lambda::LayerVersion",
    "boto3, Powertools, pydantic and packaging for the WheelGate promoter",
)


def test_another_app_synthesizes_this_repositorys_template(
    another_app: AnotherApp,
    matrix_template: dict[str, Any],
    artifacts_dir: Path,
    request: pytest.FixtureRequest,
) -> None:
    # Given this repository's app and the other app, both with the matrix's settings
    ours = masked(matrix_template, stack_name=STACK_NAME, construct_id="Default")
    theirs = masked(
        another_app.synthesis.template,
        stack_name=another_app.stack_name,
        construct_id=another_app.construct_id,
    )
    times = ", ".join(f"{step} {s:.0f} s" for step, s in another_app.seconds.items())
    publish(request.config, artifacts_dir, "another-app.txt", "Another app", times + "\n")
    # Then, names and asset hashes masked, the templates are one
    assert differences(ours, theirs) == []
    # And the masking kept what the comparison is about: every resource, every output
    assert len(ours["Resources"]) == len(matrix_template["Resources"]) > 50
    assert set(theirs["Outputs"]) == {f"<{name}>" for name in matrix_template["Outputs"]}


def test_the_outputs_keep_their_names_in_another_app(another_app: AnotherApp) -> None:
    # CI reads StagingBucketName, BuildRoleArn... by name, whatever the construct's id.
    outputs = another_app.synthesis.template["Outputs"]
    assert {"StagingBucketName", "BuildRoleArn", "NightlyIndexUrl", "DashboardUrl"} <= set(outputs)


def test_the_function_code_comes_from_the_installed_package(
    another_app: AnotherApp,
) -> None:
    # Given the other app's Python imported wheelgate from its own virtualenv
    assert another_app.wheelgate_file.is_relative_to(another_app.venv)
    # Then its function's asset is the handler's import closure and its data (the status
    # templates, shipped as package data), byte for byte this checkout's
    code = _resource(another_app.synthesis.template, *FUNCTION)["Code"]["S3Key"]
    folder = asset_dir(another_app.synthesis.outdir, another_app.stack_name, code)
    ours = package_code_dir()
    expected = promoter_files(ours)
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert files == list(expected)
    assert all((folder / f).read_bytes() == (ours / f).read_bytes() for f in files)


def test_the_layer_is_built_by_pip_for_the_functions_platform(another_app: AnotherApp) -> None:
    key = _resource(another_app.synthesis.template, *LAYER)["Content"]["S3Key"]
    folder = asset_dir(another_app.synthesis.outdir, another_app.stack_name, key)
    packages = folder / "python"
    # Every requirement of the layer, at its pinned version
    installed = {p.name.lower() for p in packages.iterdir()}
    for line in REQUIREMENTS.read_text().splitlines():
        if line.split("#", 1)[0].strip():
            requirement = Requirement(line.split("#", 1)[0].strip())
            (pin,) = requirement.specifier
            wanted = f"{canonicalize_name(requirement.name).replace('-', '_')}-{pin.version}"
            assert f"{wanted}.dist-info" in installed, wanted
    # Built for Lambda's arm64 CPython 3.13, not for this machine
    (core,) = packages.glob("pydantic_core/_pydantic_core.*.so")
    assert core.name.endswith("cpython-313-aarch64-linux-gnu.so")
