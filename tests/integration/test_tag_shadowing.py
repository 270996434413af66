"""A released version's ``==`` installs the same wheel after a wheel that would shadow it is
refused, checked with real pip and uv on this machine's CPython.

pip and uv pick, among a version's wheels, the one whose best tag the interpreter ranks first.
So a later run adding ``lt-1.0-cp3XY-none-any.whl`` (this Python's own pure tag) to a released
``lt-1.0-py3-none-any.whl`` would make ``pip install lt==1.0`` install the new bytes here;
the promoter refuses it (``tag-shadowing``) and nightly stays as it was, with and without a
local label. Wheels that no interpreter that installed a released wheel would switch to (another
architecture, a pure fallback) still join the version, and this machine keeps installing what it
did. Last, real pip and uv are asked which of two wheels they pick for a few interpreters and
platforms: each pick is the one ``core/shadowing`` ranks first for that installer.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from packaging.tags import parse_tag

from tests.integration.conftest import uv_binary
from tests.integration.installs import sha256
from tests.integration.test_equals_pin import pip_chooses
from tests.integration.test_promoter import Run, nightly_versions
from wheelgate.core.shadowing import (
    Installer,
    Interpreter,
    Python,
    glibc_platform,
    mac_platform,
    musl_platform,
    single_platform,
)
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.local.stack import LocalWheelGate
from wheelgate.staging.hermetic import hermetic_env
from wheelgate.storage.bucket import Bucket

# Real pip and uv installs: `make test` only.
pytestmark = pytest.mark.slow

#: This interpreter's own pure tag, which it ranks before ``py3-none-any``.
THIS_PYTHON = f"cp{sys.version_info[0]}{sys.version_info[1]}"


def tagged_wheel(directory: Path, project: str, version: str, tag: str) -> Path:
    """A real wheel whose METADATA is its name's and whose module says its tag (so what uv
    installs names the file)."""
    return build_wheel(directory, project, version, tag=tag, module_source=f"TAG = {tag!r}\n")


def uv_installs(index_url: str, requirement: str, target: Path) -> str:
    """The tag of the file real uv installs for ``requirement`` on this interpreter."""
    result = subprocess.run(
        [uv_binary(), "pip", "install", "--python", sys.executable, "--no-deps", "--target",
         str(target), "--index-url", index_url, requirement],
        env=hermetic_env(), capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (module,) = target.glob("*/__init__.py")
    return module.read_text().removeprefix("TAG = ").strip().strip("'")


@pytest.mark.parametrize(("project", "version"), [("sha", "1.0"), ("shb", "2.0+rocm6.3")])
def test_a_wheel_this_python_would_prefer_is_refused_and_equals_installs_the_same_bytes(
    stack: LocalWheelGate,
    buckets: tuple[Bucket, Bucket],
    s3: Any,
    tmp_path: Path,
    project: str,
    version: str,
) -> None:
    index = f"shadow/{project}"
    index_url = f"{stack.nightly_url}{index}/"
    pins = [f"{project}=={version}", f"{project}=={version.split('+')[0]}"]
    # Given a version released as a pure wheel, which pip and uv install here...
    pure = tagged_wheel(tmp_path / "r0", project, version, "py3-none-any")
    run = Run(buckets, tmp_path, f"{project}-0", index).stage(pure)
    assert run.report(run.manifest())["state"] == "promoted"
    for n, pin in enumerate(pins):
        assert pip_chooses(index_url, pin) == sha256(pure)
        assert uv_installs(index_url, pin, tmp_path / f"uv-before-{n}") == "py3-none-any"
    # When a later run adds a wheel of the same version that this Python ranks first...
    own = tagged_wheel(tmp_path / "r1", project, version, f"{THIS_PYTHON}-none-any")
    attempt = Run(buckets, tmp_path, f"{project}-1", index).stage(own)
    before = nightly_versions(s3)
    record = attempt.report(attempt.manifest())
    # Then it is refused before any copy, naming both files and an interpreter that would
    # switch, and pip and uv still install the released wheel under either pin.
    assert (record["state"], record["reason"]) == ("rejected", "tag-shadowing"), record
    assert own.name in record["message"]
    assert pure.name in record["message"]
    assert f"{THIS_PYTHON}-none-any ranks before py3-none-any" in record["message"]
    assert nightly_versions(s3) == before
    for n, pin in enumerate(pins):
        assert pip_chooses(index_url, pin) == sha256(pure)
        assert uv_installs(index_url, pin, tmp_path / f"uv-after-{n}") == "py3-none-any"


def test_wheels_no_interpreter_would_switch_to_still_join_a_released_version(
    stack: LocalWheelGate, buckets: tuple[Bucket, Bucket], tmp_path: Path
) -> None:
    arch = platform.machine()
    if sys.platform != "linux" or arch not in {"x86_64", "aarch64"}:
        pytest.skip("builds wheels for this machine's Linux architecture")
    other = "aarch64" if arch == "x86_64" else "x86_64"
    index = "shadow/shc"
    index_url = f"{stack.nightly_url}{index}/"
    # Given 1.0 released for this Python on this machine's architecture...
    own_tag = f"{THIS_PYTHON}-{THIS_PYTHON}-manylinux_2_17_{arch}"
    own = tagged_wheel(tmp_path / "r0", "shc", "1.0", own_tag)
    run = Run(buckets, tmp_path, "shc-0", index).stage(own)
    assert run.report(run.manifest())["state"] == "promoted"
    # When a later run adds the other architecture's wheel and a pure fallback...
    later = [
        tagged_wheel(
            tmp_path / "r1", "shc", "1.0", f"{THIS_PYTHON}-{THIS_PYTHON}-manylinux_2_17_{other}"
        ),
        tagged_wheel(tmp_path / "r1", "shc", "1.0", "py3-none-any"),
    ]
    run = Run(buckets, tmp_path, "shc-1", index).stage(*later)
    record = run.report(run.manifest())
    # Then they are released, and this machine installs the wheel it installed before.
    assert record["state"] == "promoted", record
    assert pip_chooses(index_url, "shc==1.0") == sha256(own)
    assert uv_installs(index_url, "shc==1.0", tmp_path / "uv") == own_tag


#: name: (the two wheels' tags, uv's --python-platform and --python-version, or None for this
#: interpreter with pip, and the interpreter that stands for it in the rule).
PICKS: dict[str, tuple[tuple[str, str], tuple[str, str] | None, Interpreter]] = {
    "pip here: linux_<arch> before manylinux": (
        ("py3-none-manylinux_2_17_x86_64", "py3-none-linux_x86_64"),
        None,
        Interpreter(Python("cp", 11, ("cp311",)), glibc_platform("x86_64", 28), Installer.PIP),
    ),
    "pip here: this Python's pure tag before py3": (
        ("py3-none-any", f"{THIS_PYTHON}-none-any"),
        None,
        Interpreter(
            Python("cp", sys.version_info[1], (THIS_PYTHON,)),
            glibc_platform("x86_64", 17),
            Installer.PIP,
        ),
    ),
    "uv: manylinux before linux_<arch>": (
        ("py3-none-linux_x86_64", "py3-none-manylinux_2_17_x86_64"),
        ("x86_64-manylinux_2_28", "3.11"),
        Interpreter(Python("cp", 11, ("cp311",)), glibc_platform("x86_64", 28), Installer.UV),
    ),
    "uv: the newer musllinux first, linux_<arch> last": (
        ("py3-none-musllinux_1_1_x86_64", "py3-none-musllinux_1_2_x86_64"),
        ("x86_64-unknown-linux-musl", "3.11"),
        Interpreter(Python("cp", 11, ("cp311",)), musl_platform("x86_64", 2), Installer.UV),
    ),
    "uv: musllinux before linux_<arch>": (
        ("py3-none-linux_x86_64", "py3-none-musllinux_1_1_x86_64"),
        ("x86_64-unknown-linux-musl", "3.11"),
        Interpreter(Python("cp", 11, ("cp311",)), musl_platform("x86_64", 2), Installer.UV),
    ),
    "uv: cp313-cp313 before cp312-abi3": (
        ("cp312-abi3-manylinux_2_17_x86_64", "cp313-cp313-manylinux_2_17_x86_64"),
        ("x86_64-manylinux_2_28", "3.13"),
        Interpreter(Python("cp", 13, ("cp313",)), glibc_platform("x86_64", 28), Installer.UV),
    ),
    "uv: the newer manylinux first": (
        ("cp311-cp311-manylinux_2_17_aarch64", "cp311-cp311-manylinux_2_28_aarch64"),
        ("aarch64-manylinux_2_28", "3.11"),
        Interpreter(Python("cp", 11, ("cp311",)), glibc_platform("aarch64", 28), Installer.UV),
    ),
    "uv: macOS 11 universal2 before 10.9 x86_64": (
        ("py3-none-macosx_10_9_x86_64", "py3-none-macosx_11_0_universal2"),
        ("x86_64-apple-darwin", "3.11"),
        Interpreter(Python("cp", 11, ("cp311",)), mac_platform((12, 0), "x86_64"), Installer.UV),
    ),
    "uv: arm64 before universal2 on Apple silicon": (
        ("py3-none-macosx_10_9_universal2", "py3-none-macosx_11_0_arm64"),
        ("aarch64-apple-darwin", "3.11"),
        Interpreter(Python("cp", 11, ("cp311",)), mac_platform((12, 0), "arm64"), Installer.UV),
    ),
    "uv: abi3 before a pure wheel on Windows": (
        ("py3-none-any", "cp312-abi3-win_amd64"),
        ("x86_64-pc-windows-msvc", "3.13"),
        Interpreter(Python("cp", 13, ("cp313",)), single_platform("win_amd64"), Installer.UV),
    ),
}


def real_pick(links: Path, target: Path, where: tuple[str, str] | None) -> str:
    """The tag of the wheel of ``lt==1.0`` that real uv (for ``where``) or pip (on this
    interpreter) picks from ``links``."""
    if where is None:
        command = [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target)]
    else:
        command = [uv_binary(), "pip", "install", "--no-deps", "--target", str(target),
                   "--python-platform", where[0], "--python-version", where[1]]  # fmt: skip
    result = subprocess.run(
        [*command, "--no-index", "--find-links", str(links), "lt==1.0"],
        env=hermetic_env(), capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return (target / "lt" / "__init__.py").read_text().removeprefix("TAG = ").strip().strip("'")


@pytest.mark.parametrize("case", list(PICKS))
def test_real_pip_and_uv_pick_the_wheel_the_rule_ranks_first(tmp_path: Path, case: str) -> None:
    tags, where, interpreter = PICKS[case]
    if where is None and not (sys.platform == "linux" and platform.machine() == "x86_64"):
        pytest.skip("pip is asked on this machine, a glibc x86_64 Linux")
    for t in tags:
        tagged_wheel(tmp_path / "links", "lt", "1.0", t)
    ranked = {t: interpreter.best(parse_tag(t)) for t in tags}
    assert None not in ranked.values(), ranked
    expected = min(tags, key=lambda t: ranked[t][0])  # type: ignore[index]
    assert real_pick(tmp_path / "links", tmp_path / "target", where) == expected
    # The rule's pick is not the order the wheels were given in: the other one is first.
    assert expected == tags[1]
