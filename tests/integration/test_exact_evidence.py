"""Evidence is exact whichever installer a test used: a requirements line that allows several
files vouches for none, pins name one file per distribution for the test's target (markers
evaluated for it), and the environment a test installed into, with uv or pip, vouches for
exactly the staged wheels it holds. Real pip and uv, run hermetically, against `wheelgate
local` and its promoter."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LocalProcess
from tests.integration.installs import evidence, pip, pip_report, uv_install
from tests.integration.test_cycle import run_ok
from wheelgate.local.sample_wheels import build_wheel

# Real pip and uv installs into fresh virtualenvs: `make test` only.
pytestmark = pytest.mark.slow

INDEX = "v2/exact"
URL = "https://github.com/ROCm/TheRock/actions/runs/1"
#: This machine's Python is 3.11 (the guide): its wheels install here, 3.12's do not.
CP311 = "cp311-cp311-linux_x86_64"
#: A 3.12 wheel tagged as most manylinux wheels are (PEP 600 name and legacy alias).
CP312 = "cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def stage(local: LocalProcess, run: str, commit: str, *wheels: Path) -> str:
    staged = run_ok(
        local, "stage", "--run-id", run, "--index", INDEX, "--commit", commit, *map(str, wheels)
    )
    return str(json.loads(staged)["index_url"])


def seed_nightly(
    local: LocalProcess, venv_factory: Any, run: str, commit: str, *wheels: Path
) -> None:
    """Release ``wheels`` to nightly, so runs' indexes offer them as dependencies (their test
    installs them from the run's index with pip's report)."""
    index_url = stage(local, run, commit, *wheels)
    report = pip_report(venv_factory, index_url, wheels)
    run_ok(
        local,
        *("report", "--run-id", run, "--commit", commit, "--test", f"{INDEX}:seed=passed"),
        *evidence(INDEX, report, test="seed"),
    )
    assert local.wheelgate("status", run, "--wait", "60").returncode == 0


def report(
    local: LocalProcess, run: str, commit: str, *evidence: tuple[str, Path]
) -> subprocess.CompletedProcess[str]:
    """``wheelgate report`` with each ``(test, evidence file)`` as a passed test."""
    args = ["report", "--run-id", run, "--commit", commit]
    for test, path in evidence:
        args += ["--test", f"{INDEX}:{test}=passed@{URL}", "--installed", f"{INDEX}:{test}={path}"]
    return local.wheelgate(*args)


def decision(local: LocalProcess, run: str) -> dict[str, Any]:
    status = local.wheelgate("status", run, "--wait", "60")
    return dict(json.loads(status.stdout))


def install_pinned(venv: Path, index_url: str, requirements: Path) -> None:
    """``pip install --require-hashes -r requirements`` into ``venv``, which must succeed."""
    result = pip(
        venv, "install", "--require-hashes", "--index-url", index_url, "-r", str(requirements)
    )
    assert result.returncode == 0, result.stderr


def rejected_untested(
    local: LocalProcess, run: str, commit: str, test: str, evidence: Path, untested: Path
) -> str:
    """Report ``run`` with ``test``'s ``evidence`` alone; assert the promoter rejects it as
    ``untested-file`` for ``untested`` alone, with nightly byte-identical. The message."""
    before = local.nightly_versions()
    reported = report(local, run, commit, (test, evidence))
    assert reported.returncode == 0, reported.stderr
    record = decision(local, run)
    assert (record["state"], record["reason"]) == ("rejected", "untested-file"), record
    assert local.nightly_versions() == before
    message = str(record["message"])
    assert f"1 file(s) whose bytes no passed test installed: {untested.name};" in message
    return message


def app_wheels(directory: Path, name: str, **options: Any) -> tuple[Path, Path]:
    """The cp311 and cp312 wheels of one release of ``name``, differing as two builds do: in
    their tags and their extension's bytes."""
    extra = options.pop("files", {})
    wheels = tuple(
        build_wheel(
            directory / tag[:5],
            name,
            "1.0",
            tag=tag,
            files={f"{name.replace('-', '_')}/_core.so": f"ELF for {tag[:5]}".encode(), **extra},
            **options,
        )
        for tag in (CP311, CP312)
    )
    return wheels[0], wheels[1]


