"""``bench/bisect_cost.py`` in a quick mode: small sizes, the same code, the same checks (the
history read in one GET per month plus one, no LIST, no wheel; the planted culprit found in
at most ceil(log2 n) + 2 installs, no file downloaded twice)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from wheelgate.staging.hermetic import hermetic_env

# It starts `wheelgate local` in a process of its own and installs into a venv with uv.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def row(out: str, first_cell: str) -> list[str]:
    found = re.search(rf"^\| {re.escape(first_cell)} \|(.*)\|$", out, re.MULTILINE)
    assert found, (first_cell, out)
    return [cell.strip() for cell in found.group(1).split("|")]


def test_the_bench_reads_the_history_by_months_and_bisects_within_its_install_bound() -> None:
    # Given a history of 300 runs over 90 days, and 40 candidates: 6 of them lacking a wheel
    # in one directory, 13 failed and 4 never reported in another
    argv = ["--runs", "300", "--days", "90", "--one-by-one", "3", "--candidates", "40"]
    # When the bench runs (its own asserts hold the goals; a failed one exits non-zero)
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bisect_cost.py"), *argv, "--skips", "6"],
        capture_output=True,
        text=True,
        timeout=600,
        env=hermetic_env(),
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # Then both history readers took 1 + 3 GETs (January to March), no LIST and no wheel
    for reader in ("history, HTTP", "history, S3 API"):
        runs, months, gets, lists, wheels = row(done.stdout, reader)[:5]
        assert (runs, months, gets, lists, wheels) == ("300", "3", "4", "0", "0")
    # and the naive reader one GET per run, after a LIST
    assert row(done.stdout, "naive: LIST entries + GET each")[2:4] == ["300", "1"]
    # and the bisect found its culprit in at most ceil(log2 40) + 2 = 8 installs
    clean = row(done.stdout, "all staged")
    assert int(clean[2]) <= 8
    assert clean[3] == "0"
    assert clean[5] == "1"
    assert row(done.stdout, "6 lack their wheel")[5] == "1"
    # and with a third of the runs failed and a tenth never reported, within the same bound:
    # each installed by its failed test's evidence or its offer, none skipped, none twice
    mixed = row(done.stdout, "13 failed, 4 never reported")
    assert int(mixed[2]) <= 8
    assert mixed[3] == "0"
    assert mixed[5] == "1"
