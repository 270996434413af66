"""The base install and the extras in pyproject.toml, against the pins in requirements.txt.

The dev venv installs the package with ``--no-deps`` over requirements*.txt (Makefile), so a
dependency that pyproject.toml names and requirements.txt does not pin would be missing there
without any install step saying so.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from wheelgate.local.moto_version import PATCHED_MOTO_VERSION

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def declared() -> dict[str, Requirement]:
    """Every requirement of the base install and of each extra, by name (the package's own
    extras, which refer back to it, left out)."""
    specs = [*PROJECT["dependencies"]]
    for extra in PROJECT["optional-dependencies"].values():
        specs.extend(extra)
    requirements = [Requirement(spec) for spec in specs]
    return {
        canonicalize_name(r.name): r
        for r in requirements
        if canonicalize_name(r.name) != PROJECT["name"]
    }


def pinned() -> dict[str, Requirement]:
    lines = (REPO / "requirements.txt").read_text().splitlines()
    requirements = [Requirement(line) for line in lines if line and not line.startswith("#")]
    return {canonicalize_name(r.name): r for r in requirements}


def test_the_base_install_leaves_out_moto_powertools_and_jinja2() -> None:
    base = {canonicalize_name(Requirement(spec).name) for spec in PROJECT["dependencies"]}
    # pip: `wheelgate pins` runs `python -m pip` of the environment it is installed in;
    # cryptography: `wheelgate verify` checks signatures with the base install.
    assert base == {"boto3", "pydantic", "packaging", "pyyaml", "pip", "cryptography"}
    extras = PROJECT["optional-dependencies"]
    # The promoter's handler: Powertools, and Jinja2 for the status pages.
    assert {Requirement(s).name for s in extras["promoter"]} == {"aws-lambda-powertools", "Jinja2"}
    assert {Requirement(s).name for s in extras["local"]} == {"wheelgate", "moto"}
    assert "wheelgate[promoter]" in extras["local"]


def test_the_local_extra_pins_the_moto_local_mode_patches() -> None:
    (moto,) = [Requirement(s) for s in PROJECT["optional-dependencies"]["local"] if "moto" in s]
    assert str(moto.specifier) == f"=={PATCHED_MOTO_VERSION}"
    assert str(pinned()["moto"].specifier) == f"=={PATCHED_MOTO_VERSION}"


def test_requirements_pin_every_declared_dependency_within_its_floor() -> None:
    pins = pinned()
    for name, requirement in declared().items():
        assert name in pins, f"{name} is declared in pyproject.toml but not pinned"
        (pin,) = pins[name].specifier
        assert pin.operator == "=="
        assert requirement.specifier.contains(pin.version), f"{name}=={pin.version}"
        assert requirement.extras <= pins[name].extras, f"{name}: pin the extras too"