def test_a_line_allowing_the_cp311_and_cp312_wheels_vouches_for_neither(
    local: LocalProcess, venv_factory: Any, tmp_path: Path
) -> None:
    # Given a run that staged its release for Python 3.11 and 3.12...
    cp311, cp312 = app_wheels(tmp_path, "ex-two")
    index_url = stage(local, "ex-two", "e1" * 20, cp311, cp312)
    # ...and a 3.11 test that installed from a requirements line allowing both wheels
    # (what pinning every file of a release writes)
    hashes = (f"--hash=sha256:{sha256(wheel)}" for wheel in (cp311, cp312))
    allowing_both = tmp_path / "both.txt"
    allowing_both.write_text("# both\nex-two==1.0 \\\n    " + " \\\n    ".join(hashes) + "\n")
    install_pinned(venv_factory("ex-two-both"), index_url, allowing_both)
    # When it is reported with that file, Then report refuses it, naming the line and saying
    # how to get exact evidence, and writes no manifest
    refused = report(local, "ex-two", "e1" * 20, ("py311", allowing_both))
    assert refused.returncode == 2
    assert f"{allowing_both}:2: ex-two==1.0 has 2 hashes" in refused.stderr
    assert "pip install --report" in refused.stderr
    assert "wheelgate pins" in refused.stderr
    status = local.wheelgate("status", "ex-two")
    assert "no manifest for this run yet" in json.loads(status.stdout)["message"]

    # When the test installs from the run's pins for itself instead (one file each)...
    pins = tmp_path / "pins.txt"
    pins.write_text(run_ok(local, "pins", "--run-id", "ex-two", "--index", INDEX))
    assert f"--hash=sha256:{sha256(cp311)}" in pins.read_text()
    assert sha256(cp312) not in pins.read_text()
    install_pinned(venv_factory("ex-two-pins"), index_url, pins)
    # Then its evidence is the cp311 wheel alone, and the promoter refuses to release the
    # cp312 wheel no test installed (the whole run, as sets are all or nothing)
    rejected_untested(local, "ex-two", "e1" * 20, "py311", pins, untested=cp312)


def test_pins_for_python_3_12_made_on_3_11_install_with_uv_for_3_12(
    local: LocalProcess, venv_factory: Any, tmp_path: Path
) -> None:
    # Given nightly holds ex-dep, which the app needs on Python 3.12 and up only, and
    # ex-old, which it needs below 3.12
    dep = build_wheel(tmp_path / "nightly", "ex-dep", "1.0")
    old = build_wheel(tmp_path / "nightly", "ex-old", "1.0")
    seed_nightly(local, venv_factory, "ex-mk-seed", "e2" * 20, dep, old)
    requires = ['ex-dep>=1; python_version >= "3.12"', 'ex-old; python_version < "3.12"']
    cp311, cp312 = app_wheels(tmp_path / "run", "ex-mk", requires=requires)
    # ...and a run that also staged a project with a 3.11 wheel only
    only311 = build_wheel(tmp_path / "run", "ex-only311", "1.0", tag=CP311)
    index_url = stage(local, "ex-mk", "e3" * 20, cp311, cp312, only311)
    pins = ("pins", "--run-id", "ex-mk", "--index", INDEX)

    # When pins are asked for Python 3.12 on this 3.11 machine, the run as a whole fails
    # (ex-only311 has no 3.12 wheel)...
    whole = local.wheelgate(*pins, "--python-version", "3.12")
    assert whole.returncode == 2
    assert "ex-only311" in whole.stderr
    # ...and a project the run did not stage is a usage error naming what it staged
    unknown = local.wheelgate(*pins, "--python-version", "3.12", "--project", "ex-nope")
    assert unknown.returncode == 2
    assert "'ex-nope' is not a project of the run here; it staged ex-mk, ex-only311" in (
        unknown.stderr
    )
    # ...but the subset of ex-mk is pinned for 3.12: its cp312 wheel, ex-dep which pip
    # evaluating markers for 3.11 would miss, and not ex-old, which only 3.11 needs
    text = run_ok(local, *pins, "--python-version", "3.12", "--project", "ex-mk")
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert lines == [
        "ex-dep==1.0 \\",
        f"    --hash=sha256:{sha256(dep)}",
        "ex-mk==1.0 \\",
        f"    --hash=sha256:{sha256(cp312)}",
    ]
    requirements = tmp_path / "pins-312.txt"
    requirements.write_text(text)
    # Then uv installs them with --require-hashes for 3.12 (it refuses a file that leaves out
    # a distribution 3.12 needs: "no trusted hash")
    venv = venv_factory("ex-mk-uv312")
    result = uv_install(
        venv,
        *("--require-hashes", "--python-version", "3.12", "--index-url", index_url),
        *("-r", str(requirements)),
    )
    assert result.returncode == 0, result.stderr
    assert "+ ex-dep==1.0" in result.stderr
    assert "ex-old" not in result.stderr

    # And the preset for a glibc 2.28 machine takes the manylinux_2_17 wheel, as such a
    # machine does, where pip's literal --platform manylinux_2_28_x86_64 refuses it
    preset = run_ok(local, *pins, "--target", "cp312-manylinux_2_28_x86_64", "--project", "ex-mk")
    assert [line for line in preset.splitlines() if not line.startswith("#")] == lines
    literal = local.wheelgate(
        *pins, "--python-version", "3.12", "--platform", "manylinux_2_28_x86_64"
    )
    assert literal.returncode == 2
    assert "No matching distribution found for ex-mk==1.0" in literal.stderr
    assert "pip takes --platform literally" in literal.stderr


