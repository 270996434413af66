"""The requirements of a run's wheels nobody can resolve (wheelgate.staging.unresolved): a
project a staged wheel requires, whatever its marker or extra, that is none of the run's own,
not on nightly's page of the closure, and not on the run's index already."""

from __future__ import annotations

from pathlib import Path

from wheelgate.core.wheelmeta import CoreMetadata, requirement_extras
from wheelgate.index.pages import IndexEntry, ProjectPage
from wheelgate.staging.local_artifacts import LocalArtifact
from wheelgate.staging.unresolved import Unresolved, unresolved_requirements

TIME = "2026-01-01T00:00:00.000000Z"


def metadata(*requires: str) -> bytes:
    lines = ["Metadata-Version: 2.1", "Name: x", "Version: 1.0"]
    return ("\n".join([*lines, *(f"Requires-Dist: {r}" for r in requires)]) + "\n\n").encode()


def wheel(project: str, *requires: str) -> LocalArtifact:
    filename = f"{project}-1.0-py3-none-any.whl"
    core = CoreMetadata(metadata(*requires), "0" * 64, None)
    return LocalArtifact(Path(filename), filename, project, 1, None, core)


def page(project: str, *filenames: str) -> ProjectPage:
    entries = tuple(IndexEntry(f, f"../{f}", "a" * 64, 1, TIME) for f in filenames)
    return ProjectPage(project, entries)


def test_requirement_extras_names_the_extras_a_project_is_required_under() -> None:
    content = metadata(
        "plain>=1",
        'Only_Extra; extra == "Test_All"',
        'only-extra; extra == "doc" and python_version < "3.12"',
        'both; extra == "x"',
        "both",
        'pywin32; sys_platform == "win32"',
        "not a requirement !!",
    )
    assert requirement_extras(content) == {
        "plain": frozenset(),
        "only-extra": frozenset({"test-all", "doc"}),
        "both": frozenset(),
        "pywin32": frozenset(),
    }


def test_a_project_neither_the_run_nor_nightly_holds_is_unresolved_whatever_its_marker() -> None:
    # Given an app requiring nightly's dep, its staged sibling, and three projects nobody holds
    app = wheel(
        "app",
        "dep>=1",
        "Sibling",
        "missing",
        'win-only; sys_platform == "win32"',
        'opt; extra == "test"',
    )
    other = wheel("other", "missing")
    closure = {
        "app": page("app"),
        "dep": page("dep", "dep-1.0-py3-none-any.whl"),
        "missing": page("missing"),
    }
    # When the requirements are checked
    found = unresolved_requirements([app, other, wheel("sibling")], closure)
    # Then each missing project is named with every wheel requiring it, extras as such
    assert found == (
        Unresolved("missing", ((app.filename, frozenset()), (other.filename, frozenset()))),
        Unresolved("opt", ((app.filename, frozenset({"test"})),)),
        Unresolved("win-only", ((app.filename, frozenset()),)),
    )
    assert found[1].describe("v2/x") == (
        "opt, required by app-1.0-py3-none-any.whl (extra test), is held by neither this run "
        "nor nightly's v2/x"
    )


def test_a_project_the_runs_index_already_names_is_held() -> None:
    app = wheel("app", "earlier-job")

    assert unresolved_requirements([app], {}) != ()
    assert unresolved_requirements([app], {}, held={"earlier-job"}) == ()


def test_an_sdist_requires_nothing_that_can_be_checked() -> None:
    sdist = LocalArtifact(Path("app-1.0.tar.gz"), "app-1.0.tar.gz", "app", 1, None, None)

    assert unresolved_requirements([sdist], {}) == ()
