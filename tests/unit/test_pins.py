"""Pins for a target: one file of each distribution the run's projects need there, markers
evaluated for the target rather than for the machine running pip."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from tests.unit.samples import SHA_A, SHA_B
from wheelgate.core.manifest import ManifestFile
from wheelgate.staging.offer import OfferedFile, RunOffer
from wheelgate.staging.pins import (
    Resolved,
    pin_for_target,
    select_projects,
    staged_projects,
    target_closure,
)
from wheelgate.staging.targets import (
    Target,
    manylinux_platforms,
    platform_markers,
    target_from_options,
    target_preset,
)
from wheelgate.storage.bucket import Bucket

SHA_C = "c" * 64
SHA_D = "d" * 64
TORCH_312 = "torch-2.7.0+rocm7.0-cp312-cp312-linux_x86_64.whl"
TORCH_311 = "torch-2.7.0+rocm7.0-cp311-cp311-linux_x86_64.whl"
#: The environment of a CPython 3.11 on Linux x86_64, as packaging's default_environment().
RUNNER = {
    "implementation_name": "cpython",
    "implementation_version": "3.11.7",
    "os_name": "posix",
    "platform_machine": "x86_64",
    "platform_release": "6.1.0",
    "platform_system": "Linux",
    "platform_version": "#1 SMP",
    "python_full_version": "3.11.7",
    "platform_python_implementation": "CPython",
    "python_version": "3.11",
    "sys_platform": "linux",
}
#: Where offered files are; a unit test reads none of them.
OBJECTS = Bucket(None, "objects")  # type: ignore[arg-type]


def staged(*names_and_hashes: tuple[str, str]) -> list[ManifestFile]:
    return [ManifestFile(filename=n, sha256=h, size=1) for n, h in names_and_hashes]


def resolved(
    name: str, version: str, filename: str, sha256: str | None, *requires: str
) -> dict[str, Any]:
    """One ``install`` entry of pip's installation report."""
    info: dict[str, Any] = {"url": f"http://staging/runs/1/v2/x/{filename}"}
    info["archive_info"] = {} if sha256 is None else {"hashes": {"sha256": sha256}}
    metadata: dict[str, Any] = {"name": name, "version": version}
    if requires:
        metadata["requires_dist"] = list(requires)
    return {"download_info": info, "metadata": metadata}


def report(*items: dict[str, Any]) -> dict[str, Any]:
    # Round-tripped through JSON, as pip's stdout is.
    return dict(json.loads(json.dumps({"version": "1", "install": list(items)})))


def offering(*reports: object) -> RunOffer:
    """What the run's index offers by its objects: every file the reports name (the page
    the fake pip read links only offered files, unless a test says otherwise)."""
    documents = [r for r in reports if isinstance(r, dict)]
    files = [
        OfferedFile(
            item["download_info"]["url"].rsplit("/", 1)[-1],
            item["download_info"]["archive_info"]["hashes"]["sha256"].lower(),
            OBJECTS,
            "runs/1/v2/x/" + item["download_info"]["url"].rsplit("/", 1)[-1],
        )
        for r in documents
        for item in r["install"]
        if item["download_info"].get("archive_info")
    ]
    return RunOffer(files)


def pin(projects: Any, target: Target, resolve: Any, offer: RunOffer | None = None) -> str:
    """``pin_for_target`` with ``resolve``; by default the run offers what its reports name."""
    reports = getattr(resolve, "reports", [])
    return pin_for_target(
        "http://i/",
        projects,
        target,
        offer=offering(*reports) if offer is None else offer,
        resolve=resolve,
        base_environment=RUNNER,
    )


class FakePip:
    """Resolves as pip on the runner would: each call gets the next report; records what it
    was asked."""

    def __init__(self, *reports: dict[str, Any]) -> None:
        self.reports = list(reports)
        self.calls: list[tuple[list[str], list[str]]] = []

    def __call__(
        self, index_url: str, requirements: Sequence[str], *, options: Sequence[str]
    ) -> object:
        self.calls.append((list(requirements), list(options)))
        return self.reports.pop(0)


