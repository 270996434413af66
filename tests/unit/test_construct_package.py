"""The CDK construct ships in the distribution as ``wheelgate.cdk`` (setup.py maps ``stacks/``
to it; the ``cdk`` extra brings the CDK): what makes that work, checked without building.

tests/infra/test_another_app.py builds, installs and synthesizes it for real.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
STACKS = REPO / "stacks"


def _absolute_imports(source: str) -> list[str]:
    """Every module a source imports by absolute name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append(node.module)
    return found


def test_stacks_imports_its_own_modules_relatively() -> None:
    # Installed, the package is wheelgate.cdk: an absolute `stacks.x` would not be there.
    absolute = [
        f"{path.name}: {module}"
        for path in sorted(STACKS.glob("*.py"))
        for module in _absolute_imports(path.read_text())
        if module.split(".")[0] == "stacks"
    ]
    assert absolute == []
    assert _absolute_imports("from stacks.props import key\nimport stacks.nag") == [
        "stacks.props",
        "stacks.nag",
    ]


def test_every_data_folder_of_stacks_ships() -> None:
    # Given setup.py's list of stacks/ folders shipped as packages of data
    tree = ast.parse((REPO / "setup.py").read_text())
    (data,) = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "CONSTRUCT_DATA"
    ]
    folders = {p.name for p in STACKS.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert set(data) == folders
    # And pyproject.toml's package data for each: every file in them
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]
    for folder in folders:
        patterns = package_data[f"wheelgate.cdk.{folder}"]
        files = {p for p in (STACKS / folder).iterdir() if p.is_file()}
        assert files == {p for pattern in patterns for p in (STACKS / folder).glob(pattern)}


def test_the_cdk_extra_brings_the_cdk_and_the_nag_gate() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert {Requirement(spec).name for spec in extras["cdk"]} == {
        "aws-cdk-lib",
        "constructs",
        "cdk-nag",
    }
