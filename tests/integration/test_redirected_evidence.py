"""Evidence that cannot be redirected: what a test installed is held to bytes, never to what a
run page links or what a wheel's RECORD claims.

The attacker is one run's build job. Its role may write anything under staging's ``runs/``:
new wheels, and its run's pages in place (the IAM evaluator shows both:
``tests/infra/test_iam_matrix.py``, rows ``staging runs/`` and ``staging runs/ page``, and
``test_a_runs_index_pages_are_updated_in_place_by_the_build_role_alone``). So here it writes
what that role may: a wheel whose RECORD describes an honest build, and run pages that point
a test's install at another run's bytes.
Real pip and uv, run hermetically, against ``wheelgate local`` and its promoter.
"""

from __future__ import annotations

import dataclasses
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LocalProcess
from tests.integration.installs import pip, uv_install
from tests.integration.test_exact_evidence import (
    INDEX,
    URL,
    installed_environment,
    seed_nightly,
    sha256,
    stage,
)
from wheelgate.core.layout import PAGES, STAGING
from wheelgate.index.pages import parse_project_json, render_project_html, render_project_json
from wheelgate.local.sample_wheels import build_wheel

# Real pip and uv installs into fresh virtualenvs: `make test` only.
pytestmark = pytest.mark.slow


def lying_copy(honest: Path, directory: Path, module: str, source: bytes) -> Path:
    """``honest`` with other bytes for member ``module`` and the very same RECORD: a wheel
    whose RECORD describes the honest build while it installs other code."""
    directory.mkdir(parents=True)
    lying = directory / honest.name
    with zipfile.ZipFile(honest) as given, zipfile.ZipFile(lying, "w") as written:
        for info in given.infolist():
            data = source if info.filename == module else given.read(info)
            written.writestr(info, data)
    return lying


def redirect_run_page(local: LocalProcess, run: str, project: str, to_run: str, to: Path) -> None:
    """What the attacking build job writes: run ``run``'s page of ``project`` (HTML and JSON)
    linking, for ``to``'s file name, run ``to_run``'s staged copy of ``to`` instead."""
    s3 = local.client("s3")
    bucket = local.env["WHEELGATE_STAGING_BUCKET"]
    html_key = STAGING.run_pages_prefix(run) + PAGES.project_page(INDEX, project)
    json_key = STAGING.run_pages_prefix(run) + PAGES.project_page(INDEX, project, json=True)
    page = parse_project_json(s3.get_object(Bucket=bucket, Key=json_key)["Body"].read())
    other = local.staging_url + STAGING.artifact(to_run, INDEX, to.name).replace("+", "%2B")
    entries = tuple(
        dataclasses.replace(e, url=other, sha256=sha256(to), size=to.stat().st_size)
        if e.filename == to.name
        else e
        for e in page.entries
    )
    redirected = dataclasses.replace(page, entries=entries)
    assert redirected != page, f"{project}'s page of run {run} does not list {to.name}"
    for key, body, kind in (
        (html_key, render_project_html(redirected), "text/html"),
        (json_key, render_project_json(redirected), "application/vnd.pypi.simple.v1+json"),
    ):
        s3.put_object(Bucket=bucket, Key=key, Body=body.encode(), ContentType=kind)


def report(local: LocalProcess, run: str, commit: str, evidence_file: Path) -> Any:
    return local.wheelgate(
        *("report", "--run-id", run, "--commit", commit),
        *("--test", f"{INDEX}:smoke=passed@{URL}", "--installed", f"{INDEX}:smoke={evidence_file}"),
    )


def decision(local: LocalProcess, run: str) -> dict[str, Any]:
    status = local.wheelgate("status", run, "--wait", "60")
    return dict(json.loads(status.stdout))


def test_a_wheel_whose_record_lies_about_its_members_is_never_released_as_tested(
    local: LocalProcess, venv_factory: Any, tmp_path: Path
) -> None:
    # Given run A's honest wheel, and run B's build job staging, under the same name, a wheel
    # whose RECORD is A's while its module holds other code...
    honest = build_wheel(tmp_path / "a", "rd-liar", "1.0", module_source='BUILD = "honest"\n')
    stage(local, "rd-liar-a", "a1" * 20, honest)
    lying = lying_copy(honest, tmp_path / "b", "rd_liar/__init__.py", b'BUILD = "evil"\n')
    assert sha256(lying) != sha256(honest)
    index_url = stage(local, "rd-liar-b", "b1" * 20, lying)
    # ...and rewriting run B's page so that B's test installs A's honest file
    redirect_run_page(local, "rd-liar-b", "rd-liar", "rd-liar-a", honest)
    venv = venv_factory("rd-liar")
    result = uv_install(venv, "--index-url", index_url, "rd-liar==1.0")
    assert result.returncode == 0, result.stderr
    [module] = venv.glob("lib/python*/site-packages/rd_liar/__init__.py")
    assert module.read_text() == 'BUILD = "honest"\n', "the redirect did not take"
    environment = installed_environment(local, venv, tmp_path / "env.json")
    before = local.nightly_versions()
    # When B's passed test is reported with that environment
    reported = report(local, "rd-liar-b", "b1" * 20, environment)
    # Then report refuses the lying wheel as evidence, and the promoter rejects the run with
    # that reason before any copy: nightly is byte-identical
    assert reported.returncode == 0, reported.stderr
    assert "record-mismatch" in reported.stderr
    assert "rd_liar/__init__.py has other bytes than RECORD says" in reported.stderr
    record = decision(local, "rd-liar-b")
    assert (record["state"], record["reason"]) == ("rejected", "record-mismatch"), record
    assert lying.name in record["message"]
    assert local.nightly_versions() == before