def test_the_default_target_pins_the_one_file_pip_chose_for_each_distribution() -> None:
    # Given a run that staged torch for two Pythons, which needs filelock from nightly, and
    # pip on this 3.11 machine resolving the cp311 wheel
    projects = staged_projects(staged((TORCH_312, SHA_A), (TORCH_311, SHA_B)))
    pip = FakePip(
        report(
            resolved("torch", "2.7.0+rocm7.0", TORCH_311, SHA_B, "FileLock>=3"),
            resolved("FileLock", "3.18.0", "filelock-3.18.0-py3-none-any.whl", SHA_C.upper()),
        )
    )
    # When pins are made for this environment
    text = pin(projects, Target(), pip)
    # Then each distribution has one hash: torch's cp311 wheel alone, not the cp312 one
    assert text == (
        f"filelock==3.18.0 \\\n    --hash=sha256:{SHA_C}\n"
        f"torch==2.7.0+rocm7.0 \\\n    --hash=sha256:{SHA_B}\n"
    )
    assert pip.calls == [(["torch==2.7.0+rocm7.0"], [])]


def test_a_file_the_run_does_not_offer_by_its_objects_is_never_pinned() -> None:
    # Given a run whose dependency page was rewritten to link another run's filelock: pip
    # resolves it, but neither the run's staged files nor nightly hold those bytes
    projects = staged_projects(staged((TORCH_311, SHA_B)))
    honest = report(
        resolved("torch", "2.7.0+rocm7.0", TORCH_311, SHA_B, "filelock"),
        resolved("filelock", "3.18.0", "filelock-3.18.0-py3-none-any.whl", SHA_C),
    )
    smuggled = report(
        resolved("torch", "2.7.0+rocm7.0", TORCH_311, SHA_B, "filelock"),
        resolved("filelock", "3.18.0", "filelock-3.18.0-py3-none-any.whl", SHA_D),
    )
    # When pins are made
    with pytest.raises(ValueError, match="pip resolved filelock==") as refused:
        pin(projects, Target(), FakePip(smuggled), offer=offering(honest))
    # Then nothing is pinned, and the message names the file and what is offered
    message = str(refused.value)
    assert "filelock-3.18.0-py3-none-any.whl" in message
    assert SHA_D in message
    assert "neither a file the run staged nor one nightly holds" in message


def test_markers_are_evaluated_for_the_target_not_for_the_machine_running_pip() -> None:
    # Given an app that needs dep on 3.12 and up and old below it, and pip on 3.11 that,
    # asked for --python-version 3.12, evaluates markers for 3.11: it resolves old, misses dep
    projects = staged_projects(staged(("app-1.0-cp312-cp312-linux_x86_64.whl", SHA_A)))
    requires = ('dep>=2; python_version >= "3.12"', 'old; python_version < "3.12"')
    app = resolved("app", "1.0", "app-1.0-cp312-cp312-linux_x86_64.whl", SHA_A, *requires)
    pip = FakePip(
        report(app, resolved("old", "1.0", "old-1.0-py3-none-any.whl", SHA_B)),
        report(
            app,
            resolved("old", "1.0", "old-1.0-py3-none-any.whl", SHA_B),
            resolved("dep", "2.1", "dep-2.1-py3-none-any.whl", SHA_C),
        ),
    )
    # When pins are made for 3.12
    target = Target(python_version="3.12")
    text = pin(projects, target, pip)
    # Then pip is asked again with what 3.12 needs and it missed (marker dropped)...
    options = ["--python-version", "3.12", "--only-binary=:all:"]
    assert pip.calls == [(["app==1.0"], options), (["app==1.0", "dep>=2"], options)]
    # ...and the pins hold what 3.12 needs, and not what only 3.11 needed
    assert text == (
        f"app==1.0 \\\n    --hash=sha256:{SHA_A}\ndep==2.1 \\\n    --hash=sha256:{SHA_C}\n"
    )


