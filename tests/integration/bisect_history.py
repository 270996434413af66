"""A run history made the way CI makes one, for the end-to-end bisect tests: each run staged
by ``wheelgate stage``, installed by its test job with real pip from the run's own index,
reported with that installation as evidence by ``wheelgate report``, and decided by the
promoter loop of ``wheelgate local``; then the troubles a bisect meets are planted as they
happen (a file deleted or replaced in staging, a run staged long ago).

The runs of :data:`INDEX`, one commit each, in commit order (``BUILD`` is in each wheel's
module; from :data:`PLANTED` on, importing it raises):

0. good, promoted;
1. staged, never reported: installed by its offer (its own wheel alone, which needs nothing);
2. its files past the 14 days of staging's lifecycle, as the history holds them 20 days after
   it was staged (``expired``);
3. its staged wheel deleted after the decision (``missing-file``);
4. its staged wheel replaced by other bytes after the decision (``hash-mismatch``);
5. a wheel whose metadata refuses every Python there is, which its test job installed with
   ``--ignore-requires-python`` (``install-failed``);
6. good, promoted;
7. the planted regression;
8. bad.

Runs 2 to 5, 7 and 8 have a passed install test and a failed test beside it, so they are
rejected and keep their files in staging only, as the troubles need.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.integration.conftest import LocalProcess
from tests.integration.installs import pip, sha256
from wheelgate.core.layout import STAGING
from wheelgate.core.timestamps import upload_time
from wheelgate.history.model import HistoryRun
from wheelgate.history.store import HistoryStore
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.storage.bucket import Bucket

INDEX = "e2e/blame"
PROJECT = "e2e-blame"
MODULE = "e2e_blame"
RUNS = 9
PLANTED = 7
TROUBLES = {
    2: "expired",
    3: "missing-file",
    4: "hash-mismatch",
    5: "install-failed",
}
#: The first commit's time; each next commit is an hour later.
FIRST_COMMIT = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
#: How long ago run 2 is taken to have been staged: more than local staging's 14 days of run
#: expiry.
LONG_AGO = timedelta(days=20)

#: The command each test bisects with (run with the step's venv activated): it reads the
#: installed BUILD from the module's source without importing it, logs it to ``LOG``, behaves as
#: ``MODE`` says when BUILD is ``AT`` (``kill-parent``: when ``AT`` calls are logged, before
#: logging this one; ``signal`` until ``LOG.fixed`` exists), and otherwise exits as importing the
#: module does.
CHECK_SCRIPT = """\
import importlib.util, os, re, signal, sys, time

mode, at, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
origin = importlib.util.find_spec("e2e_blame").origin
build = int(re.search(r"BUILD = (\\d+)", open(origin).read()).group(1))
before = len(open(log).read().split()) if os.path.exists(log) else 0
if mode == "kill-parent" and before == at:
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(5)
with open(log, "a") as calls:
    calls.write(f"{build}\\n")
if build == at:
    if mode == "skip":
        sys.exit(125)
    if mode == "hang":
        time.sleep(60)
    if mode == "signal" and not os.path.exists(log + ".fixed"):
        os.kill(os.getpid(), signal.SIGKILL)
if mode == "threshold":
    sys.exit(1 if build >= at else 0)
try:
    import e2e_blame
except RuntimeError:
    sys.exit(1)
"""


@dataclass(frozen=True)
class BlameRun:
    """One run of the history: its id, commit, wheel, and the manifest's evidence."""

    number: int
    run_id: str
    commit: str
    wheel: Path


@dataclass(frozen=True)
class BlameHistory:
    """The history's runs, by number, and the command script."""

    runs: tuple[BlameRun, ...]
    script: Path

    def run_id(self, number: int) -> str:
        return self.runs[number].run_id


def commit_of(number: int) -> str:
    return hashlib.sha256(f"e2e-blame-{number}".encode()).hexdigest()[:40]


def _buckets(local: LocalProcess) -> tuple[Bucket, Bucket]:
    s3 = local.client("s3")
    return (
        Bucket(s3, local.env["WHEELGATE_STAGING_BUCKET"]),
        Bucket(s3, local.env["WHEELGATE_NIGHTLY_BUCKET"]),
    )


def _stage(local: LocalProcess, run: BlameRun, commit_time: datetime) -> str:
    """Stage ``run``'s wheel; the run's index URL."""
    staged = local.wheelgate(
        *("stage", "--run-id", run.run_id, "--index", INDEX, "--commit", run.commit),
        *("--commit-time", commit_time.isoformat(), str(run.wheel)),
    )
    assert staged.returncode == 0, staged.stderr
    return str(json.loads(staged.stdout)["index_url"])