def test_a_test_that_ran_on_another_runs_dependency_does_not_vouch(
    local: LocalProcess, venv_factory: Any, tmp_path: Path
) -> None:
    # Given nightly's rd-dep 1.0, run A's rebuild of it (other bytes, never released), and
    # run B's app that needs rd-dep
    nightly_dep = build_wheel(tmp_path / "n", "rd-dep", "1.0", module_source='BUILD = "n"\n')
    seed_nightly(local, venv_factory, "rd-dep-seed", "c1" * 20, nightly_dep)
    rebuilt = build_wheel(tmp_path / "a", "rd-dep", "1.0", module_source='BUILD = "a"\n')
    stage(local, "rd-dep-a", "c2" * 20, rebuilt)
    app = build_wheel(tmp_path / "b", "rd-app", "1.0", requires=["rd-dep>=1"])
    index_url = stage(local, "rd-dep-b", "c3" * 20, app)
    # ...whose build job rewrites B's rd-dep page to link A's rebuild
    redirect_run_page(local, "rd-dep-b", "rd-dep", "rd-dep-a", rebuilt)
    venv = venv_factory("rd-dep")
    installed = venv / "installed.json"
    result = pip(
        venv, "install", "--report", str(installed), "--index-url", index_url, "rd-app==1.0"
    )
    assert result.returncode == 0, result.stderr
    got = {i["download_info"]["archive_info"]["hashes"]["sha256"] for i in _installs(installed)}
    assert sha256(rebuilt) in got, "the redirect did not take"
    before = local.nightly_versions()
    # When B's passed test is reported with pip's report
    reported = report(local, "rd-dep-b", "c3" * 20, installed)
    # Then the dependency's bytes are refused as foreign, naming the file and where it came
    # from, and the run is rejected before any copy
    assert reported.returncode == 0, reported.stderr
    assert "foreign-bytes" in reported.stderr
    assert f"rd-dep-a/{INDEX}/{rebuilt.name}" in reported.stderr
    record = decision(local, "rd-dep-b")
    assert (record["state"], record["reason"]) == ("rejected", "foreign-bytes"), record
    assert rebuilt.name in record["message"]
    assert local.nightly_versions() == before

    # And pins for any target refuse to pin the smuggled file (exit 2, naming it)
    for target in ((), ("--target", "cp312-manylinux_2_28_x86_64")):
        pins = local.wheelgate("pins", "--run-id", "rd-dep-b", "--index", INDEX, *target)
        assert pins.returncode == 2, pins.stdout
        assert "neither a file the run staged nor one nightly holds" in pins.stderr
        assert sha256(rebuilt) in pins.stderr


def test_a_test_that_installs_its_tools_in_a_separate_invocation_still_promotes(
    local: LocalProcess, venv_factory: Any, tmp_path: Path
) -> None:
    # Given nightly's rd-tool-dep 1.0 and run C's app needing it
    dep = build_wheel(tmp_path / "n", "rd-tool-dep", "1.0")
    seed_nightly(local, venv_factory, "rd-tool-seed", "d1" * 20, dep)
    app = build_wheel(tmp_path / "c", "rd-tool-app", "1.0", requires=["rd-tool-dep"])
    index_url = stage(local, "rd-tool-c", "d2" * 20, app)
    venv = venv_factory("rd-tool")
    installed = venv / "installed.json"
    # When its test installs the run from its index with a report, and then a newer
    # rd-tool-dep (a tool of its own, from elsewhere) in a separate invocation
    result = pip(
        venv, "install", "--report", str(installed), "--index-url", index_url, "rd-tool-app"
    )
    assert result.returncode == 0, result.stderr
    newer = build_wheel(tmp_path / "tools", "rd-tool-dep", "2.0")
    result = pip(venv, "install", "--no-index", str(newer))
    assert result.returncode == 0, result.stderr
    # Then the report holds only what came from the run's index, and the run is promoted
    reported = report(local, "rd-tool-c", "d2" * 20, installed)
    assert reported.returncode == 0, reported.stderr
    assert "refused" not in reported.stderr
    record = decision(local, "rd-tool-c")
    assert record["state"] == "promoted", record

    # And an environment that holds the newer tool is a warning about it, not a refusal
    environment = installed_environment(local, venv, tmp_path / "env.json")
    dry = local.wheelgate(
        *("report", "--run-id", "rd-tool-c", "--commit", "d2" * 20, "--dry-run"),
        *("--test", f"{INDEX}:smoke=passed", "--installed", f"{INDEX}:smoke={environment}"),
    )
    assert dry.returncode == 0, dry.stderr
    assert "rd-tool-dep 2.0 is installed, a version the run's index does not offer" in dry.stderr
    [test] = json.loads(dry.stdout)["sets"][0]["tests"]
    assert "refused" not in test
    assert [i["filename"] for i in test["installed"]] == [app.name]


def _installs(report: Path) -> list[dict[str, Any]]:
    return list(json.loads(report.read_text())["install"])