def test_a_dependency_resolved_at_a_version_the_target_excludes_is_resolved_again() -> None:
    closure = target_closure(
        ["app==1.0"],
        {
            "app": Resolved("app", "1.0", "a.whl", SHA_A, ('dep<2; python_version >= "3.12"',)),
            "dep": Resolved("dep", "2.0", "d.whl", SHA_B, ()),
        },
        {**RUNNER, "python_version": "3.12"},
    )
    assert closure.missing == ("dep<2",)


def test_extras_are_followed_with_their_own_markers() -> None:
    resolution = {
        "app": Resolved("app", "1.0", "a.whl", SHA_A, ("lib[gpu]>=1",)),
        "lib": Resolved(
            "lib",
            "1.0",
            "l.whl",
            SHA_B,
            ('rocm; extra == "gpu" and sys_platform == "linux"', 'cuda; extra == "cuda"'),
        ),
        "rocm": Resolved("rocm", "7.0", "r.whl", SHA_C, ()),
        "cuda": Resolved("cuda", "12", "c.whl", SHA_D, ()),
    }
    closure = target_closure(["app==1.0"], resolution, RUNNER)
    assert closure.missing == ()
    assert closure.needed == {
        "app": frozenset(),
        "lib": frozenset({"gpu"}),
        "rocm": frozenset(),
    }
    # For Windows, the same resolution needs no rocm
    windows = Target(platforms=("win_amd64",)).marker_environment(RUNNER)
    assert set(target_closure(["app==1.0"], resolution, windows).needed) == {"app", "lib"}


def test_a_requirement_that_names_a_url_cannot_be_pinned() -> None:
    with pytest.raises(ValueError, match="a URL, which no index can pin"):
        target_closure(
            ["app==1.0"],
            {"app": Resolved("app", "1.0", "a.whl", SHA_A, ("dep @ https://x.example/d.whl",))},
            RUNNER,
        )


@pytest.mark.parametrize(
    ("reports", "expected"),
    [
        (
            [report(resolved("dep", "1.0", "dep-1.0-py3-none-any.whl", SHA_C))],
            "pip's resolution leaves out the run's torch==2.7.0+rocm7.0",
        ),
        (
            [
                report(
                    resolved("torch", "2.7.0+rocm7.0", TORCH_312, SHA_A, "dep"),
                    resolved("dep", "1.0", "dep-1.0-py3-none-any.whl", None),
                )
            ],
            "pip resolved dep==1.0 to a file without a SHA-256",
        ),
        ([[]], "pip's output is not an installation report"),
    ],
)
def test_a_closure_that_cannot_be_pinned_is_refused(reports: list[object], expected: str) -> None:
    projects = staged_projects(staged((TORCH_312, SHA_A)))
    pip = FakePip(*reports)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pip") as refused:
        pin(projects, Target(), pip)
    assert expected in str(refused.value)


def test_a_project_staged_in_two_versions_cannot_be_pinned() -> None:
    files = staged((TORCH_312, SHA_A), ("torch-2.8.0-py3-none-any.whl", SHA_B))
    with pytest.raises(ValueError, match=r"torch is staged in versions 2\.7\.0"):
        staged_projects(files)


def test_a_subset_of_the_staged_projects_is_pinned_by_name() -> None:
    projects = staged_projects(
        staged((TORCH_312, SHA_A), ("numpy-2.0-cp311-cp311-linux_x86_64.whl", SHA_B))
    )
    assert list(select_projects(projects, ["Torch"])) == ["torch"]
    assert list(select_projects(projects, [])) == ["numpy", "torch"]
    with pytest.raises(ValueError, match="'scipy' is not a project of the run here; it staged "):
        select_projects(projects, ["scipy"])


