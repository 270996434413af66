"""A test that needs a program the machine lacks skips locally, naming it, and fails in CI
(``tests/tools.py``)."""

from __future__ import annotations

import pytest

from tests.tools import CI_VARIABLE, require_tool


def test_a_missing_tool_skips_a_local_run_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CI_VARIABLE, raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"^shellcheck is not installed \(apt"):
        require_tool("shellcheck", None, "apt-get install shellcheck")


@pytest.mark.parametrize("value", ["true", "True", "1"])
def test_a_missing_tool_fails_a_ci_run_naming_it(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(CI_VARIABLE, value)
    with pytest.raises(pytest.fail.Exception, match=r"^Ceph RGW is not installed .*CI=true"):
        require_tool("Ceph RGW", None, ".ci/ceph-install.sh")


def test_a_present_tool_is_returned_in_ci_and_out(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("true", ""):
        monkeypatch.setenv(CI_VARIABLE, value)
        assert require_tool("node", "/usr/bin/node", "Node.js") == "/usr/bin/node"
