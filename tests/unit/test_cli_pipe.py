"""Output piped into a reader that stops early (``wheelgate status R | head``) ends quietly."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

from wheelgate.cli.common import EXIT_BROKEN_PIPE


def fill(fd: int) -> None:
    """Write to the pipe ``fd`` until it holds no more."""
    os.set_blocking(fd, False)
    for chunk in (b"\n" * 65536, b"\n"):
        with contextlib.suppress(BlockingIOError):
            while True:
                os.write(fd, chunk)
    os.set_blocking(fd, True)


def test_a_reader_that_goes_away_ends_the_command_without_a_traceback() -> None:
    # Given a pipe already full, so the command cannot write all of its output at once (as
    # when `status` prints more than a pipe holds), whose reader reads a few bytes and quits
    read_end, write_end = os.pipe()
    fill(write_end)
    command = subprocess.Popen(
        [sys.executable, "-m", "wheelgate", "schema"], stdout=write_end, stderr=subprocess.PIPE
    )
    os.close(write_end)
    assert os.read(read_end, 16)
    os.close(read_end)
    # When the command writes into the closed pipe
    _, stderr = command.communicate(timeout=60)
    # Then it says nothing and exits as a program that SIGPIPE ended would
    assert b"Traceback" not in stderr, stderr.decode()
    assert b"BrokenPipeError" not in stderr, stderr.decode()
    assert stderr == b""
    assert command.returncode == EXIT_BROKEN_PIPE == 141
