"""The inner loop leaves nothing out but what is marked slow: ``make quick`` runs the whole
unit tier and the integration tier less its ``slow`` tests, and no unit test is marked slow."""

from __future__ import annotations

import importlib
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.conftest import worker_scope

REPO_ROOT = Path(__file__).resolve().parents[2]


def make_command(target: str) -> list[str]:
    """The pytest command ``make <target>`` runs, in this process (no xdist)."""
    printed = subprocess.run(
        ["make", "--no-print-directory", "-n", target, "PARALLEL="],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    [line] = [line for line in printed.splitlines() if "/pytest " in line]
    return shlex.split(line)


def test_make_quick_selects_the_unit_and_integration_tiers_less_what_is_marked_slow() -> None:
    command = make_command("quick")
    paths = [arg for arg in command[1:] if not arg.startswith("-") and arg != "not slow"]
    assert paths == ["tests/unit", "tests/integration"]
    assert command[command.index("-m") + 1] == "not slow"
    assert sum(arg.startswith(("-k", "--deselect", "--ignore")) for arg in command) == 0


def test_make_test_runs_every_tier() -> None:
    command = make_command("test")
    assert [arg for arg in command[1:] if not arg.startswith("-")] == []
    assert "-m" not in command


def slow_marked(owner: object) -> bool:
    marks = getattr(owner, "pytestmark", [])
    return any(mark.name == "slow" for mark in (marks if isinstance(marks, list) else [marks]))


def test_no_unit_test_is_marked_slow() -> None:
    # Given every unit test module, its classes and its test functions...
    marked = []
    for path in sorted((REPO_ROOT / "tests" / "unit").glob("test_*.py")):
        module = importlib.import_module(f"tests.unit.{path.stem}")
        owners = [(path.name, module)]
        for name, value in vars(module).items():
            if name.startswith(("test", "Test")) and callable(value):
                owners.append((f"{path.name}::{name}", value))
                owners += [(f"{path.name}::{name}::{n}", v) for n, v in vars(value).items()]
        marked += [name for name, owner in owners if slow_marked(owner)]
    # Then none is marked slow, so `make quick` runs them all.
    assert marked == []


@pytest.mark.parametrize(
    ("nodeid", "scope"),
    [
        ("tests/infra/test_access.py::test_x", "infra-syntheses"),
        ("tests/infra/test_nag.py::test_y[a]", "infra-syntheses"),
        ("tests/integration/test_ceph_immutability.py::test_z", "ceph"),
        ("tests/integration/test_promoter.py::test_w", "tests/integration/test_promoter.py"),
        ("tests/unit/test_layout.py::test_v", "tests/unit/test_layout.py"),
    ],
)
def test_a_worker_takes_a_module_or_a_shared_scope_whole(nodeid: str, scope: str) -> None:
    assert worker_scope(nodeid) == scope