def _test_job(make_venv: Any, run: BlameRun, index_url: str) -> Path:
    """What the run's install test does: pip installs the run's wheel from the run's index,
    with its installation report (run 5's job ignores Requires-Python, as a job on an
    interpreter the metadata did not foresee would need to)."""
    venv: Path = make_venv(f"job-{run.number}")
    report = venv / "installed.json"
    extra = ["--ignore-requires-python"] if run.number == 5 else []
    result = pip(
        report.parent,
        *("install", *extra, "--report", str(report), "--index-url", index_url),
        f"{PROJECT}=={run.wheel.name.split('-')[1]}",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    [item] = json.loads(report.read_text())["install"]
    assert item["download_info"]["archive_info"]["hashes"]["sha256"] == sha256(run.wheel)
    return report


def _expire(local: LocalProcess, run: BlameRun) -> None:
    """Age ``run`` in its history by :data:`LONG_AGO`: its staged files expired, as the
    promoter dated them (the history dates a run by S3's writes of its objects, which no clock
    of a stage call moves)."""
    staging, _ = _buckets(local)
    store = HistoryStore(staging)
    month = store.find_month(INDEX, run.run_id)
    assert month is not None
    gone = upload_time(datetime.now(UTC) - LONG_AGO + timedelta(days=14))

    def aged(found: HistoryRun | None) -> HistoryRun:
        assert found is not None
        files = tuple(f.model_copy(update={"expires_at": gone}) for f in found.files)
        return found.model_copy(update={"files": files})

    store.change_run(INDEX, month, run.run_id, aged)


def _report(local: LocalProcess, run: BlameRun, report: Path, commit_time: datetime) -> None:
    """Report the install test passed with its evidence; every run but the good ones also
    fails a second test, so it is rejected and its files stay in staging only."""
    good = run.number in (0, 6)
    url = f"https://github.com/example/project/actions/runs/{run.run_id}"
    tests = ["--test", f"{INDEX}:install=passed@{url}", "--installed", f"{INDEX}:install={report}"]
    if not good:
        tests += ["--test", f"{INDEX}:gpu=failed@{url}"]
    tests += ["--commit-time", commit_time.isoformat()]
    reported = local.wheelgate("report", "--run-id", run.run_id, "--commit", run.commit, *tests)
    assert reported.returncode == 0, reported.stderr
    status = local.wheelgate("status", run.run_id, "--wait", "60")
    assert status.returncode == (0 if good else 1), status.stdout + status.stderr


def build_history(local: LocalProcess, make_venv: Any, work: Path, tag: str) -> BlameHistory:
    """Stage, test, report and decide the runs of :data:`INDEX`, then plant the troubles.
    ``tag`` keeps run ids apart from other tests' on the same local stack."""
    runs = []
    for number in range(RUNS):
        commit = commit_of(number)
        source = f"BUILD = {number}\n"
        if number >= PLANTED:
            source += 'raise RuntimeError("planted regression")\n'
        wheel = build_wheel(
            work / f"w{number}",
            PROJECT,
            # Local labels holding the commit: PEP 440 orders these by the hash, not by commit.
            # Run 6 is a new public version: nightly refuses a second label of a released one.
            f"{'1.0' if number < 6 else '1.1'}+g{commit[:7]}",
            module_source=source,
            requires_python=">=4" if number == 5 else ">=3.9",
        )
        run = BlameRun(number, f"{tag}{number}", commit, wheel)
        runs.append(run)
        commit_time = FIRST_COMMIT + timedelta(hours=number)
        index_url = _stage(local, run, commit_time)
        if number != 1:
            _report(local, run, _test_job(make_venv, run, index_url), commit_time)
    local.wait_idle()
    _expire(local, runs[2])
    staging, _ = _buckets(local)
    key_3 = STAGING.artifact(runs[3].run_id, INDEX, runs[3].wheel.name)
    local.client("s3").delete_object(Bucket=staging.name, Key=key_3)
    key_4 = STAGING.artifact(runs[4].run_id, INDEX, runs[4].wheel.name)
    local.client("s3").put_object(Bucket=staging.name, Key=key_4, Body=b"other bytes" * 100)
    script = work / "check.py"
    script.write_text(CHECK_SCRIPT)
    return BlameHistory(tuple(runs), script)
