"""What bisecting across staging costs: reading a long run history, and a bisect's installs.

Both parts run against ``wheelgate local --no-promoter`` (moto's S3 over HTTP, and the staging
distribution served from it), in a process of its own (:func:`local_s3.local_s3`).

1. **History.** ``--runs`` runs of one index directory, spread over ``--days`` (10,000 over two
   years: about 14 a day, 24 months), each with three wheels and a passed test's evidence, one
   in seven rejected. They are written with the promoter's own writer
   (:class:`~wheelgate.history.store.HistoryStore`): all but the last ``--one-by-one`` through
   :meth:`~wheelgate.history.store.HistoryStore.change_runs`, one conditional write per month
   (a change per run would rewrite a month's shard 400 times), the rest through ``change_run``
   one at a time, timed, as the promoter folds them. The newest ``--naive-runs`` runs' stage
   entries are written too.
   Then the history is read with :func:`~wheelgate.history.reader.read_history` over HTTP and
   through the S3 API (every request counted by a boto3 event hook), beside a naive reader that
   lists those stage entries and GETs each.
2. **Bisect.** ``--candidates`` runs of another directory, each a real wheel staged over HTTP,
   the first bad one planted; :func:`~wheelgate.bisect.runner.run_bisect` with the real
   :class:`~wheelgate.bisect.install.PipRunInstaller` (``--installer``, uv by default) and
   :class:`~wheelgate.bisect.cache.BisectCache` downloading from the staging distribution, and
   a real command in the venv. Then again over a copy of the directory where ``--skips`` of the
   runs lack their wheel (each skipped as ``missing-file``), and over a third where a third of
   the runs failed their test (installed by the failed test's evidence) and a tenth were never
   reported (installed by their offer): none skipped. Every download is counted by file.

    .venv/bin/python bench/bisect_cost.py [--runs 10000] [--candidates 1000] [--skips 100]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from local_s3 import local_s3

from wheelgate.bisect.cache import BisectCache
from wheelgate.bisect.candidates import Order
from wheelgate.bisect.command import CommandResult, run_command
from wheelgate.bisect.download import Downloader
from wheelgate.bisect.install import PipRunInstaller
from wheelgate.bisect.run_installer import PlannedFile
from wheelgate.bisect.runner import run_bisect
from wheelgate.bisect.search import Verdict
from wheelgate.bisect.session import InstallerArgs, Session, SessionArgs, SessionStore
from wheelgate.core.layout import HISTORY_PREFIX, STAGING
from wheelgate.core.manifest import InstalledFile
from wheelgate.core.timestamps import upload_time
from wheelgate.history.fold import history_file
from wheelgate.history.model import (
    CommitTimeBy,
    EntryFile,
    HistoryRun,
    RunState,
    StagedEntry,
    TestRecord,
)
from wheelgate.history.reader import BucketHistorySource, HttpHistorySource, read_history
from wheelgate.history.store import HistoryStore
from wheelgate.local.names import STAGING_BUCKET
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.http import fetch

HISTORY_INDEX = "v2/gfx94X-dcgpu"
BISECT_INDEX = "bench/bisect"
SKIPS_INDEX = "bench/bisect-skips"
MIXED_INDEX = "bench/bisect-failed-and-unreported"
START = datetime(2025, 1, 1, 0, 30, tzinfo=UTC)
#: After every run was staged: the bisect's clock.
NOW = datetime(2027, 1, 1, tzinfo=UTC)
#: Staging's lifecycle (``run_expiry_days``): files of the history's runs get an expiry.
RUN_EXPIRY_DAYS = 14
#: A run's wheels: ROCm's torch family, sharing a version that differs by a local label.
PROJECTS = ("torch", "torchvision", "torchaudio")
#: The command under test: its build's verdict, as a regression test's exit would give it.
COMMAND = ("python", "-c", "import probe, sys; sys.exit(probe.EXIT)")
#: Whether a history request read a wheel: any key outside the history's own documents.
JSON = "application/json"


def commit_of(n: int) -> str:
    return hashlib.sha1(f"commit {n}".encode()).hexdigest()


def staged_at(n: int, runs: int, days: int) -> str:
    return upload_time(START + timedelta(days=days) * n / runs)


# --- Part 1: the history ----------------------------------------------------------------------


def history_runs(runs: int, days: int) -> list[tuple[HistoryRun, StagedEntry]]:
    """The history's runs, oldest first, with the stage entry each one's build job wrote."""
    made: list[tuple[HistoryRun, StagedEntry]] = []
    for n in range(runs):
        run_id, commit, at = str(20_000_000 + n), commit_of(n), staged_at(n, runs, days)
        version = f"2.7.0a0+rocm7.0.0.dev0.{commit[:8]}"
        names = [f"{p}-{version}-cp312-cp312-linux_x86_64.whl" for p in PROJECTS]
        entry_files = tuple(
            EntryFile(filename=name, sha256=hashlib.sha256(name.encode()).hexdigest(), size=1000)
            for name in names
        )
        files = tuple(
            history_file(
                run_id,
                HISTORY_INDEX,
                f.filename,
                f.sha256,
                f.size,
                staged_at=at,
                run_expiry_days=RUN_EXPIRY_DAYS,
            )
            for f in entry_files
        )
        rejected = n % 7 == 3
        entry = StagedEntry(
            run_id=run_id, index=HISTORY_INDEX, commit=commit, staged_at=at, files=entry_files
        )
        test = TestRecord(
            name="smoke",
            result="failed" if rejected else "passed",
            installed=tuple(InstalledFile(sha256=f.sha256, filename=f.filename) for f in files),
        )
        run = HistoryRun(
            run_id=run_id,
            index=HISTORY_INDEX,
            commit=commit,
            commit_time=at,
            staged_at=at,
            reported_at=at,
            decided_at=at,
            state=RunState.REJECTED if rejected else RunState.PROMOTED,
            reasons=("tests-failed",) if rejected else (),
            tests=(test,),
            files=files,
        )
        made.append((run, entry))
    return made


@dataclass
class Requests:
    """Requests a client sent, by operation, and how many read a wheel."""

    operations: Counter[str] = field(default_factory=Counter)
    wheel_gets: int = 0
    bytes_read: int = 0

    def hook(self, client: Any) -> Any:
        def before(model: Any, params: dict[str, Any], **_: Any) -> None:
            self.operations[model.name] += 1
            if model.name == "GetObject" and not str(params.get("Key", "")).startswith(
                HISTORY_PREFIX
            ):
                self.wheel_gets += 1

        def after(model: Any, parsed: dict[str, Any], **_: Any) -> None:
            self.bytes_read += int(parsed.get("ContentLength") or 0)

        client.meta.events.register("before-parameter-build.s3", before)
        client.meta.events.register("after-call.s3.GetObject", after)
        return client


@dataclass(frozen=True)
class Read:
    """One way of reading the history, as the table shows it."""

    reader: str
    runs: int
    months: int
    gets: int
    lists: int
    wheel_gets: int
    bytes_read: int
    seconds: float


def write_history(
    staging: Bucket,
    made: Sequence[tuple[HistoryRun, StagedEntry]],
    one_by_one: int,
    naive_runs: int,
) -> tuple[float, float]:
    """Write the runs, and the entries of the newest ``naive_runs`` (what the naive reader
    reads: 10,000 create-only PUTs take longer than the rest of the bench on a shared machine);
    seconds for the bulk and per run one at a time."""
    store = HistoryStore(staging)
    bulk, single = made[: len(made) - one_by_one], made[len(made) - one_by_one :]
    months: dict[str, list[HistoryRun]] = {}
    for run, _ in bulk:
        months.setdefault(run.month, []).append(run)
    started = time.monotonic()
    for month, runs in months.items():
        store.change_runs(HISTORY_INDEX, month, {r.run_id: (lambda _old, r=r: r) for r in runs})
    bulk_seconds = time.monotonic() - started
    started = time.monotonic()
    for run, _ in single:
        store.change_run(HISTORY_INDEX, run.month, run.run_id, lambda _old, r=run: r)
    per_run = (time.monotonic() - started) / max(1, len(single))

    def put_entry(item: tuple[HistoryRun, StagedEntry]) -> None:
        entry = item[1]
        key = STAGING.history_entry(entry.index, entry.run_id, entry.entry_id)
        staging.put(key, entry.to_json().encode(), content_type=JSON, if_none_match=True)

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(put_entry, made[len(made) - naive_runs :]))
    return bulk_seconds, per_run


def read_over_http(staging_url: str) -> Read:
    urls: list[str] = []
    sizes: list[int] = []

    def counted(url: str) -> bytes | None:
        body = fetch(url)
        urls.append(url)
        sizes.append(len(body or b""))
        return body

    source = HttpHistorySource(staging_url, counted)
    started = time.monotonic()
    runs = read_history(source, HISTORY_INDEX)
    seconds = time.monotonic() - started
    wheels = sum(not u.removeprefix(staging_url).startswith(HISTORY_PREFIX) for u in urls)
    months = len({r.month for r in runs})
    return Read("history, HTTP", len(runs), months, source.gets, 0, wheels, sum(sizes), seconds)


def read_over_s3() -> Read:
    requests = Requests()
    client = requests.hook(boto3.client("s3"))
    started = time.monotonic()
    runs = read_history(BucketHistorySource(Bucket(client, STAGING_BUCKET)), HISTORY_INDEX)
    seconds = time.monotonic() - started
    ops = requests.operations
    return Read(
        "history, S3 API",
        len(runs),
        len({r.month for r in runs}),
        ops["GetObject"],
        ops["ListObjectsV2"] + ops["ListObjects"],
        requests.wheel_gets,
        requests.bytes_read,
        seconds,
    )


def read_naively() -> Read:
    """Every stage entry listed, then each read: what a history without shards would cost
    (and it still lacks the decisions and the tests)."""
    requests = Requests()
    client = requests.hook(boto3.client("s3", config=Config(max_pool_connections=32)))
    prefix = f"{HISTORY_PREFIX}_entries/{HISTORY_INDEX}/"
    started = time.monotonic()
    keys = [
        item["Key"]
        for page in client.get_paginator("list_objects_v2").paginate(
            Bucket=STAGING_BUCKET, Prefix=prefix
        )
        for item in page.get("Contents", [])
    ]

    def read(key: str) -> StagedEntry:
        body = client.get_object(Bucket=STAGING_BUCKET, Key=key)["Body"].read()
        return StagedEntry.model_validate_json(body)

    with ThreadPoolExecutor(max_workers=16) as pool:
        entries = list(pool.map(read, keys))
    seconds = time.monotonic() - started
    ops = requests.operations
    return Read(
        "naive: LIST entries + GET each",
        len(entries),
        len({e.staged_at[:7] for e in entries}),
        ops["GetObject"],
        ops["ListObjectsV2"],
        requests.wheel_gets,
        requests.bytes_read,
        seconds,
    )


# --- Part 2: the bisect -----------------------------------------------------------------------


class CountingDownloader(Downloader):
    """The cache's downloader, counting each file's downloads by SHA-256."""

    def __init__(self) -> None:
        super().__init__()
        self.by_file: Counter[str] = Counter()
        self._lock = threading.Lock()

    def download(self, file: PlannedFile, destination: Path) -> int:
        size = super().download(file, destination)
        with self._lock:
            self.by_file[file.sha256] += 1
        return size


@dataclass(frozen=True)
class Bisected:
    """One bisect, as the table shows it."""

    variant: str
    candidates: int
    probes: int
    installs: int
    skipped: int
    downloads: int
    most_downloads_of_a_file: int
    hits: int
    found: str
    seconds: float


def bisect_runs(
    staging: Bucket,
    index: str,
    count: int,
    first_bad: int,
    wheels: Path,
    *,
    missing: frozenset[int] = frozenset(),
    failed: frozenset[int] = frozenset(),
    unreported: frozenset[int] = frozenset(),
) -> None:
    """Stage ``count`` runs of ``index``, each a real wheel of ``probe`` whose ``EXIT`` is 1
    from ``first_bad`` on; those in ``missing`` lack their staged wheel. Recorded in the
    history with its test's evidence, passed; those in ``failed`` rejected, their test failed;
    those in ``unreported`` staged and never reported (installed by their offer)."""
    store = HistoryStore(staging)
    runs: dict[str, dict[str, HistoryRun]] = {}
    uploads: list[tuple[str, bytes]] = []
    for n in range(count):
        run_id, commit, at = str(30_000_000 + n), commit_of(n), staged_at(n, count, 60)
        wheel = build_wheel(
            wheels / index.replace("/", "-") / run_id,
            "probe",
            f"1.0.0+{commit[:8]}",
            module_source=f"EXIT = {int(n >= first_bad)}\n",
        )
        data = wheel.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        file = history_file(
            run_id, index, wheel.name, digest, len(data), staged_at=at, run_expiry_days=None
        )
        if n not in missing:
            uploads.append((file.staging_key, data))
        test = TestRecord(
            name="smoke",
            result="failed" if n in failed else "passed",
            installed=(InstalledFile(sha256=digest, filename=wheel.name),),
        )
        run = HistoryRun(
            run_id=run_id,
            index=index,
            commit=commit,
            commit_time=at,
            commit_time_by=CommitTimeBy.REPORTER,
            staged_at=at,
            reported_at=at,
            decided_at=at,
            state=RunState.REJECTED if n in failed else RunState.PENDING,
            reasons=("tests-failed",) if n in failed else (),
            tests=(test,),
            files=(file,),
        )
        if n in unreported:
            run = HistoryRun(
                run_id=run_id,
                index=index,
                commit=commit,
                staged_at=at,
                state=RunState.STAGED,
                files=(file,),
            )
        runs.setdefault(run.month, {})[run_id] = run
    for month, of_month in runs.items():
        store.change_runs(index, month, {i: (lambda _old, r=r: r) for i, r in of_month.items()})
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(
            pool.map(
                lambda kv: staging.put(kv[0], kv[1], content_type="application/octet-stream"),
                uploads,
            )
        )


def bisect_once(
    variant: str, index: str, staging_url: str, installer: str, work: Path
) -> tuple[Bisected, int]:
    """Read ``index``'s history over HTTP and bisect it from its oldest run to its newest;
    the row and the first bad candidate found (-1: none)."""
    runs = list(reversed(read_history(HttpHistorySource(staging_url, fetch), index)))
    downloader = CountingDownloader()
    cache = BisectCache(work / "cache", downloader=downloader)
    args = SessionArgs(
        index=index,
        good=runs[0].run_id,
        bad=runs[-1].run_id,
        command=COMMAND,
        install=InstallerArgs(
            installer="uv" if installer == "uv" else "pip",
            python=sys.executable,
            cache_dir=str(work / "cache"),
            staging_url=staging_url,
        ),
    )
    session = Session(args=args, order=Order.COMMIT_TIME, candidates=tuple(runs))
    runner = PipRunInstaller(
        cache=cache,
        staging_base_url=staging_url,
        nightly_base_url=None,
        installer="uv" if installer == "uv" else "pip",
        python=sys.executable,
        now=lambda: NOW,
    )

    def command(venv: Path) -> CommandResult:
        return run_command(COMMAND, venv)

    started = time.monotonic()
    session, outcome = run_bisect(session, SessionStore(work / "session"), runner, command)
    seconds = time.monotonic() - started
    skipped = sum(s.verdict is Verdict.SKIP for s in session.steps)
    found = (
        f"run {runs[outcome.first_bad].run_id} (candidate {outcome.first_bad})"
        if outcome.first_bad is not None and len(outcome.could_be) <= 1
        else f"could be any of {len(outcome.could_be)}"
    )
    counters = cache.counters
    row = Bisected(
        variant,
        len(runs),
        len(session.steps),
        len(session.steps) - skipped,
        skipped,
        counters.downloads,
        max(downloader.by_file.values(), default=0),
        counters.hits,
        found,
        seconds,
    )
    return row, -1 if outcome.first_bad is None else outcome.first_bad


# --- The run ----------------------------------------------------------------------------------


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=positive, default=10_000, help="runs in the history")
    parser.add_argument("--days", type=positive, default=730, help="days they span")
    parser.add_argument(
        "--one-by-one", type=int, default=20, help="runs written one change at a time (timed)"
    )
    parser.add_argument(
        "--naive-runs",
        type=positive,
        default=1000,
        help="runs whose stage entries the naive reader lists and reads (the newest)",
    )
    parser.add_argument("--candidates", type=positive, default=1000, help="runs to bisect")
    parser.add_argument("--skips", type=int, default=100, help="runs lacking their wheel")
    parser.add_argument("--installer", choices=("uv", "pip"), default="uv")
    parser.add_argument("--seed", type=int, default=29)
    args = parser.parse_args(argv)
    if not 0 <= args.one_by_one <= args.runs:
        parser.error(f"--one-by-one must be 0..{args.runs}, not {args.one_by_one}")
    args.naive_runs = min(args.naive_runs, args.runs)
    if args.candidates < 3:
        parser.error(
            f"--candidates must be 3 or more (two ends and one between), not {args.candidates}"
        )
    if not 0 <= args.skips <= args.candidates - 3:
        parser.error(f"--skips must be 0..{args.candidates - 3}, not {args.skips}")
    return args


def table(header: Sequence[str], rows: Iterator[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    rng = random.Random(args.seed)
    with local_s3() as ready, tempfile.TemporaryDirectory() as tmp:
        staging = Bucket(boto3.client("s3", config=Config(max_pool_connections=32)), STAGING_BUCKET)
        staging_url: str = ready["staging_url"]
        started = time.monotonic()
        made = history_runs(args.runs, args.days)
        built = time.monotonic() - started
        bulk, per_run = write_history(staging, made, args.one_by_one, args.naive_runs)
        print(
            f"History of {args.runs:,} runs built in {built:.1f} s; written with change_runs "
            f"(one write per month) in {bulk:.1f} s, and {args.one_by_one} more with "
            f"change_run at {per_run * 1000:.0f} ms a run."
        )
        reads = [read_over_http(staging_url), read_over_s3(), read_naively()]
        print(
            table(
                ("reader", "runs", "months", "GETs", "LISTs", "wheel GETs", "MB read", "s"),
                (
                    (
                        r.reader,
                        f"{r.runs:,}",
                        r.months,
                        f"{r.gets:,}",
                        r.lists,
                        r.wheel_gets,
                        f"{r.bytes_read / 1e6:.1f}",
                        f"{r.seconds:.2f}",
                    )
                    for r in reads
                ),
            )
        )
        for r in reads[:2]:
            assert r.gets <= r.months + 1, r
            assert (r.lists, r.wheel_gets) == (0, 0), r

        count = args.candidates
        first_bad = rng.randrange(1, count)
        between = [n for n in range(1, count - 1) if n != first_bad]
        missing = frozenset(rng.sample(between, args.skips))
        # A third of the runs failed their test and a tenth were never reported (the ends
        # included: the good end may be a failed run, the bad end the newest, unreported).
        shuffled = rng.sample(range(count), count)
        failed = frozenset(shuffled[: count // 3])
        unreported = frozenset(shuffled[count // 3 : count // 3 + count // 10])
        wheels = Path(tmp) / "wheels"
        bisect_runs(staging, BISECT_INDEX, count, first_bad, wheels)
        bisect_runs(staging, SKIPS_INDEX, count, first_bad, wheels, missing=missing)
        bisect_runs(
            staging, MIXED_INDEX, count, first_bad, wheels, failed=failed, unreported=unreported
        )
        rows = []
        exact = ("all staged", f"{len(failed)} failed, {len(unreported)} never reported")
        for variant, index in (
            (exact[0], BISECT_INDEX),
            (f"{args.skips} lack their wheel", SKIPS_INDEX),
            (exact[1], MIXED_INDEX),
        ):
            row, found = bisect_once(variant, index, staging_url, args.installer, Path(tmp) / index)
            rows.append(row)
            assert row.most_downloads_of_a_file <= 1, row
            if variant in exact:
                assert found == first_bad, (variant, found, first_bad)
                assert row.skipped == 0, row
                assert row.installs <= math.ceil(math.log2(count)) + 2, row
        print(
            f"Bisect: {count:,} candidates, first bad planted at candidate {first_bad}, "
            f"installer {args.installer}; goal: at most "
            f"{math.ceil(math.log2(count)) + 2} installs with nothing skipped."
        )
        print(
            table(
                (
                    "variant",
                    "candidates",
                    "probes",
                    "installs",
                    "skipped",
                    "files downloaded",
                    "most downloads of one file",
                    "cache hits",
                    "first bad",
                    "s",
                ),
                (
                    (
                        r.variant,
                        f"{r.candidates:,}",
                        r.probes,
                        r.installs,
                        r.skipped,
                        r.downloads,
                        r.most_downloads_of_a_file,
                        r.hits,
                        r.found,
                        f"{r.seconds:.1f}",
                    )
                    for r in rows
                ),
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
