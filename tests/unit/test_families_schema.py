"""The families file's keys: what is a project's own (the projects a test installs,
``install``; the build jobs' runner, ``build_runner``; the families a pull request builds,
``dev_families``) and each family's, each refused with a message naming the key when it is
wrong."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from wheelgate.core.families import DEFAULT_BUILD_RUNNER, FamiliesError, parse_families

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = json.loads((REPO_ROOT / "examples" / "github" / "wheelgate-families.json").read_text())


def without(*keys: str) -> dict[str, Any]:
    return {k: v for k, v in EXAMPLE.items() if k not in keys}


def test_the_example_names_what_a_test_installs_the_build_runner_and_the_dev_families() -> None:
    families = parse_families(EXAMPLE)
    assert families.install == ("torch",)
    assert [b["runner"] for b in families.build_matrix()] == ["ubuntu-24.04"] * 4
    assert [f.name for f in families.dev().families] == ["gfx94X-dcgpu"]


def test_install_defaults_to_the_projects_and_the_rest_to_their_defaults() -> None:
    families = parse_families(without("install", "build_runner", "dev_families"))
    assert families.install == ("torch",)
    assert families.build_runner == DEFAULT_BUILD_RUNNER
    # a pull request builds the first family
    assert [f.name for f in families.dev().families] == [EXAMPLE["families"][0]["name"]]


def test_the_rehearsal_of_one_family_keeps_what_it_installs() -> None:
    families = parse_families(EXAMPLE).named("gfx950-dcgpu")
    assert (families.install, families.build_runner) == (("torch",), "ubuntu-24.04")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(install=[]), "install must name at least one project"),
        (lambda d: d.update(install="torch"), "install must be a list of project names"),
        (lambda d: d.update(install=["torch vision"]), "install: 'torch vision' is not a project"),
        (
            lambda d: d.update(install=["jax"]),
            "install: 'jax' is not one of projects (torch), the projects a run releases",
        ),
        (lambda d: d.update(install=["torch", "Torch"]), "install names a project twice"),
        (lambda d: d.update(build_runner=""), "build_runner must be a non-empty string"),
        (lambda d: d.update(dev_families=[]), "dev_families must be a non-empty list"),
        (
            lambda d: d.update(dev_families=["gfx9000"]),
            "dev_families: 'gfx9000' is not the name of a family (the file names gfx94X-dcgpu",
        ),
        (
            lambda d: d.update(dev_families=["gfx94X-dcgpu"] * 2),
            "dev_families names a family twice",
        ),
        (lambda d: d.update(instal=["torch"]), "the families file: unknown key 'instal'"),
        (
            lambda d: d["families"][1].update(index="v2/gfx94X-dcgpu"),
            "families[1].index: 'v2/gfx94X-dcgpu' is given twice",
        ),
        (
            lambda d: d["families"][0].update(tests=["smoke", "perf"]),
            "families[0].tests: 'perf' is not one of tests",
        ),
        (lambda d: d["families"][0].update(runnr="x"), "families[0]: unknown key 'runnr'"),
        (lambda d: d.update(pythons=["3"]), "pythons: '3' is not a Python version"),
        (lambda d: d["families"][0].update(index="/v2"), "families[0].index: "),
    ],
    ids=[
        "empty-install",
        "install-not-a-list",
        "install-bad-name",
        "install-not-released",
        "install-twice",
        "empty-build-runner",
        "empty-dev-families",
        "unknown-dev-family",
        "dev-family-twice",
        "misspelt-key",
        "index-twice",
        "unknown-test",
        "family-key-typo",
        "bad-python",
        "bad-index",
    ],
)
def test_a_bad_key_is_refused_naming_it(
    change: Callable[[dict[str, Any]], object], message: str
) -> None:
    document = json.loads(json.dumps(EXAMPLE))
    change(document)
    with pytest.raises(FamiliesError) as raised:
        parse_families(document)
    assert message in str(raised.value)


def test_install_without_projects_is_taken_as_it_is() -> None:
    families = parse_families({**without("projects"), "install": ["jax", "jaxlib"]})
    assert (families.projects, families.install) == ((), ("jax", "jaxlib"))


def test_a_file_naming_no_project_reads_as_an_earlier_copy_wrote_it() -> None:
    # wheelgate job handover refuses it (tests/unit/test_release_job.py); the matrices read
    families = parse_families(without("install", "projects"))
    assert (families.projects, families.install) == ((), ())


def test_families_dev_prints_only_the_families_a_pull_request_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from wheelgate.cli.main import main

    document = {**EXAMPLE, "dev_families": ["gfx950-dcgpu", "gfx120X-all"]}
    (tmp_path / "families.json").write_text(json.dumps(document))
    monkeypatch.delenv("WHEELGATE_ALLOWED_INDEXES", raising=False)
    assert main(["families", str(tmp_path / "families.json"), "--dev"]) == 0
    build = json.loads(capsys.readouterr().out.splitlines()[0].removeprefix("build="))
    assert [(b["name"], b["runner"]) for b in build] == [
        ("gfx950-dcgpu", "ubuntu-24.04"),
        ("gfx120X-all", "ubuntu-24.04"),
    ]