def installed_environment(local: LocalProcess, venv: Path, output: Path) -> Path:
    """``wheelgate installed`` for the environment of ``venv``."""
    run_ok(local, "installed", "--python", str(venv / "bin" / "python"), "-o", str(output))
    return output


def test_the_uv_route_releases_exactly_the_wheels_uv_installed(
    local: LocalProcess, venv_factory: Any, tmp_path: Path
) -> None:
    # Given a run whose release has a 3.11 and a 3.12 wheel, each with what installers
    # rewrite or add: a #!python script, data and header files, a purelib module and a
    # console entry point
    files = {
        "{data}/scripts/ex-uv-tool": b"#!python\nprint('tool')\n",
        "{data}/data/share/ex-uv/readme.txt": b"hello\n",
        "{data}/headers/ex_uv.h": b"int ex_uv;\n",
        "{data}/purelib/ex_uv_extra.py": b"EXTRA = 1\n",
        "{dist_info}/entry_points.txt": b"[console_scripts]\nex-uv-cli = ex_uv:main\n",
    }
    cp311, cp312 = app_wheels(tmp_path, "ex-uv", files=files)
    index_url = stage(local, "ex-uv", "e4" * 20, cp311, cp312)
    # When a 3.11 test installs with uv (no pins, no report), and a 3.12 test with uv for 3.12
    envs = {}
    for test, options in (("py311", ()), ("py312", ("--python-version", "3.12"))):
        venv = venv_factory(f"ex-uv-{test}")
        result = uv_install(venv, *options, "--index-url", index_url, "ex-uv==1.0")
        assert result.returncode == 0, result.stderr
        envs[test] = installed_environment(local, venv, tmp_path / f"{test}.json")
    # ...and another 3.11 test installs the same release with pip (which byte-compiles)
    venv = venv_factory("ex-uv-pip")
    result = pip(venv, "install", "--index-url", index_url, "ex-uv==1.0")
    assert result.returncode == 0, result.stderr
    envs["pip311"] = installed_environment(local, venv, tmp_path / "pip311.json")

    # Then the 3.11 environment alone vouches for the cp311 wheel alone: the cp312 wheel of
    # the same release is not released on it
    rejected_untested(local, "ex-uv", "e4" * 20, "py311", envs["py311"], untested=cp312)
    # And with every test's environment, each wheel ships on the tests that installed it
    reported = report(local, "ex-uv", "e4" * 20, *envs.items())
    assert reported.returncode == 0, reported.stderr
    assert "warning" not in reported.stderr
    record = decision(local, "ex-uv")
    assert record["state"] == "promoted", record
    evidence = {f["filename"]: f["evidence"] for f in record["sets"][0]["files"]}
    assert evidence == {cp311.name: ["py311", "pip311"], cp312.name: ["py312"]}


def test_an_environment_whose_files_changed_after_the_install_vouches_for_nothing(
    local: LocalProcess, venv_factory: Any, tmp_path: Path
) -> None:
    # Given a test that installed the run's wheel with uv, then changed one of its files
    wheel = build_wheel(tmp_path, "ex-edit", "1.0", module_source='BUILD = "staged"\n')
    index_url = stage(local, "ex-edit", "e5" * 20, wheel)
    venv = venv_factory("ex-edit")
    result = uv_install(venv, "--index-url", index_url, "ex-edit==1.0")
    assert result.returncode == 0, result.stderr
    [module] = venv.glob("lib/python*/site-packages/ex_edit/__init__.py")
    module.write_text('BUILD = "patched"\n')
    environment = installed_environment(local, venv, tmp_path / "env.json")
    # When it is reported, Then report refuses it, naming which file differs, and vouches
    # for nothing: the test ran on bytes no file of the run's index holds
    reported = local.wheelgate(
        *("report", "--run-id", "ex-edit", "--commit", "e5" * 20, "--dry-run"),
        *("--test", f"{INDEX}:smoke=passed", "--installed", f"{INDEX}:smoke={environment}"),
    )
    assert reported.returncode == 0, reported.stderr
    assert re.search(
        r"foreign-bytes: .*ex-edit 1\.0 is installed, but it is none of the files the run's "
        r"index offers for it .*ex_edit/__init__\.py has other bytes",
        reported.stderr,
    ), reported.stderr
    [test] = json.loads(reported.stdout)["sets"][0]["tests"]
    assert test["installed"] == []
    assert [(r["reason"], r["filename"]) for r in test["refused"]] == [
        ("foreign-bytes", wheel.name)
    ]
