"""Pins for a run's whole install closure: the run's staged files and the dependencies pip
resolved for them, each with its hash."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.samples import SHA_A, SHA_B
from wheelgate.core.manifest import ManifestFile
from wheelgate.staging.pins import pinned_closure, staged_projects, target_options

SHA_C = "c" * 64
TORCH_312 = "torch-2.7.0+rocm7.0-cp312-cp312-linux_x86_64.whl"
TORCH_311 = "torch-2.7.0+rocm7.0-cp311-cp311-linux_x86_64.whl"


def staged(*names_and_hashes: tuple[str, str]) -> list[ManifestFile]:
    return [ManifestFile(filename=n, sha256=h, size=1) for n, h in names_and_hashes]


def resolved(name: str, version: str, url: str, archive: dict[str, Any] | None) -> dict[str, Any]:
    """One ``install`` entry of pip's installation report."""
    info: dict[str, Any] = {"url": url}
    if archive is not None:
        info["archive_info"] = archive
    return {"download_info": info, "metadata": {"name": name, "version": version}}


def report(*items: dict[str, Any]) -> dict[str, Any]:
    # Round-tripped through JSON, as pip's stdout is.
    return dict(json.loads(json.dumps({"version": "1", "install": list(items)})))


def test_the_closure_pins_the_runs_files_and_the_dependencies_pip_resolved() -> None:
    # Given a run that staged torch for two Pythons, which needs filelock from nightly
    projects = staged_projects(staged((TORCH_312, SHA_A), (TORCH_311, SHA_B)))
    resolution = report(
        resolved(
            "torch",
            "2.7.0+rocm7.0",
            "http://staging/runs/1/v2/x/torch-2.7.0%2Brocm7.0-cp311-cp311-linux_x86_64.whl",
            {"hashes": {"sha256": SHA_B}},
        ),
        resolved(
            "FileLock",
            "3.18.0",
            "http://nightly/v2/x/filelock-3.18.0-py3-none-any.whl",
            {"hash": f"sha256={SHA_C.upper()}"},
        ),
    )
    # Then every resolved distribution is pinned: the run's project to each file it staged,
    # the dependency to the file pip chose
    assert pinned_closure(projects, resolution) == (
        "filelock==3.18.0 \\\n"
        f"    --hash=sha256:{SHA_C}\n"
        "torch==2.7.0+rocm7.0 \\\n"
        f"    --hash=sha256:{SHA_A} \\\n"
        f"    --hash=sha256:{SHA_B}\n"
    )


@pytest.mark.parametrize(
    ("resolution", "expected"),
    [
        (
            report(resolved("torch", "2.6.0", "http://s/torch-2.6.0-py3-none-any.whl", {})),
            "pip resolved torch==2.6.0, but the run staged torch==2.7.0+rocm7.0",
        ),
        (
            report(
                resolved("torch", "2.7.0+rocm7.0", "http://s/t.whl", {"hash": f"sha256={SHA_A}"}),
                resolved("dep", "1.0", "http://n/dep-1.0-py3-none-any.whl", {}),
            ),
            "pip resolved dep==1.0 to a file without a SHA-256",
        ),
        (
            report(resolved("dep", "1.0", "http://n/d.whl", {"hash": f"sha256={SHA_C}"})),
            "pip's resolution leaves out the run's torch",
        ),
        ([], "pip's output is not an installation report"),
    ],
)
def test_a_closure_that_cannot_be_pinned_is_refused(resolution: object, expected: str) -> None:
    projects = staged_projects(staged((TORCH_312, SHA_A)))
    with pytest.raises(ValueError, match="pip") as refused:
        pinned_closure(projects, resolution)
    assert expected in str(refused.value)


def test_a_project_staged_in_two_versions_cannot_be_pinned() -> None:
    files = staged((TORCH_312, SHA_A), ("torch-2.8.0-py3-none-any.whl", SHA_B))
    with pytest.raises(ValueError, match=r"torch is staged in versions 2\.7\.0"):
        staged_projects(files)


def test_target_options_restrict_pip_to_binary_distributions() -> None:
    assert target_options(None, []) == []
    assert target_options("3.12", ["manylinux_2_28_x86_64"]) == [
        *("--python-version", "3.12", "--platform", "manylinux_2_28_x86_64"),
        "--only-binary=:all:",
    ]
