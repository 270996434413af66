"""What the example release workflow's jobs hand each other (``wheelgate job``), and
``wheelgate rehearse``'s refusals before it starts anything: each names what is wrong."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from wheelgate.cli.main import main
from wheelgate.core.release_job import (
    Handover,
    HandoverError,
    JobResults,
    collect,
    pinned_requirements,
)

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
FAMILIES = {
    "projects": ["acme-widget", "acme-extras"],
    "install": ["acme-widget"],
    "build": "true",
    "pythons": ["3.11"],
    "tests": {"smoke": "python -c 'import acme_widget'"},
    "families": [{"index": "v1/cpu", "name": "cpu", "runner": "r", "tests": ["smoke"]}],
}


def test_each_installed_project_is_pinned_to_its_wheels_version() -> None:
    names = [
        "acme_widget-1.2.0-cp311-cp311-linux_x86_64.whl",
        "acme_widget-1.2.0-cp312-cp312-linux_x86_64.whl",
        "acme_extras-0.1-py3-none-any.whl",
        "notes.txt",
    ]
    assert pinned_requirements(names, ["Acme.Widget", "acme-extras"], "dist") == (
        "Acme.Widget==1.2.0",
        "acme-extras==0.1",
    )


def test_a_project_without_a_wheel_or_with_two_versions_is_named() -> None:
    with pytest.raises(HandoverError) as missing:
        pinned_requirements(["other-1.0-py3-none-any.whl"], ["acme-widget"], "dist")
    assert "no wheel of acme-widget in dist/ (the families file's install names it)" in str(
        missing.value
    )
    two = ["acme_widget-1.0-py3-none-any.whl", "acme_widget-1.1-py3-none-any.whl"]
    with pytest.raises(HandoverError) as versions:
        pinned_requirements(two, ["acme-widget"], "dist")
    assert "dist/ holds wheels of acme-widget in 2 versions (1.0, 1.1)" in str(versions.value)


def test_a_handover_reads_back_as_written_and_anything_else_is_named() -> None:
    handover = Handover("v1/cpu", ("a==1", "b==2"), "http://s/runs/1/v1/cpu/")
    assert handover.render() == "v1/cpu\na==1 b==2\nhttp://s/runs/1/v1/cpu/\n"
    assert Handover.parse(handover.render(), "x") == handover
    with pytest.raises(HandoverError) as raised:
        Handover.parse("v1/cpu\n2.9.0\n", "staged/cpu.txt")
    assert "staged/cpu.txt is not a build job's handover" in str(raised.value)


@pytest.mark.parametrize(
    ("requirements", "url", "named"),
    [
        ("torch==2.9.0 --extra-index-url=https://elsewhere/", "https://s/", "'--extra-index-url"),
        ("torch>=2.9", "https://s/", "'torch>=2.9' is not NAME==VERSION"),
        ("torch==2.*", "https://s/", "'torch==2.*' is not NAME==VERSION"),
        ("torch[cuda]==2.9.0", "https://s/", "'torch[cuda]==2.9.0' is not NAME==VERSION"),
        ("torch==2.9.0", "file:///home/x/wheels/", "'file:///home/x/wheels/' is not the run's"),
        ("torch==2.9.0", "-i", "'-i' is not the run's index URL"),
    ],
)
def test_a_handover_a_build_job_bent_is_refused_naming_the_token(
    requirements: str, url: str, named: str
) -> None:
    # Given a handover whose requirements or URL are not what job handover writes (a build
    # job writes the artifact; job install passes them to pip and uv as arguments)
    text = f"v1/cpu\n{requirements}\n{url}\n"
    # When a test job reads it, it is refused naming the token, before anything is installed
    with pytest.raises(HandoverError) as raised:
        Handover.parse(text, "staged/cpu.txt")
    assert str(raised.value).startswith("staged/cpu.txt: ")
    assert named in str(raised.value)


def test_a_local_version_pin_is_a_handover_too() -> None:
    # torch==2.9.0+rocm7.0 is the exact version the build left, as pinned_requirements writes it
    text = "v2/gfx94X-dcgpu\ntorch==2.9.0+rocm7.0 triton-rocm==3.5.0\nhttps://s/runs/1/\n"
    assert Handover.parse(text, "x").requirements == ("torch==2.9.0+rocm7.0", "triton-rocm==3.5.0")


def test_collection_gives_each_test_its_jobs_evidence_and_an_untested_family_a_line() -> None:
    jobs = {"cpu": [JobResults(("v1/cpu:smoke=passed@u", "v1/cpu:unit=failed@u"), "e.json")]}
    collected = collect({"cpu": "v1/cpu", "gpu": "v1/gpu"}, jobs, "skipped", "https://r")
    assert collected.tests == (
        "v1/cpu:smoke=passed@u",
        "v1/cpu:unit=failed@u",
        "v1/gpu:results=skipped@https://r",
    )
    assert collected.installed == ("v1/cpu:smoke=e.json", "v1/cpu:unit=e.json")
    assert collect({"gpu": "v1/gpu"}, {}, "failure", "u").tests == ("v1/gpu:results=failed@u",)
    with pytest.raises(HandoverError, match="nothing was staged"):
        collect({}, {}, "success", "u")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "wheelgate-families.json").write_text(json.dumps(FAMILIES))
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "acme_widget-1.2.0-py3-none-any.whl").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_job_handover_prints_the_familys_index_requirements_and_url(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["job", "handover", "--family", "cpu", "--index-url", "http://s/r/"]) == 0
    assert capsys.readouterr().out == "v1/cpu\nacme-widget==1.2.0\nhttp://s/r/\n"


def test_job_handover_names_a_missing_wheel_and_an_unknown_family(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "dist" / "acme_widget-1.2.0-py3-none-any.whl").unlink()
    assert main(["job", "handover", "--family", "cpu", "--index-url", "u"]) == 2
    assert "no wheel of acme-widget in dist/" in capsys.readouterr().err
    assert main(["job", "handover", "--family", "gpu", "--index-url", "u"]) == 2
    assert "--family: no family is named 'gpu' (the file names cpu)" in capsys.readouterr().err


def test_job_handover_names_install_when_the_file_names_no_project(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = {k: v for k, v in FAMILIES.items() if k not in ("install", "projects")}
    (repo / ".github" / "wheelgate-families.json").write_text(json.dumps(document))
    assert main(["job", "handover", "--family", "cpu", "--index-url", "u"]) == 2
    assert "'install' is missing: name the projects a test job installs" in (
        capsys.readouterr().err
    )


def test_job_test_refuses_a_python_that_is_not_the_venvs(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VIRTUAL_ENV", str(repo / "venv"))
    tests = json.dumps([{"name": "smoke", "run": "true"}])
    args = ["job", "test", "--tests", tests, "--index", "v1/cpu", "--run-url", "u"]
    assert main([*args, "--output", "out.txt"]) == 2
    assert "not the venv's" in capsys.readouterr().err
    assert not (repo / "out.txt").exists()


def test_job_test_writes_a_line_per_test_and_fails_when_one_did_not_pass(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = repo / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to("/bin/true")
    monkeypatch.setenv("VIRTUAL_ENV", str(venv))
    monkeypatch.setenv("PATH", f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    tests = json.dumps([{"name": "smoke", "run": "true"}, {"name": "unit", "run": "exit 3"}])
    args = ["job", "test", "--tests", tests, "--index", "v1/cpu", "--run-url", "https://r"]
    assert main([*args, "--output", "results/cpu.txt"]) == 1
    assert (repo / "results" / "cpu.txt").read_text() == (
        "v1/cpu:smoke=passed@https://r\nv1/cpu:unit=failed@https://r\n"
    )


def test_job_install_refuses_a_venv_that_exists_and_a_bad_handover(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "staged.txt").write_text("v1/cpu\n")
    (repo / "venv").mkdir()
    args = ["job", "install", "--installer", "pip", "--python", "python3", "--evidence", "e.json"]
    assert main([*args, "--venv", "new", "--handover", "staged.txt"]) == 2
    assert "staged.txt is not a build job's handover" in capsys.readouterr().err
    (repo / "staged.txt").write_text(Handover("v1/cpu", ("a==1",), "https://s/").render())
    assert main([*args, "--venv", "venv", "--handover", "staged.txt"]) == 2
    assert "--venv venv exists" in capsys.readouterr().err


#: A runner's own pip and uv settings, which an install from the run's index must not read.
RUNNER_SETTINGS = {
    "PIP_CONFIG_FILE": "/etc/runner/pip.conf",
    "PIP_EXTRA_INDEX_URL": "https://elsewhere/simple/",
    "PIP_FIND_LINKS": "/srv/wheels",
    "UV_INDEX": "https://elsewhere/simple/",
    "UV_FIND_LINKS": "/srv/wheels",
}


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_job_install_installs_from_the_runs_index_alone_whatever_the_runner_set(
    repo: Path, monkeypatch: pytest.MonkeyPatch, installer: str
) -> None:
    # Given a runner whose pip and uv settings add other indexes, and a handover
    for name, value in RUNNER_SETTINGS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr("wheelgate.cli.job._record", lambda python, evidence: None)
    (repo / "staged.txt").write_text(Handover("v1/cpu", ("a==1",), "https://s/r/").render())
    ran: list[tuple[list[str], dict[str, str] | None]] = []

    def run(command: list[str], env: dict[str, str] | None = None, check: bool = False) -> object:
        ran.append((command, env))
        return type("Done", (), {"returncode": 0})()

    monkeypatch.setattr("wheelgate.cli.job.subprocess.run", run)
    # When the test job installs the handover's requirements
    args = ["job", "install", "--installer", installer, "--python", "python3", "--venv", "v"]
    assert main([*args, "--handover", "staged.txt", "--evidence", "e.json"]) == 0
    # Then the install from the run's index ran with none of them, and no configuration file
    (command, env) = next((c, e) for c, e in ran if "--index-url" in c)
    assert command[-3:] == ["--index-url", "https://s/r/", "a==1"]
    assert env is not None
    assert not {"PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "UV_INDEX", "UV_FIND_LINKS"} & set(env)
    assert (env["PIP_CONFIG_FILE"], env["UV_NO_CONFIG"]) == (os.devnull, "1")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--family", "gpu"], "--family: no family is named 'gpu' (the file names cpu)"),
        (["--family", "cpu", "--python", "3.9"], "--python 3.9 is not one of the family's (3.11)"),
    ],
)
def test_rehearse_refuses_bad_input_before_it_starts_anything(
    repo: Path, capsys: pytest.CaptureFixture[str], options: list[str], message: str
) -> None:
    assert main(["rehearse", *options, "--dist", "dist"]) == 2
    assert message in capsys.readouterr().err


def test_rehearse_names_a_python_of_the_family_that_is_not_on_path(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(repo))
    assert main(["rehearse", "--family", "cpu", "--installer", "pip"]) == 2
    assert "there is no python3.11 on PATH" in capsys.readouterr().err


def test_rehearse_names_a_missing_local_extra_before_it_builds(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from wheelgate.local import extra

    def missing() -> None:
        raise extra.LocalExtraMissing("moto is missing: pip install 'wheelgate[local]'")

    document = {**FAMILIES, "build": "touch built", "pythons": [PYTHON]}
    (repo / ".github" / "wheelgate-families.json").write_text(json.dumps(document))
    monkeypatch.setattr(extra, "require_local_extra", missing)
    (repo / "bin").mkdir()
    (repo / "bin" / f"python{PYTHON}").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", f"{repo / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert main(["rehearse", "--family", "cpu", "--installer", "pip"]) == 2
    assert "moto is missing: pip install 'wheelgate[local]'" in capsys.readouterr().err
    assert not (repo / "built").exists()
