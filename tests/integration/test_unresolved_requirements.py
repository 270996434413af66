"""``wheelgate stage`` names each project a staged wheel requires (any marker or extra) that
neither the run nor nightly holds, and points to deps.yml mirroring; with ``--strict`` it
exits 2 and stages nothing (the real command against ``wheelgate local``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LocalProcess
from tests.integration.test_operator_view import decide
from wheelgate.cli.common import EXIT_OK, EXIT_USAGE
from wheelgate.local.sample_wheels import build_wheel

# Wheelgate local and the command in processes of their own: `make test` only.
pytestmark = pytest.mark.slow

INDEX = "unres/a"
COMMIT = "c" * 40
REQUIRES = [
    "unres-dep>=1",  # nightly holds it
    "unres-sib",  # staged with the app
    "unres-missing>=2",  # nobody holds it
    'unres-opt; extra == "test"',  # nobody, and only under an extra
    'unres-win; sys_platform == "win32"',  # nobody, and under a marker that never applies here
]
POINTER = 'mirror it into nightly with deps.yml (docs/deps.md, "A dependency nobody can resolve")'


@pytest.fixture(scope="module")
def wheels(
    local: LocalProcess, tmp_path_factory: pytest.TempPathFactory, venv_factory: Any
) -> tuple[Path, Path]:
    """Given unres-dep promoted into nightly's INDEX, and an app requiring REQUIRES with its
    sibling, unres-sib, beside it."""
    work = tmp_path_factory.mktemp("unres")
    decide(local, venv_factory, "unres-1", INDEX, build_wheel(work, "unres-dep", "1.0"), "passed")
    app = build_wheel(work / "run", "unres-app", "1.0", requires=REQUIRES)
    return app, build_wheel(work / "run", "unres-sib", "1.0")


def stage(local: LocalProcess, run_id: str, *argv: str) -> tuple[int, list[str]]:
    done = local.wheelgate("stage", "--run-id", run_id, "--index", INDEX, "--commit", COMMIT,
                           *argv)  # fmt: skip
    return done.returncode, done.stderr.splitlines()


def keys_of(local: LocalProcess, run_id: str) -> list[str]:
    """Every object of staging whose key names ``run_id`` (its files, pages and history)."""
    pages = local.client("s3").get_paginator("list_objects_v2")
    listed = pages.paginate(Bucket=local.env["WHEELGATE_STAGING_BUCKET"])
    return [o["Key"] for page in listed for o in page.get("Contents", ()) if run_id in o["Key"]]


def test_stage_warns_of_each_project_nobody_holds_and_points_to_mirroring(
    local: LocalProcess, wheels: tuple[Path, Path]
) -> None:
    app, sibling = wheels
    # When the app and its sibling are staged
    code, err = stage(local, "unres-warn", str(app), str(sibling))
    # Then they are staged, with a line for each project neither the run nor nightly holds
    assert code == EXIT_OK, err
    warnings = [line for line in err if line.startswith("wheelgate stage: warning: ")]
    held_by_none = f"is held by neither this run nor nightly's {INDEX}"
    assert warnings[:3] == [
        f"wheelgate stage: warning: unres-missing, required by {app.name}, {held_by_none}",
        f"wheelgate stage: warning: unres-opt, required by {app.name} (extra test), {held_by_none}",
        f"wheelgate stage: warning: unres-win, required by {app.name}, {held_by_none}",
    ]
    assert len(warnings) == 4
    assert warnings[-1].endswith(POINTER)
    assert any(app.name in key for key in keys_of(local, "unres-warn"))


def test_with_strict_stage_exits_2_and_stages_nothing(
    local: LocalProcess, wheels: tuple[Path, Path]
) -> None:
    app, sibling = wheels
    # When the same files are staged with --strict
    code, err = stage(local, "unres-strict", "--strict", str(app), str(sibling))
    # Then the command refuses, naming each project, and nothing of the run is in staging
    assert code == EXIT_USAGE, err
    assert err[0].startswith(f"wheelgate stage: error: unres-missing, required by {app.name}, is")
    assert len([line for line in err if "is held by neither" in line]) == 3
    assert err[-1].startswith("wheelgate stage: error: nothing was staged (--strict)")
    assert err[-1].endswith(POINTER)
    assert keys_of(local, "unres-strict") == []


def test_a_project_an_earlier_call_of_the_run_staged_is_held_by_the_run(
    local: LocalProcess, wheels: tuple[Path, Path], tmp_path: Path
) -> None:
    # Given a run whose first build job staged unres-sib
    _, sibling = wheels
    assert stage(local, "unres-jobs", str(sibling))[0] == EXIT_OK
    # When its second job stages a wheel requiring it (and nightly's unres-dep), strictly
    needs = build_wheel(tmp_path, "unres-user", "1.0", requires=["unres-sib", "unres-dep"])
    code, err = stage(local, "unres-jobs", "--strict", str(needs))
    # Then it is staged without a word
    assert code == EXIT_OK, err
    assert not [line for line in err if "unres" in line and "held" in line]
