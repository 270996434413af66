"""One rule for the tests that need a program this machine may lack (Ceph RGW, Chromium,
Graphviz, shellcheck, node, the CDK command-line tool).

On a developer's machine such a test skips, naming the program and how to install it. Where
``CI=true`` (GitHub Actions sets it; ``.ci/run`` sets it too) it fails instead, naming the
program: a green CI run has run every test, and ``.ci/run`` installs every program and stops
when an installer fails.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

#: The environment variable CI systems set (GitHub Actions: ``CI=true``).
CI_VARIABLE = "CI"


def in_ci() -> bool:
    return os.environ.get(CI_VARIABLE, "").strip().lower() in {"true", "1", "yes"}


def missing_tool(tool: str, install: str) -> NoReturn:
    """Skip the running test (fail it in CI): ``tool`` is not installed; ``install`` says
    how to install it."""
    message = f"{tool} is not installed ({install})"
    if in_ci():
        pytest.fail(f"{message}; in CI (CI=true) a missing tool fails its tests", pytrace=False)
    pytest.skip(message)


def require_tool(tool: str, found: str | None, install: str) -> str:
    """``found`` (the program's path), or :func:`missing_tool` when it is ``None``."""
    if found is None:
        missing_tool(tool, install)
    return found
