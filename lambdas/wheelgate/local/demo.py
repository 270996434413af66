"""``make demo``: the whole WheelGate flow on this machine, as CI would drive it.

1. start ``wheelgate local`` (embedded S3, promoter loop, index servers);
2. seed nightly with ``demo-filelock`` through a normal promotion (its test installs it from
   the run's index);
3. run 1: stage ``demo-torch 2.7.0`` (needs demo-filelock, which only nightly has); two tests
   install it from the run's index in clean venvs, one with pip (its installation report is
   the evidence) and one with uv (``wheelgate installed`` reads the environment as evidence);
   report both passed, wait for promotion, install it from the nightly index with pip and uv;
4. run 2: stage ``demo-torch 2.8.0``, report a failed test: it is rejected and nightly keeps
   every byte it had;
5. ``wheelgate verify`` the wheel pip installed from nightly in step 3 against its signed
   verdict: run 1, its commit, its test, the gate;
6. day two (:mod:`wheelgate.local.day_two`): the break-glass role overrides run 2, and imports
   two older releases from an existing bucket;
7. bisect (:mod:`wheelgate.local.demo_bisect`): three runs of ``demo-kernels``, the second
   planting a regression its smoke test misses; ``wheelgate bisect run`` names it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from wheelgate.core.env_names import AWS_PREFIX, without_settings
from wheelgate.local import day_two, demo_bisect
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.local.snapshot import version_snapshot
from wheelgate.staging.hermetic import hermetic_env

INDEX = "v2/gfx94X-dcgpu"
COMMITS = {"seed": "1" * 40, "1": "2" * 40, "2": "3" * 40}


class Demo:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.steps: list[tuple[str, str, float]] = []
        self.local: subprocess.Popen[str] | None = None
        self.env: dict[str, str] = {}
        self.staging_url = self.nightly_url = ""

    def step(self, name: str, ok: bool, started: float) -> None:
        self.steps.append((name, "ok" if ok else "FAILED", time.monotonic() - started))
        print(f"[{'ok' if ok else 'FAILED'}] {name}", flush=True)
        if not ok:
            raise SystemExit(f"demo failed at: {name}")

    def wheelgate(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-m", "wheelgate", *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if check and result.returncode != 0:
            sys.stderr.write(result.stdout + result.stderr)
        return result

    def start_local(self) -> None:
        started = time.monotonic()
        log = (self.work / "local.log").open("w")
        self.local = subprocess.Popen(
            [sys.executable, "-m", "wheelgate", "local", "--index", INDEX, *day_two.LOCAL_OPTIONS],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        assert self.local.stdout is not None
        line = self.local.stdout.readline()
        if not line:
            # `wheelgate local` stopped before it was ready (without the local extra, say): its
            # own message says why, and its exit code is the demo's.
            code = self.local.wait()
            log.close()
            sys.stderr.write((self.work / "local.log").read_text())
            raise SystemExit(code)
        ready: dict[str, Any] = json.loads(line)
        self.env = {**os.environ, **ready["env"]}
        self.staging_url, self.nightly_url = ready["staging_url"], ready["nightly_url"]
        self.step(
            f"local stack up (staging {self.staging_url}, nightly {self.nightly_url})",
            bool(ready.get("ready")),
            started,
        )

    def stage(self, run: str, wheel: Path) -> str:
        """Stage ``wheel`` for ``run``; return the run's index URL that ``stage`` printed."""
        started = time.monotonic()
        staged = self.wheelgate(
            "stage", "--run-id", run, "--index", INDEX, "--commit", COMMITS[run], str(wheel)
        )
        self.step(f"run {run}: staged {wheel.name}", staged.returncode == 0, started)
        return str(json.loads(staged.stdout)["index_url"])

    def report(
        self, run: str, result: str, installed: dict[str, Path | None] | None = None
    ) -> tuple[int, dict[str, Any], float]:
        """Report the run's tests (``installed``: each test's evidence of what it installed;
        without it, one test ``demo-smoke``), wait for the decision; return when the wait
        started."""
        started = time.monotonic()
        url = f"https://github.com/example/project/actions/runs/{run}"
        options: list[str] = []
        for name, evidence in (installed or {"demo-smoke": None}).items():
            options += ["--test", f"{INDEX}:{name}={result}@{url}"]
            if evidence is not None:
                options += ["--installed", f"{INDEX}:{name}={evidence}"]
        reported = self.wheelgate("report", "--run-id", run, "--commit", COMMITS[run], *options)
        self.step(f"run {run}: reported test(s) {result}", reported.returncode == 0, started)
        written = json.loads(reported.stdout)["manifest_sha256"]
        started = time.monotonic()
        status = self.wheelgate(
            "status", run, "--wait", "60", "--manifest-sha256", written, check=False
        )
        return status.returncode, json.loads(status.stdout), started

    def pip_install(
        self,
        name: str,
        index_url: str,
        requirement: str,
        *,
        quiet: bool = False,
        modules: str = "demo_torch, demo_filelock",
    ) -> Path | None:
        """Install ``requirement`` in a clean venv and import ``modules``; pip's installation
        report, or ``None`` when either failed."""
        venv = self.work / name
        report = self.work / f"{name}.installed.json"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        env = hermetic_env()
        env.pop("PIP_FIND_LINKS", None)
        installed = subprocess.run(
            [
                *(str(venv / "bin" / "pip"), "install", "--report", str(report)),
                *("--index-url", index_url, requirement),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if installed.returncode != 0:
            if not quiet:
                sys.stderr.write(installed.stdout[-2000:] + installed.stderr[-2000:])
            return None
        probe = subprocess.run(
            [str(venv / "bin" / "python"), "-c", f"import {modules}"],
            capture_output=True,
            text=True,
            check=False,
        )
        return report if probe.returncode == 0 else None

    @staticmethod
    def installed_url(report: Path, project: str) -> str:
        """The URL pip downloaded ``project`` from, by its installation report."""
        for item in json.loads(report.read_text())["install"]:
            if item["metadata"]["name"] == project:
                return str(item["download_info"]["url"])
        return ""

    def uv_install(self, name: str, index_url: str, requirement: str) -> Path | None:
        """Install ``requirement`` with uv in a clean venv and import demo-torch; the
        environment as evidence (``wheelgate installed``), or ``None`` when any step failed."""
        uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
        if uv is None:
            sys.stderr.write("uv is not installed: pip install uv (requirements-dev.txt has it)\n")
            return None
        venv = self.work / name
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        env = hermetic_env()
        env.pop("PIP_FIND_LINKS", None)
        for command in (
            [uv, "pip", "install", "--python", python, "--index-url", index_url, requirement],
            [python, "-c", "import demo_torch, demo_filelock"],
        ):
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                sys.stderr.write(done.stdout[-2000:] + done.stderr[-2000:])
                return None
        evidence = self.work / f"{name}.environment.json"
        found = self.wheelgate("installed", "--python", python, "-o", str(evidence))
        return evidence if found.returncode == 0 else None

    def nightly_snapshot(self) -> dict[str, str]:
        import boto3

        s3 = boto3.client(
            "s3",
            endpoint_url=self.env["AWS_ENDPOINT_URL"],
            region_name=self.env["AWS_DEFAULT_REGION"],
            aws_access_key_id=self.env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=self.env["AWS_SECRET_ACCESS_KEY"],
        )
        return version_snapshot(s3, self.env["WHEELGATE_NIGHTLY_BUCKET"])

    def run(self) -> None:
        """Every step of the demo, in order; stops at the first that fails."""
        began = time.monotonic()
        wheels = self.work / "wheels"
        filelock = build_wheel(wheels, "demo-filelock", "3.18.0")
        torch_ok = build_wheel(wheels, "demo-torch", "2.7.0", requires=["demo-filelock>=3"])
        torch_bad = build_wheel(wheels, "demo-torch", "2.8.0", requires=["demo-filelock>=3"])
        self.start_local()
        self.seed(filelock)
        pip_report = self.release(torch_ok)
        self.refuse(torch_bad)
        self.verify(pip_report)
        day_two.override(self, "2", INDEX, torch_bad.name)
        day_two.import_releases(self, wheels, INDEX)
        demo_bisect.stage_runs(self, INDEX, COMMITS)
        demo_bisect.bisect(self, INDEX)
        self.summary(began)

    def seed(self, filelock: Path) -> None:
        """Promote demo-filelock to nightly through a normal run."""
        seed_index = self.stage("seed", filelock)
        started = time.monotonic()
        seed_installed = self.pip_install(
            "venv-seed", seed_index, "demo-filelock==3.18.0", modules="demo_filelock"
        )
        self.step(
            "seed: pip installed demo-filelock from the run's index", bool(seed_installed), started
        )
        code, _, started = self.report("seed", "passed", {"demo-smoke": seed_installed})
        self.step("seed: demo-filelock promoted to nightly", code == 0, started)

    def release(self, torch_ok: Path) -> Path:
        """Run 1: stage, test with pip and uv, promote, install from nightly; pip's report of
        that install."""
        run_index = self.stage("1", torch_ok)
        started = time.monotonic()
        installed = self.pip_install("venv-staging", run_index, "demo-torch==2.7.0")
        self.step(
            f"run 1: pip installed demo-torch==2.7.0 from the run's index {run_index} "
            "(demo-filelock resolved from nightly)",
            installed is not None,
            started,
        )
        started = time.monotonic()
        by_uv = self.uv_install("venv-staging-uv", run_index, "demo-torch==2.7.0")
        self.step(
            "run 1: uv installed demo-torch==2.7.0 from the run's index; wheelgate installed "
            "read the environment",
            by_uv is not None,
            started,
        )
        tests: dict[str, Path | None] = {"demo-smoke": installed, "demo-smoke-uv": by_uv}
        code, record, started = self.report("1", "passed", tests)
        [released] = record["sets"][0]["files"] if code == 0 else [{}]
        self.step(
            f"run 1: {record['state']} ({record['message']}; "
            f"{released.get('filename')} on the evidence of {released.get('evidence')})",
            code == 0 and released.get("evidence") == sorted(tests),
            started,
        )
        started = time.monotonic()
        nightly_index = f"{self.nightly_url}{INDEX}/"
        pip_report = self.pip_install("venv-nightly", nightly_index, "demo-torch==2.7.0")
        self.step(
            "run 1: pip installed demo-torch==2.7.0 from nightly", pip_report is not None, started
        )
        started = time.monotonic()
        ok = self.uv_install("venv-nightly-uv", nightly_index, "demo-torch==2.7.0")
        self.step("run 1: uv installed demo-torch==2.7.0 from nightly", ok is not None, started)
        assert pip_report is not None
        return pip_report

    def refuse(self, torch_bad: Path) -> None:
        """Run 2: a failed test rejects the run, and nightly keeps every byte it had."""
        before = self.nightly_snapshot()
        self.stage("2", torch_bad)
        code, record, started = self.report("2", "failed")
        self.step(
            f"run 2: {record['state']} ({record['reason']}: {record['message']})",
            code == 1 and record["reason"] == "tests-failed",
            started,
        )
        started = time.monotonic()
        after = self.nightly_snapshot()
        self.step(
            f"run 2: nightly unchanged ({len(after)} object versions, same ETags)",
            before == after,
            started,
        )
        started = time.monotonic()
        refused = (
            self.pip_install(
                "venv-refused", f"{self.nightly_url}{INDEX}/", "demo-torch==2.8.0", quiet=True
            )
            is None
        )
        self.step("run 2: demo-torch==2.8.0 cannot be installed from nightly", refused, started)

    def verify(self, pip_report: Path) -> None:
        """The wheel pip installed from nightly carries a verdict signed by the gate."""
        started = time.monotonic()
        url = self.installed_url(pip_report, "demo-torch")
        verified = self.wheelgate("verify", url, "--json", check=False)
        facts = json.loads(verified.stdout) if verified.stdout.strip() else {}
        self.step(
            f"verify: the installed {url.rsplit('/', 1)[-1]} carries a verdict signed by the gate "
            f"(run {facts.get('run_id')}, commit {str(facts.get('commit'))[:8]}, tests "
            f"{[t.get('name') for t in facts.get('tests', [])]})",
            verified.returncode == 0
            and facts.get("run_id") == "1"
            and facts.get("commit") == COMMITS["1"],
            started,
        )

    def summary(self, began: float) -> None:
        print("\nWheelGate demo summary")
        print(f"{'step':<80} {'result':>7} {'seconds':>8}")
        for name, result, seconds in self.steps:
            print(f"{name[:80]:<80} {result:>7} {seconds:8.1f}")
        print(f"total {time.monotonic() - began:.1f} s")

    def close(self) -> None:
        if self.local is not None:
            self.local.terminate()
            self.local.wait(timeout=10)


def main() -> int:
    # The demo talks to the embedded stack alone, in this process and in the commands it runs,
    # whatever this shell's AWS settings are set up for (a deployed stack's profile, endpoints).
    outside = without_settings(os.environ, AWS_PREFIX)
    os.environ.clear()
    os.environ.update(outside)
    with tempfile.TemporaryDirectory(prefix="wheelgate-demo-") as tmp:
        demo = Demo(Path(tmp))
        try:
            demo.run()
        finally:
            demo.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
