"""Running the command under test in a run's venv, and reading its exit as ``git bisect run``
does: 0 good, 125 skip, 1-127 otherwise bad; killed by a signal, or an exit of 128 or more,
aborts the bisect (the command itself broke, or someone stopped it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from wheelgate.bisect.search import Verdict

#: The exit ``git bisect run`` reads as "cannot test this one".
EXIT_SKIP = 125
#: The exit the log records for a command that ran out of time (what ``timeout(1)`` exits).
EXIT_TIMEOUT = 124
#: Exits from here up say the command was stopped, not that it judged the build.
EXIT_ABORTS = 128
#: Seconds a timed-out command's process group has to end after SIGTERM, before SIGKILL.
TERMINATE_GRACE_SECONDS = 5.0


class TimeoutIs(StrEnum):
    """What a command that ran out of time counts as (``--timeout-is``)."""

    BAD = "bad"
    SKIP = "skip"


class CommandAborted(Exception):
    """The command could not run, or was killed by a signal or exited 128 or more: the bisect
    stops here, having blamed nothing."""


@dataclass(frozen=True)
class CommandResult:
    """How the command ended: its exit (124 for a timeout), the verdict it gives, seconds."""

    exit_code: int
    verdict: Verdict
    seconds: float
    timed_out: bool = False


def venv_environment(venv: Path, base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with ``venv`` activated as its ``activate`` script does: its ``bin`` first on
    ``PATH``, ``VIRTUAL_ENV`` set, ``PYTHONHOME`` unset."""
    env = {k: v for k, v in base.items() if k != "PYTHONHOME"}
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    env["PATH"] = os.pathsep.join(p for p in (str(bin_dir), base.get("PATH", "")) if p)
    env["VIRTUAL_ENV"] = str(venv)
    return env


def verdict_of(exit_code: int) -> Verdict:
    """The verdict an exit gives. Raises :class:`CommandAborted` for a signal (negative) or
    an exit of 128 or more."""
    if exit_code < 0:
        raise CommandAborted(f"the command was killed by signal {-exit_code}")
    if exit_code >= EXIT_ABORTS:
        raise CommandAborted(f"the command exited {exit_code} (128 or more aborts the bisect)")
    if exit_code == 0:
        return Verdict.GOOD
    return Verdict.SKIP if exit_code == EXIT_SKIP else Verdict.BAD


def run_command(
    argv: Sequence[str],
    venv: Path,
    *,
    timeout: float | None = None,
    timeout_is: TimeoutIs = TimeoutIs.BAD,
    environ: Mapping[str, str] | None = None,
    stdout: int | None = None,
) -> CommandResult:
    """Run ``argv`` with ``venv`` activated; what it concludes. ``stdout``: the file
    descriptor its output goes to (``None``: this process's; ``--json`` gives stderr's, so
    stdout carries the result alone). Raises :class:`CommandAborted` when it cannot start, or
    ends by a signal or an exit >= 128."""
    env = venv_environment(venv, os.environ if environ is None else environ)
    started = time.monotonic()
    try:
        # A session of its own: a timeout ends the command's children too, and a Ctrl-C
        # reaches the bisect, which ends the command itself.
        process = subprocess.Popen(list(argv), env=env, start_new_session=True, stdout=stdout)
    except OSError as exc:
        raise CommandAborted(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from None
    try:
        exit_code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _end_group(process)
        seconds = time.monotonic() - started
        verdict = Verdict.SKIP if timeout_is is TimeoutIs.SKIP else Verdict.BAD
        return CommandResult(EXIT_TIMEOUT, verdict, seconds, timed_out=True)
    except BaseException:
        _end_group(process)
        raise
    return CommandResult(exit_code, verdict_of(exit_code), time.monotonic() - started)


def _end_group(process: subprocess.Popen[bytes]) -> None:
    """Stop the command and its children: SIGTERM, then SIGKILL after a grace period."""
    for sig, wait in ((signal.SIGTERM, TERMINATE_GRACE_SECONDS), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
