"""The one progress reporter of the CLI (``wheelgate.cli.common.Progress``): what ``stage``,
``import`` and ``deps sync`` print on stderr, in CI logs and on a terminal."""

from __future__ import annotations

import io
import sys

import pytest

from wheelgate.cli.common import Progress


class Terminal(io.StringIO):
    """stderr that says it is a terminal, as an operator's is."""

    def isatty(self) -> bool:
        return True


def test_a_ci_log_gets_a_line_at_the_start_and_each_tenth(
    capsys: pytest.CaptureFixture[str],
) -> None:
    progress = Progress()
    for done in (0, 5, 10, 55, 100):
        progress("torch.whl", done, 100)
    assert capsys.readouterr().err.splitlines() == [
        "upload torch.whl: 0% of 100 bytes",
        "upload torch.whl: 10% of 100 bytes",
        "upload torch.whl: 55% of 100 bytes",
        "upload torch.whl: 100% of 100 bytes",
    ]


def test_a_ci_log_gets_a_line_per_quarter_of_each_download_and_one_of_unknown_size(
    capsys: pytest.CaptureFixture[str],
) -> None:
    progress = Progress(verb="download", steps=4)
    for done in (0, 30, 60, 90, 120):
        progress("a", done, 120)
        progress("b", done * 1000, None)
    progress.finish()
    assert capsys.readouterr().err.splitlines() == [
        "download a: 0% of 120 bytes",
        "download b: 0 bytes",
        "download a: 25% of 120 bytes",
        "download a: 50% of 120 bytes",
        "download a: 75% of 120 bytes",
        "download a: 100% of 120 bytes",
    ]


def test_counted_files_say_their_unit(capsys: pytest.CaptureFixture[str]) -> None:
    Progress(unit="files", verb="gather")("import-1", 3, 3)
    assert capsys.readouterr().err == "gather import-1: 100% of 3 files\n"


def test_a_terminal_redraws_one_line_and_keeps_a_finished_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    progress = Progress()
    # When a file is half sent while another is under way, then finished
    progress("a.whl", 1_000_000, 2_000_000)
    progress("b.whl", 0, 4_000_000)
    progress("a.whl", 2_000_000, 2_000_000)
    lines = terminal.getvalue().split("\r")[1:]
    # Then each draw is one line: its bar and MB, and how many others are under way
    assert lines[0].startswith(f"{'a.whl':50} [{'#' * 15:30}]  50.0% 1.0/2.0 MB")
    assert lines[1].rstrip().endswith("0.0/4.0 MB (+1 under way)")
    assert lines[2].rstrip(" \n").endswith(f"[{'#' * 30}] 100.0% 2.0/2.0 MB (+1 under way)")
    # And only the finished file's line was ended
    assert [line.endswith("\n") for line in lines] == [False, False, True]


def test_finish_ends_a_terminal_line_a_download_of_unknown_size_left_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    progress = Progress(verb="download", steps=4)
    progress("deps.tar", 1_500_000, None)
    assert terminal.getvalue().rstrip() == f"\r{'deps.tar':50} 1.5 MB"
    progress.finish()
    progress.finish()
    assert terminal.getvalue().endswith("   \n")
    assert terminal.getvalue().count("\n") == 1
