"""``make demo``'s last stage: three nightly runs of ``demo-kernels``, the second of which
plants a regression its smoke test misses; ``wheelgate bisect run`` between the first and the
third names the second, reading the run history and installing each run exactly."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Protocol

from wheelgate.local.sample_wheels import build_wheel

PROJECT = "demo-kernels"
#: Each run: its version, its commit, when the commit was made, and whether it is broken.
RUNS = {
    "b1": ("1.0.0", "a1" * 20, "2026-03-02T09:00:00Z", False),
    "b2": ("1.0.1", "b2" * 20, "2026-03-03T09:00:00Z", True),
    "b3": ("1.0.2", "c3" * 20, "2026-03-04T09:00:00Z", True),
}
GOOD_SOURCE = "def check():\n    return 'ok'\n"
BROKEN_SOURCE = "def check():\n    raise RuntimeError('kernel launch failed')\n"
#: What the bisect runs in each run's venv: exits 1 once the regression is in.
CHECK = ("python", "-c", "import demo_kernels; demo_kernels.check()")


class Demo(Protocol):
    """What this stage uses of the demo (:class:`wheelgate.local.demo.Demo`)."""

    work: Path
    env: dict[str, str]

    def step(self, name: str, ok: bool, started: float) -> None: ...

    def wheelgate(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]: ...

    def pip_install(
        self, name: str, index_url: str, requirement: str, *, quiet: bool = ..., modules: str = ...
    ) -> Path | None: ...

    def report(
        self, run: str, result: str, installed: dict[str, Path | None] | None = None
    ) -> tuple[int, dict[str, object], float]: ...


def stage_runs(demo: Demo, index: str, commits: dict[str, str]) -> None:
    """Stage, smoke-test (pip, from each run's own index) and report the three runs: all
    promoted, the regression unseen. ``commits`` gains each run's commit (the demo's table)."""
    wheels = demo.work / "bisect-wheels"
    for run, (version, commit, committed, broken) in RUNS.items():
        commits[run] = commit
        wheel = build_wheel(
            wheels / run,
            PROJECT,
            version,
            module_source=BROKEN_SOURCE if broken else GOOD_SOURCE,
        )
        started = time.monotonic()
        staged = demo.wheelgate(
            *("stage", "--run-id", run, "--index", index, "--commit", commit),
            *("--commit-time", committed, str(wheel)),
        )
        demo.step(f"run {run}: staged {wheel.name}", staged.returncode == 0, started)
        run_index = str(json.loads(staged.stdout)["index_url"])
        started = time.monotonic()
        smoke = demo.pip_install(
            f"venv-{run}", run_index, f"{PROJECT}=={version}", modules="demo_kernels"
        )
        demo.step(f"run {run}: smoke test installed {PROJECT} {version}", bool(smoke), started)
        code, record, started = demo.report(run, "passed", {"kernels-smoke": smoke})
        demo.step(f"run {run}: {record.get('state')}", code == 0, started)


def bisect(demo: Demo, index: str) -> None:
    """``wheelgate bisect run --good b1 --bad b3``: the first bad run is b2."""
    started = time.monotonic()
    found = demo.wheelgate(
        *("bisect", "run", "--index", index, "--good", "run:b1", "--bad", "run:b3"),
        *("--project", PROJECT, "--session", str(demo.work / "bisect-session")),
        *("--cache-dir", str(demo.work / "bisect-cache"), "--json", "--", *CHECK),
        check=False,
    )
    result = json.loads(found.stdout) if found.stdout.strip() else {}
    first_bad = (result.get("first_bad") or {}).get("run_id")
    last_good = (result.get("last_good") or {}).get("run_id")
    for line in found.stderr.splitlines():
        if line.startswith("["):
            print(f"    {line}", flush=True)
    if found.returncode != 0:
        sys.stderr.write(found.stderr[-3000:])
    demo.step(
        f"bisect: {len(result.get('steps', []))} installs over {result.get('candidates')} runs "
        f"name run {first_bad} the first bad (last good: run {last_good})",
        found.returncode == 0 and first_bad == "b2" and last_good == "b1",
        started,
    )
