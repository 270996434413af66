"""The command under test: its exit read as git bisect run reads it, in the run's venv."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from wheelgate.bisect.command import (
    EXIT_TIMEOUT,
    CommandAborted,
    TimeoutIs,
    run_command,
    venv_environment,
)
from wheelgate.bisect.search import Verdict


def sh(script: str) -> list[str]:
    return ["sh", "-c", script]


@pytest.mark.parametrize(
    ("code", "verdict"),
    [
        (0, Verdict.GOOD),
        (1, Verdict.BAD),
        (125, Verdict.SKIP),
        (126, Verdict.BAD),
        (127, Verdict.BAD),
    ],
)
def test_exit_codes_map_as_git_bisect_run_maps_them(
    tmp_path: Path, code: int, verdict: Verdict
) -> None:
    result = run_command(sh(f"exit {code}"), tmp_path)
    assert (result.exit_code, result.verdict, result.timed_out) == (code, verdict, False)


@pytest.mark.parametrize(
    ("timeout_is", "verdict"), [(TimeoutIs.BAD, Verdict.BAD), (TimeoutIs.SKIP, Verdict.SKIP)]
)
def test_a_timeout_is_bad_unless_told_skip_and_logged_as_124(
    tmp_path: Path, timeout_is: TimeoutIs, verdict: Verdict
) -> None:
    result = run_command(sh("sleep 30"), tmp_path, timeout=0.3, timeout_is=timeout_is)
    assert (result.exit_code, result.verdict, result.timed_out) == (EXIT_TIMEOUT, verdict, True)
    assert result.seconds < 10


def test_a_timeout_ends_the_commands_children_too(tmp_path: Path) -> None:
    marker = tmp_path / "survived"
    run_command(sh(f"(sleep 1; touch {marker}) & sleep 30"), tmp_path, timeout=0.2)
    time.sleep(1.5)
    assert not marker.exists()


@pytest.mark.parametrize("script", ["kill -9 $$", "exit 130", "exit 255"])
def test_a_signal_or_an_exit_of_128_or_more_aborts(tmp_path: Path, script: str) -> None:
    with pytest.raises(CommandAborted, match=r"signal 9|128 or more"):
        run_command(sh(script), tmp_path)


def test_a_command_that_cannot_start_aborts_naming_it(tmp_path: Path) -> None:
    with pytest.raises(CommandAborted, match="no-such-command"):
        run_command(["no-such-command-anywhere"], tmp_path)


def test_the_command_runs_with_the_venv_activated(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    tool = venv / "bin" / "only-in-venv"
    tool.write_text('#!/bin/sh\n[ "$VIRTUAL_ENV" = "$1" ] && exit 0 || exit 1\n')
    tool.chmod(0o755)
    assert run_command(["only-in-venv", str(venv)], venv).verdict is Verdict.GOOD


def test_the_venv_environment_puts_its_bin_first_and_drops_pythonhome(tmp_path: Path) -> None:
    env = venv_environment(tmp_path, {"PATH": "/usr/bin", "PYTHONHOME": "/x"})
    assert env["PATH"] == f"{tmp_path / 'bin'}{os.pathsep}/usr/bin"
    assert env["VIRTUAL_ENV"] == str(tmp_path)
    assert "PYTHONHOME" not in env