def test_a_manylinux_preset_takes_every_tag_such_a_machine_installs() -> None:
    target = target_preset("cp312-manylinux_2_28_x86_64")
    assert target.platforms[:3] == (
        "manylinux_2_28_x86_64",
        "manylinux_2_27_x86_64",
        "manylinux_2_26_x86_64",
    )
    for tag in ("manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64"):
        assert tag in target.platforms
    assert target.platforms[-1] == "linux_x86_64"
    assert "manylinux_2_29_x86_64" not in target.platforms
    assert target.pip_options()[:6] == [
        *("--python-version", "3.12", "--platform", "manylinux_2_28_x86_64"),
        *("--platform", "manylinux_2_27_x86_64"),
    ]
    assert (
        target.pip_options()[-5:]
        == [
            *("--platform", "linux_x86_64", "--implementation", "cp", "--abi", "cp312"),
            "--only-binary=:all:",
        ][-5:]
    )
    environment = target.marker_environment(RUNNER)
    assert environment["python_version"] == "3.12"
    assert environment["python_full_version"] == "3.12.0"
    assert environment["platform_release"] == ""


def test_aarch64_has_no_manylinux_older_than_2014() -> None:
    assert manylinux_platforms(17, "aarch64") == [
        "manylinux_2_17_aarch64",
        "manylinux2014_aarch64",
        "linux_aarch64",
    ]


@pytest.mark.parametrize(
    ("preset", "markers"),
    [
        ("cp313-win_amd64", ("win32", "Windows", "nt", "AMD64")),
        ("cp310-macosx_11_0_arm64", ("darwin", "Darwin", "posix", "arm64")),
        ("cp311-manylinux_2_17_aarch64", ("linux", "Linux", "posix", "aarch64")),
    ],
)
def test_a_preset_sets_the_platform_markers(preset: str, markers: tuple[str, ...]) -> None:
    environment = target_preset(preset).marker_environment(RUNNER)
    keys = ("sys_platform", "platform_system", "os_name", "platform_machine")
    assert tuple(environment[k] for k in keys) == markers


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"preset": "cp312-solaris"}, "--target: 'cp312-solaris' is not a target"),
        (
            {"preset": "cp312-win_amd64", "python_version": "3.12"},
            "--target sets the Python version",
        ),
        ({"python_version": "three"}, "--python-version: 'three' is not a Python version"),
        ({"platforms": ["-r/etc/passwd"]}, "--platform: '-r/etc/passwd' is not a platform tag"),
        ({"platforms": ["freebsd_14_amd64"]}, "--platform: cannot tell the environment markers"),
        (
            {"platforms": ["win_amd64", "manylinux_2_28_x86_64"]},
            "--platform: --platform tags of different systems",
        ),
        ({"implementation": "--pre"}, "--implementation: '--pre' is not an implementation"),
        ({"abis": ["cp 312"]}, "--abi: 'cp 312' is not an ABI tag"),
    ],
)
def test_bad_target_options_are_refused_naming_the_option(
    options: dict[str, Any], expected: str
) -> None:
    given = {"preset": None, "python_version": None, "platforms": [], "implementation": None}
    with pytest.raises(ValueError, match=r"^--") as refused:
        target_from_options(**{**given, "abis": [], **options})
    assert expected in str(refused.value)


def test_explicit_options_set_the_markers_they_imply() -> None:
    target = target_from_options(
        preset=None,
        python_version="310",
        platforms=["manylinux2014_aarch64"],
        implementation="pp",
        abis=[],
    )
    environment = target.marker_environment(RUNNER)
    assert (environment["python_version"], environment["platform_machine"]) == ("3.10", "aarch64")
    assert environment["implementation_name"] == "pypy"
    assert platform_markers("musllinux_1_2_x86_64")["sys_platform"] == "linux"


def test_a_literal_manylinux_platform_pip_refuses_says_how_to_cover_the_others() -> None:
    def refusing(index_url: str, requirements: Sequence[str], *, options: Sequence[str]) -> object:
        raise ValueError("pip could not resolve app==1.0: No matching distribution")

    projects = staged_projects(staged(("app-1.0-py3-none-any.whl", SHA_A)))
    target = Target(python_version="3.12", platforms=("manylinux_2_28_x86_64",))
    with pytest.raises(ValueError, match="pip takes --platform literally"):
        pin(projects, target, refusing, offer=offering())
