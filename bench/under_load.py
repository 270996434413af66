"""The race tests, many rounds in a row, beside CPU-burning neighbour processes.

A lost update shows only when a writer is descheduled at the wrong moment, which a loaded
machine makes likely: this runs the given tests with ``WHEELGATE_RACE_ROUNDS`` rounds each
(each round in a directory of its own; ``tests/integration/test_concurrency.py``) while
``--burners`` processes spin on the CPU, then prints, per test, the rounds run, passed and
failed, and the time. A test passes N times in a row when its failed count is 0.

    .venv/bin/python bench/under_load.py --rounds 20 --burners 1 \\
        tests/integration/test_page_races.py tests/integration/test_concurrency.py
    .venv/bin/python bench/under_load.py --rounds 50 --burners 1 \\
        "tests/integration/test_concurrency.py::test_eight_writers_adding_projects_keep_every_root_entry"
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ENV_ROUNDS = "WHEELGATE_RACE_ROUNDS"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tests", nargs="+", help="pytest node ids or files")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--burners", type=int, default=1)
    parser.add_argument("-k", dest="keyword", help="pytest -k expression")
    args = parser.parse_args()
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.burners)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.xml"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   f"--junitxml={report}", *args.tests]  # fmt: skip
        if args.keyword:
            command += ["-k", args.keyword]
        started = time.monotonic()
        try:
            subprocess.run(command, env={**os.environ, ENV_ROUNDS: str(args.rounds)}, check=False)
        finally:
            for burner in burners:
                burner.terminate()
                burner.wait(timeout=10)
        elapsed = time.monotonic() - started
        cases = ET.parse(report).getroot().iter("testcase")
        results: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        seconds: dict[str, float] = defaultdict(float)
        for case in cases:
            # One row per test and parameters, the round left out.
            name = re.sub(r"-?\d+\]$", "]", case.get("name", "")).replace("[]", "")
            row = results[name]
            row[0] += 1
            failed = any(child.tag in ("failure", "error") for child in case)
            row[2 if failed else 1] += 1
            seconds[name] += float(case.get("time", "0"))
    print(
        f"\n{args.rounds} round(s) per test, {args.burners} CPU-burning neighbour(s), "
        f"{os.cpu_count()} CPUs, {elapsed:.0f} s in all\n"
    )
    print("| test | rounds | passed | failed | seconds |")
    print("|---|---:|---:|---:|---:|")
    for name in sorted(results):
        run, passed, lost = results[name]
        print(f"| {name} | {run} | {passed} | {lost} | {seconds[name]:.0f} |")
    return 1 if any(row[2] for row in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
