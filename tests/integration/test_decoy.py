"""The decoy index that guards every install test (``decoy.py``): each route by which it is
planted reaches a client that is not run hermetically, the hermetic environment closes every
one, its wheels fail on import, and a test that fetched from it fails.

Each test here starts a decoy of its own: the session's decoy fails any test that reaches it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import uv_binary
from tests.integration.decoy import DECOY_VERSION, Decoy
from wheelgate.staging.hermetic import hermetic_env

PROBE = "decoy-probe"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def own_decoy(tmp_path: Path) -> Iterator[Decoy]:
    server = Decoy(tmp_path / "decoy", {PROBE}).start()
    yield server
    server.stop()


def bare_env(tmp_path: Path) -> dict[str, str]:
    """This process's environment without any pip or uv setting and without the user's
    configuration directory, so only the route under test can name an index."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "XDG_"))}
    empty = tmp_path / "no-config"
    empty.mkdir(exist_ok=True)
    return {**env, "XDG_CONFIG_HOME": str(empty), "XDG_CONFIG_DIRS": str(empty)}


def clean_venv(tmp_path: Path) -> Path:
    """A venv without pip and without the session decoy's site configuration (which the
    ``venv_factory`` venvs carry)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return venv


def resolve(route: str, decoy: Decoy, venv: Path, env: dict[str, str]) -> int:
    """Resolve the probe project with the client the route is for, against an index that has
    nothing (so only the decoy can offer it); the requests the decoy counted."""
    if route.lower().startswith("pip"):
        command = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]
        command += ["install", "--dry-run", "--no-cache-dir"]
    else:
        command = [uv_binary(), "pip", "install", "--dry-run", "--no-cache"]
        command += ["--python", str(venv / "bin" / "python")]
    before = len(decoy.requests)
    subprocess.run(
        [*command, "--index-url", decoy.nowhere_url, PROBE],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return len(decoy.requests) - before


ROUTES = [
    "pip config file",
    "pip user config",
    "pip global config",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    "uv config file",
    "uv user config",
    "uv system config",
    "UV_EXTRA_INDEX_URL",
    "UV_INDEX",
    "UV_FIND_LINKS",
]


def test_the_routes_are_every_one_the_decoy_plants(own_decoy: Decoy) -> None:
    assert sorted(own_decoy.routes()) == sorted(ROUTES)


@pytest.mark.parametrize("route", ROUTES)
def test_each_route_reaches_a_client_that_is_not_hermetic_and_hermetic_env_closes_it(
    own_decoy: Decoy, route: str, tmp_path: Path
) -> None:
    # Given only this route planted
    env = {**bare_env(tmp_path), **own_decoy.routes()[route]}
    venv = clean_venv(tmp_path)
    # When pip or uv runs with the environment as it is, Then it asks the decoy
    assert resolve(route, own_decoy, venv, env) > 0
    # And when it runs with WheelGate's hermetic environment, the decoy hears nothing
    assert resolve(route, own_decoy, venv, hermetic_env(env)) == 0


def test_the_site_configuration_of_a_test_venv_reaches_pip(
    own_decoy: Decoy, tmp_path: Path
) -> None:
    venv = clean_venv(tmp_path)
    own_decoy.plant_site_config(venv)
    assert resolve("pip", own_decoy, venv, bare_env(tmp_path)) > 0
    assert resolve("pip", own_decoy, venv, hermetic_env(bare_env(tmp_path))) == 0


def test_a_decoy_wheel_installs_and_fails_on_import(own_decoy: Decoy, tmp_path: Path) -> None:
    # Given pip that honours an extra index, When it installs the probe...
    venv = clean_venv(tmp_path)
    env = {**bare_env(tmp_path), "PIP_EXTRA_INDEX_URL": own_decoy.index_url}
    installed = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install"),
            *("--no-cache-dir", "--index-url", own_decoy.nowhere_url, PROBE),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr
    assert f"{PROBE}-{DECOY_VERSION}" in installed.stdout
    # Then the bytes it got refuse to be imported, naming the cause
    imported = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import decoy_probe"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert imported.returncode != 0
    assert "ImportError: decoy: installed from an index the test did not name" in imported.stderr


INNER_CONFTEST = """
from tests.integration.conftest import decoy, pytest_runtest_call, pytest_runtest_setup
"""
INNER_TESTS = """
import os, urllib.request

def test_hermetic():
    pass

def test_fetches_from_an_extra_index():
    with urllib.request.urlopen(os.environ["PIP_EXTRA_INDEX_URL"] + "torch/") as page:
        assert page.status == 200
"""


def test_a_test_that_reaches_the_planted_decoy_fails_naming_what_it_fetched(
    tmp_path: Path,
) -> None:
    # Given a session with the integration tests' decoy and its checks, and a test that asks
    # the extra index it finds in the environment, as a pip that is not hermetic would
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "conftest.py").write_text(INNER_CONFTEST)
    (inner / "test_inner.py").write_text(INNER_TESTS)
    # When the session runs
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(inner)],
        cwd=inner,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "lambdas"), str(REPO)])},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    # Then that test fails, naming the request, and the other passes
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 failed, 1 passed" in result.stdout, result.stdout
    assert "FAILED test_inner.py::test_fetches_from_an_extra_index" in result.stdout
    assert "pip or uv reached the decoy index" in result.stdout
    assert "GET /simple/torch/" in result.stdout
