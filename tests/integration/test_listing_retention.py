"""Listing retention end to end: ``wheelgate local`` with a rule of two versions for one
directory, real promotions, real pip and uv (hermetic), the archive index, yank and rebuild.

A pinned old version that left the listing must fail from the listing and install, with its
dependency, from ``<dir>/_archive/``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LocalProcess, local_process
from tests.integration.installs import evidence, pip, pip_report, uv_install
from tests.integration.test_cycle import run_ok
from tests.integration.test_index_maintenance import fetch
from wheelgate.core.env_names import ENV_LISTING_RETENTION
from wheelgate.local.sample_wheels import build_wheel

# Real pip and uv installs into fresh virtualenvs: `make test` only.
pytestmark = pytest.mark.slow

INDEX = "v2/retained"
ARCHIVE = f"{INDEX}/_archive"
VERSIONS = ("1.0", "1.1", "1.2", "1.3")
COMMIT = "8" * 40
JSON_ACCEPT = "application/vnd.pypi.simple.v1+json"


def retention(keep_versions: int) -> str:
    return json.dumps({"indexes": {INDEX: {"keep_versions": keep_versions}}})


@pytest.fixture(scope="module")
def local_k2() -> Iterator[LocalProcess]:
    """``wheelgate local --listing-retention``, whose promoter lists two versions per project
    of ``INDEX``."""
    with local_process("--listing-retention", retention(2)) as started:
        yield started


def test_local_hands_its_listing_retention_to_the_cli(local_k2: LocalProcess) -> None:
    # The ready line's environment carries the rule, so `index rebuild` applies the promoter's
    assert json.loads(local_k2.env[ENV_LISTING_RETENTION]) == {
        "default": {"keep_versions": None, "keep_days": None},
        "indexes": {INDEX: {"keep_versions": 2, "keep_days": None}},
    }
    rebuilt = local_k2.wheelgate("index", "rebuild", "--index", INDEX, "--dry-run")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert json.loads(rebuilt.stdout)["listing_retention"] == {
        "keep_versions": 2,
        "keep_days": None,
    }


@pytest.fixture(scope="module")
def promoted(
    local_k2: LocalProcess, venv_factory: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    """Given ret-pkg 1.0 (with its dependency ret-dep 1.0), then 1.1, 1.2 and 1.3, each
    promoted by its own run: the records, by version."""
    wheels = tmp_path_factory.mktemp("retained")
    dep = build_wheel(wheels, "ret-dep", "1.0")
    records = {}
    for version in VERSIONS:
        wheel = build_wheel(wheels, "ret-pkg", version, requires=["ret-dep>=1.0"])
        files = [wheel, dep] if version == "1.0" else [wheel]
        run = f"ret-{version}"
        run_ok(
            local_k2,
            "stage",
            "--run-id",
            run,
            "--index",
            INDEX,
            "--commit",
            COMMIT,
            *map(str, files),
        )
        run_ok(
            local_k2,
            *("report", "--run-id", run, "--commit", COMMIT, "--test", f"{INDEX}:smoke=passed"),
            *evidence(INDEX, pip_report(venv_factory, local_k2.run_index(run, INDEX), files)),
        )
        records[version] = json.loads(run_ok(local_k2, "status", run, "--wait", "60"))
        assert records[version]["state"] == "promoted", records[version]
    return records


def page_files(local: LocalProcess, directory: str, project: str) -> dict[str, Any]:
    doc = json.loads(fetch(f"{local.nightly_url}{directory}/{project}/", JSON_ACCEPT))
    return {f["filename"]: f for f in doc["files"]}


def pkg(version: str) -> str:
    return f"ret_pkg-{version}-py3-none-any.whl"


def test_the_listing_shows_only_the_newest_two_versions(
    local_k2: LocalProcess, promoted: dict[str, Any]
) -> None:
    assert set(page_files(local_k2, INDEX, "ret-pkg")) == {pkg("1.2"), pkg("1.3")}
    html = fetch(f"{local_k2.nightly_url}{INDEX}/ret-pkg/")
    assert pkg("1.3") in html
    assert pkg("1.0") not in html
    # The dependency released once stays listed: its newest version is never delisted.
    assert set(page_files(local_k2, INDEX, "ret-dep")) == {"ret_dep-1.0-py3-none-any.whl"}


def test_the_archive_lists_every_file_with_links_to_nightly(
    local_k2: LocalProcess, promoted: dict[str, Any]
) -> None:
    files = page_files(local_k2, ARCHIVE, "ret-pkg")
    assert set(files) == {pkg(v) for v in VERSIONS}
    assert files[pkg("1.0")]["url"] == f"../../{pkg('1.0')}"
    assert f'href="../../{pkg("1.0")}#sha256=' in fetch(f"{local_k2.nightly_url}{ARCHIVE}/ret-pkg/")
    root = json.loads(fetch(f"{local_k2.nightly_url}{ARCHIVE}/", JSON_ACCEPT))
    assert {p["name"] for p in root["projects"]} == {"ret-pkg", "ret-dep"}


def test_the_record_names_the_files_that_left_the_listing(promoted: dict[str, Any]) -> None:
    delisted = {v: [s["delisted"] for s in r["sets"]] for v, r in promoted.items()}
    assert delisted == {"1.0": [[]], "1.1": [[]], "1.2": [[pkg("1.0")]], "1.3": [[pkg("1.1")]]}


def test_a_pinned_old_version_installs_from_the_archive_only(
    local_k2: LocalProcess, promoted: dict[str, Any], venv_factory: Any
) -> None:
    listing = f"{local_k2.nightly_url}{INDEX}/"
    archive = f"{local_k2.nightly_url}{ARCHIVE}/"
    installers = {
        "pip": lambda venv, *args: pip(venv, "install", "--no-cache-dir", *args),
        "uv": lambda venv, *args: uv_install(venv, "--no-cache", *args),
    }
    # (what each says when the index lists the project but not the version: pip names the
    # versions the listing offers)
    not_listed = {
        "pip": "Could not find a version that satisfies the requirement ret-pkg==1.0 "
        "(from versions: 1.2, 1.3)",
        "uv": "Because there is no version of ret-pkg==1.0",
    }
    for name, installer in installers.items():
        venv = venv_factory(f"ret-{name}")
        # When the old version is pinned against the listing, it is not found there...
        result = installer(venv, "--index-url", listing, "ret-pkg==1.0")
        assert result.returncode != 0, f"{name} installed a delisted version: {result.stdout}"
        assert not_listed[name] in " ".join(result.stderr.split()), result.stderr
        # ...and against the archive it installs, with its dependency.
        result = installer(venv, "--index-url", archive, "ret-pkg==1.0")
        assert result.returncode == 0, f"{name}: {result.stdout}{result.stderr}"
        frozen = subprocess.run(
            [venv / "bin" / "python", "-c", "import ret_pkg, ret_dep; print(ret_pkg.__version__)"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert frozen.stdout.strip() == "1.0"


def test_a_release_conflict_with_a_delisted_release_is_still_refused(
    local_k2: LocalProcess, promoted: dict[str, Any], venv_factory: Any, tmp_path: Path
) -> None:
    # Given a build-tag rebuild of 1.0, which left the listing two promotions ago...
    rebuilt = build_wheel(tmp_path, "ret-pkg", "1.0", tag="1-py3-none-any", payload_bytes=10)
    run_ok(
        local_k2,
        "stage",
        "--run-id",
        "ret-rebuild",
        "--index",
        INDEX,
        "--commit",
        COMMIT,
        str(rebuilt),
    )
    run_ok(
        local_k2,
        *("report", "--run-id", "ret-rebuild", "--commit", COMMIT),
        *("--test", f"{INDEX}:smoke=passed"),
        *evidence(
            INDEX, pip_report(venv_factory, local_k2.run_index("ret-rebuild", INDEX), [rebuilt])
        ),
    )
    record = json.loads(local_k2.wheelgate("status", "ret-rebuild", "--wait", "60").stdout)
    # Then the promoter checks it against the archive and refuses it.
    assert record["state"] == "rejected", record
    assert record["reason"] == "release-conflict", record


def test_yank_of_a_delisted_file_changes_the_archive_only(
    local_k2: LocalProcess, promoted: dict[str, Any]
) -> None:
    result = local_k2.wheelgate("yank", "--index", INDEX, pkg("1.0"), "--reason", "old and bad")
    assert result.returncode == 0, result.stdout + result.stderr
    assert page_files(local_k2, ARCHIVE, "ret-pkg")[pkg("1.0")]["yanked"] == "old and bad"
    assert set(page_files(local_k2, INDEX, "ret-pkg")) == {pkg("1.2"), pkg("1.3")}
    # A listed file's yank shows on both pages; unyank clears both.
    for command in (["yank", "--reason", "flaky"], ["unyank"]):
        verb, *options = command
        result = local_k2.wheelgate(verb, "--index", INDEX, pkg("1.3"), *options)
        assert result.returncode == 0, result.stdout + result.stderr
        state = "flaky" if verb == "yank" else False
        assert page_files(local_k2, INDEX, "ret-pkg")[pkg("1.3")]["yanked"] == state
        assert page_files(local_k2, ARCHIVE, "ret-pkg")[pkg("1.3")]["yanked"] == state


def test_index_rebuild_applies_a_changed_rule_and_dry_run_says_what_would_change(
    local_k2: LocalProcess, promoted: dict[str, Any]
) -> None:
    def rebuild(keep_versions: int, *options: str) -> dict[str, Any]:
        result = subprocess.run(
            [sys.executable, "-m", "wheelgate", "index", "rebuild", "--index", INDEX, *options],
            env={**os.environ, **local_k2.env, ENV_LISTING_RETENTION: retention(keep_versions)},
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return dict(json.loads(result.stdout))

    # Given the rule widened to three versions, a dry run says 1.1 would be listed again...
    before = page_files(local_k2, INDEX, "ret-pkg")
    dry = rebuild(3, "--dry-run")
    assert dry["pages_written"] == []
    [change] = [p for p in dry["projects"] if p["project"] == "ret-pkg"]
    assert change["added"] == [pkg("1.1")]
    assert change["delisted"] == []
    assert page_files(local_k2, INDEX, "ret-pkg") == before
    # ...and the rebuild lists it.
    done = rebuild(3)
    assert f"{INDEX}/ret-pkg/index.json" in done["pages_written"]
    assert set(page_files(local_k2, INDEX, "ret-pkg")) == {pkg(v) for v in ("1.1", "1.2", "1.3")}
    # Narrowed to one version, the dry run names what would leave the listing.
    narrow = rebuild(1, "--dry-run")
    [change] = [p for p in narrow["projects"] if p["project"] == "ret-pkg"]
    assert change["delisted"] == [pkg("1.1"), pkg("1.2")]
    assert change["archive_added"] == change["archive_removed"] == []
    # The archive keeps every file through all of it, with the yank state it had.
    assert set(page_files(local_k2, ARCHIVE, "ret-pkg")) == {pkg(v) for v in VERSIONS}


def test_a_runs_staging_index_offers_what_the_listing_lists(
    local_k2: LocalProcess, promoted: dict[str, Any], tmp_path: Path
) -> None:
    # Given a later run of another project, which depends on ret-pkg, staged into the
    # directory...
    other = build_wheel(tmp_path, "ret-other", "1.0", requires=["ret-pkg"])
    run_ok(
        local_k2, "stage", "--run-id", "ret-run", "--index", INDEX, "--commit", COMMIT, str(other)
    )
    # Then its index borrows nightly's listing of ret-pkg, not the archive's every file.
    borrowed = json.loads(fetch(local_k2.run_index("ret-run", INDEX) + "ret-pkg/", JSON_ACCEPT))
    assert {f["filename"] for f in borrowed["files"]} == set(page_files(local_k2, INDEX, "ret-pkg"))
    assert pkg("1.0") not in {f["filename"] for f in borrowed["files"]}
