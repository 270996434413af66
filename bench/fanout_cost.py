"""A model, not a measurement: wall time, longest Lambda invocation, Lambda GB-seconds and
Step Functions state transitions (and their price) of promoting N large files into nightly,
through the single-invocation path (the promoter verifies, hashes the files S3 has no SHA-256
of, copies and publishes in one invocation) and through the fan-out path (the promoter
verifies without reading any file in full and starts one execution; a first Distributed Map
runs one hash step per file S3 has no SHA-256 of, a second one copy step per file; a publish
step ends it), for N = 20, 200 and
2,000 files of a deterministic 2-8 GB size mix. For the single path it says whether and where
the one invocation times out, then the largest set that stays within a margin of the timeout,
against the fan-out defaults of core/settings.py.

Every number the model uses is a command-line option whose default is either read from the
code (part size, workers, timeout, map concurrency) or taken from AWS documentation, cited
beside it and in the printed assumptions. Where AWS publishes no figure (server-side copy
throughput, what one invocation can read from S3, the Distributed Map's per-item overhead)
the value is an assumption, said so, and a second table shows the result at half and double.

``--hash-reads promoter`` models the code before the hash map (every hash read in the
promoter's invocation, on both paths) for comparison; ``none`` a staging that leaves S3 a
full-object SHA-256 of every file.

    .venv/bin/python bench/fanout_cost.py [--files 20 200 2000] [--copy-mb-s 100] [...]
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Literal

from wheelgate.core.limits import FANOUT_TIMEOUT_SECONDS, PROMOTER_TIMEOUT_SECONDS
from wheelgate.core.settings import (
    DEFAULT_FANOUT_COPY_CONCURRENCY,
    DEFAULT_FANOUT_HASH_CONCURRENCY,
    DEFAULT_FANOUT_MIN_BYTES,
    DEFAULT_FANOUT_MIN_FILES,
)
from wheelgate.storage.limits import TransferLimits

MB = 1000**2  # throughputs are in MB/s, 10^6 bytes a second
GB = 1000**3  # file sizes of the mix, and the GB of the tables (10^9 bytes)
GIB = 1024**3
MIB = 1024**2
#: Lambda bills memory in GB of 1,024 MB (a 512 MB function is 0.5 GB in AWS's examples).
LAMBDA_MB_PER_GB = 1024

# --- Sources -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """Where an assumption comes from: an AWS page, a file of this repository, or nothing
    (``url`` ``None``: AWS publishes no figure, the value is assumed)."""

    title: str
    url: str | None = None


# AWS Lambda Pricing, https://aws.amazon.com/lambda/pricing/ (Arm, US East (N. Virginia),
# first 7.5 billion GB-seconds a month; requests $0.20 per 1M).
LAMBDA_PRICING = Source(
    "AWS Lambda Pricing (Arm, US East (N. Virginia))", "https://aws.amazon.com/lambda/pricing/"
)
# Configure Lambda function timeout: "up to a maximum value of 900 seconds (15 minutes)".
LAMBDA_TIMEOUT = Source(
    "Configure Lambda function timeout",
    "https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html",
)
# Configure Lambda function memory: memory in 1 MB steps, 1,769 MB = one vCPU.
LAMBDA_MEMORY = Source(
    "Configure Lambda function memory",
    "https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html",
)
# AWS Step Functions Pricing: Standard workflows, $0.025 per 1,000 state transitions (US East);
# "each retry will be charged as an additional state transition".
SFN_PRICING = Source("AWS Step Functions Pricing", "https://aws.amazon.com/step-functions/pricing/")
# Transitions, "Transitions in Distributed Map states": one state transition for each child
# workflow execution the Distributed Map starts; a Standard child's own states count as usual.
SFN_TRANSITIONS = Source(
    "Step Functions Developer Guide: Transitions (Transitions in Distributed Map states)",
    "https://docs.aws.amazon.com/step-functions/latest/dg/concepts-transitions.html",
)
# Amazon S3 multipart upload limits: part size 5 MiB to 5 GiB, at most 10,000 parts.
S3_MULTIPART_LIMITS = Source(
    "Amazon S3 multipart upload limits",
    "https://docs.aws.amazon.com/AmazonS3/latest/userguide/qfacts.html",
)
# Copying objects using the multipart upload API: up to 5 GB in a single (CopyObject) operation.
S3_COPY_MULTIPART = Source(
    "Copying objects using the multipart upload API",
    "https://docs.aws.amazon.com/AmazonS3/latest/userguide/CopyingObjctsMPUapi.html",
)
# Best practices design patterns: optimizing Amazon S3 performance: "consistent small object
# latencies (and first-byte-out latencies for larger objects) of roughly 100-200 milliseconds".
S3_PERFORMANCE = Source(
    "Best practices design patterns: optimizing Amazon S3 performance",
    "https://docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance.html",
)
NO_AWS_FIGURE = Source("no AWS figure published: assumed")
BUCKET_CODE = Source("lambdas/wheelgate/storage/limits.py (TransferLimits)")
SETTINGS_CODE = Source("lambdas/wheelgate/core/settings.py")
LIMITS_CODE = Source("lambdas/wheelgate/core/limits.py")
VERIFY_CODE = Source(
    "lambdas/wheelgate/promotion/verification.py (VerifiedSet.unhashed, SetVerifier.check_hash)"
)
STACK_CODE = Source("stacks/promoter_function.py FUNCTION_MEMORY_MB (arm64)")

# --- Facts of the code the model follows ----------------------------------------------------

#: Files the promoter verifies and copies at once (its buckets' ``TransferLimits.workers``).
PROMOTER_WORKERS: int = TransferLimits().workers
#: Parts of one file ``storage.transfers.multipart_copy`` copies at once (its pool's max_workers).
PART_WORKERS: int = TransferLimits().part_concurrency
#: The promoter function's memory (stacks/promoter_function.py FUNCTION_MEMORY_MB; checked by
#: a test).
FUNCTION_MEMORY_MB = 1024
#: Sequential round trips before verification (manifest, record, the lease's GET and
#: conditional PUT, the run directory's listing, the project pages) and after the copies (pages
#: written twice, the root page, the record, the lease given back, the CDN invalidation): the
#: constant and per-project terms of the promoter's request bound in docs/benchmarks.md.
PREPARE_ROUND_TRIPS = 6
PUBLISH_ROUND_TRIPS = 6
#: Requests verification makes per file, ``workers`` files at a time: a HEAD, and for a wheel
#: about five ranged GETs of its zip directory, METADATA and WHEEL plus its staged sidecar.
VERIFY_REQUESTS_PER_FILE = 7
#: Fan-out extras: the job's plan, items and hash items written, the execution started, the
#: PENDING record.
JOB_ROUND_TRIPS = 5
#: A copy step's own requests besides the copy: the job's plan read, its done marker looked
#: for, the released PEP 658 metadata written, its done marker written.
STEP_ROUND_TRIPS = 4
#: The publish step reads each item's done marker (its page entry), ``workers`` at a time, after
#: listing them (S3 lists 1,000 keys a page).
LIST_PAGE = 1000
#: A hash step's own requests besides the read: the job's plan read (its GET of the file is
#: counted with the read).
HASH_STEP_ROUND_TRIPS = 1
#: Parent states an execution that succeeds runs: the choice on the hash count, the hash map,
#: the copy map and the publish Task; with nothing to hash the choice skips the hash map, and
#: the design before the hash map (``--hash-reads promoter``) had only the copy map and publish.
PARENT_STATES = 4
PARENT_STATES_NOTHING_TO_HASH = 3
PARENT_STATES_WITHOUT_HASH_MAP = 2
#: The fan-out goal (issue 21): 2,000 files of 2-8 GB within 20 minutes at the assumed figures
#: and 30 at half the assumed throughputs, with no invocation over 5 minutes.
GOAL_WALL_S = 20 * 60
GOAL_WALL_HALF_S = 30 * 60
GOAL_INVOCATION_S = 5 * 60
#: Transitions per item of a map: the child workflow the Distributed Map starts, and the
#: child's one Task state (the Lambda invoke); each retry of that Task would add one more.
TRANSITIONS_PER_ITEM = 2

HashReads = Literal["hash-map", "promoter", "none"]
#: Where a staged file larger than the single-request limit is read in full to learn its
#: SHA-256 (S3 keeps only a composite checksum of a multipart upload). "hash-map" is the code:
#: on the single path in the promoter's invocation before any copy, on the fan-out path in
#: one hash step per such file, a Distributed Map that ends before the copy map starts.
#: "promoter" is the code before the hash map (every read in the promoter's invocation, on
#: both paths); "none" a staging that leaves S3 a full-object SHA-256 of every file.
HASH_READS: tuple[HashReads, ...] = ("hash-map", "promoter", "none")


#: Assumptions a model may set to 0 (no latency, no overhead); every other one must be positive.
#: What each ``hash_reads`` stands for, as the printout says it.
HASH_READS_MEANING: dict[HashReads, str] = {
    "hash-map": "the code: a hash map before the copy map",
    "promoter": "the code before the hash map: every read in the promoter's invocation",
    "none": "S3 has a full-object SHA-256 of every staged file",
}
MAY_BE_ZERO = frozenset({"request_latency_s", "item_overhead_s"})
#: S3's part size range and CopyObject's single-request limit (S3_MULTIPART_LIMITS,
#: S3_COPY_MULTIPART), and Lambda's longest timeout (LAMBDA_TIMEOUT).
S3_MIN_PART = 5 * MIB
S3_MAX_PART = 5 * GIB
S3_MAX_COPY_OBJECT = 5 * GIB
LAMBDA_MAX_TIMEOUT_S = 900


class ModelError(ValueError):
    """An assumption or a size mix the model cannot use; the message names it."""


@dataclass(frozen=True)
class Assumptions:
    """Every number of the model (see :data:`ASSUMPTION_SOURCES` for where each comes from).

    Raises :class:`ModelError` naming the first value out of its range.
    """

    request_latency_s: float = 0.1
    copy_mb_s: float = 100.0
    read_mb_s: float = 100.0
    part_size: int = TransferLimits().copy_part_size
    single_request_limit: int = TransferLimits().single_request_limit
    part_workers: int = PART_WORKERS
    file_workers: int = PROMOTER_WORKERS
    hash_concurrency: int = DEFAULT_FANOUT_HASH_CONCURRENCY
    copy_concurrency: int = DEFAULT_FANOUT_COPY_CONCURRENCY
    item_overhead_s: float = 0.5
    execution_timeout_s: float = FANOUT_TIMEOUT_SECONDS
    memory_mb: int = FUNCTION_MEMORY_MB
    timeout_s: float = PROMOTER_TIMEOUT_SECONDS
    gb_second_usd: float = 0.0000133334
    request_usd: float = 0.20 / 1_000_000
    transition_usd: float = 0.025 / 1000
    hash_reads: HashReads = "hash-map"

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "hash_reads":
                if value not in HASH_READS:
                    raise ModelError(f"hash_reads must be one of {HASH_READS}, not {value!r}")
            elif f.name in MAY_BE_ZERO:
                if value < 0:
                    raise ModelError(f"{f.name} must be 0 or more, not {value}")
            elif value <= 0:
                raise ModelError(f"{f.name} must be more than 0, not {value}")
        if not S3_MIN_PART <= self.part_size <= S3_MAX_PART:
            raise ModelError(
                f"part_size must be 5 MiB to 5 GiB (S3's limits), not {self.part_size}"
            )
        if self.single_request_limit > S3_MAX_COPY_OBJECT:
            raise ModelError(
                f"single_request_limit must be at most 5 GiB (S3's CopyObject limit), "
                f"not {self.single_request_limit}"
            )
        if self.timeout_s > LAMBDA_MAX_TIMEOUT_S:
            raise ModelError(
                f"timeout_s must be at most 900 (Lambda's maximum), not {self.timeout_s}"
            )

    @property
    def memory_gb(self) -> float:
        return self.memory_mb / LAMBDA_MB_PER_GB


#: Where each assumption's default comes from, printed beside it.
ASSUMPTION_SOURCES: dict[str, tuple[str, Source]] = {
    "request_latency_s": ("S3 request round trip, s (low end of 100-200 ms)", S3_PERFORMANCE),
    "copy_mb_s": (
        "server-side copy throughput of one CopyObject/UploadPartCopy, MB/s",
        NO_AWS_FIGURE,
    ),
    "read_mb_s": ("what one invocation reads from S3 in total (hash reads), MB/s", NO_AWS_FIGURE),
    "part_size": ("multipart copy part size, bytes (S3: 5 MiB to 5 GiB)", BUCKET_CODE),
    "single_request_limit": (
        "largest single-request CopyObject, bytes (S3: 5 GB)",
        S3_COPY_MULTIPART,
    ),
    "part_workers": ("parts of one file copied at once", BUCKET_CODE),
    "file_workers": ("files one invocation verifies and copies at once", BUCKET_CODE),
    "hash_concurrency": (
        "HashFiles map MaxConcurrency (fanout.hash_concurrency's default)",
        SETTINGS_CODE,
    ),
    "copy_concurrency": (
        "CopyFiles map MaxConcurrency (fanout.copy_concurrency's default)",
        SETTINGS_CODE,
    ),
    "item_overhead_s": (
        "Distributed Map per-item start + Lambda invoke, unbilled s",
        NO_AWS_FIGURE,
    ),
    "execution_timeout_s": (
        "fan-out execution TimeoutSeconds (FANOUT_TIMEOUT_SECONDS)",
        LIMITS_CODE,
    ),
    "memory_mb": ("Lambda memory, MB (billed in GB of 1,024 MB)", STACK_CODE),
    "timeout_s": ("Lambda timeout, s (AWS maximum 900)", LAMBDA_TIMEOUT),
    "gb_second_usd": ("Lambda duration price, $ per GB-second (Arm)", LAMBDA_PRICING),
    "request_usd": ("Lambda request price, $ per request ($0.20 per 1M)", LAMBDA_PRICING),
    "transition_usd": ("Step Functions Standard, $ per state transition", SFN_PRICING),
    "hash_reads": ("where a >5 GiB staged file is read in full for its SHA-256", VERIFY_CODE),
}


# --- The model -----------------------------------------------------------------------------


def size_mix(count: int, *, low_gb: float = 2.0, high_gb: float = 8.0, seed: int = 13) -> list[int]:
    """``count`` file sizes in bytes, uniform over [low_gb, high_gb] GB (10^9 bytes), the same
    for the same arguments. The first k sizes of a mix are the mix of k files.

    Raises :class:`ModelError` for a count below 1 or a range that is empty or not positive.
    """
    if count < 1:
        raise ModelError(f"file count must be at least 1, not {count}")
    if not 0 < low_gb <= high_gb:
        raise ModelError(f"size range must satisfy 0 < low <= high, not {low_gb}-{high_gb} GB")
    rng = random.Random(seed)
    return [int(rng.uniform(low_gb, high_gb) * GB) for _ in range(count)]


def finish_times(durations: Sequence[float], workers: int) -> list[float]:
    """When each task ends when ``workers`` threads take them in order, each the next task as
    soon as it is free (a ThreadPoolExecutor's ``map``), all starting at 0."""
    free = [0.0] * min(workers, max(len(durations), 1))
    heapq.heapify(free)
    ends = []
    for duration in durations:
        end = heapq.heappop(free) + duration
        ends.append(end)
        heapq.heappush(free, end)
    return ends


def copy_seconds(size: int, a: Assumptions) -> float:
    """One file's server-side copy as ``Bucket.copy_in`` does it, with the Releaser's checks.

    Up to the single-request limit: one CopyObject (S3 returns the copy's SHA-256). Above it:
    the source's HEAD, CreateMultipartUpload, UploadPartCopy of every part ``part_workers`` at
    a time, CompleteMultipartUpload, then a HEAD of the copy (its recorded SHA-256 and size).
    """
    rate = a.copy_mb_s * MB
    if size <= a.single_request_limit:
        return a.request_latency_s + size / rate
    parts = [min(a.part_size, size - start) for start in range(0, size, a.part_size)]
    part_ends = finish_times([a.request_latency_s + p / rate for p in parts], a.part_workers)
    return 4 * a.request_latency_s + max(part_ends)


def needs_hash_read(size: int, a: Assumptions) -> bool:
    """Whether verification reads the whole staged file: staging uploads larger files in
    parts, and S3 keeps only a composite SHA-256 of a multipart object."""
    return size > a.single_request_limit


def verify_seconds(sizes: Sequence[int], a: Assumptions, *, hash_reads: bool) -> float:
    """Verification in the promoter's invocation: its requests ``file_workers`` files at a
    time and, with ``hash_reads``, every multipart-staged file read through at ``read_mb_s``
    (the invocation's total: the reads share it)."""
    rounds = math.ceil(len(sizes) / a.file_workers)
    seconds = rounds * VERIFY_REQUESTS_PER_FILE * a.request_latency_s
    if hash_reads:
        big = [s for s in sizes if needs_hash_read(s, a)]
        seconds += sum(big) / (a.read_mb_s * MB)
        seconds += math.ceil(len(big) / a.file_workers) * a.request_latency_s
    return seconds


@dataclass(frozen=True)
class PathCost:
    """What one path costs for one set of files. ``timeout`` says where the longest invocation
    would time out (``None``: every invocation ends within the timeout). Wall and durations
    are what the work needs: an invocation that times out is billed to the timeout."""

    wall_s: float
    longest_invocation_s: float
    invocations: int
    gb_seconds: float
    lambda_usd: float
    transitions: int
    transitions_usd: float
    timeout: str | None

    @property
    def total_usd(self) -> float:
        return self.lambda_usd + self.transitions_usd


def _lambda_usd(gb_seconds: float, invocations: int, a: Assumptions) -> float:
    return gb_seconds * a.gb_second_usd + invocations * a.request_usd


def single_path(sizes: Sequence[int], a: Assumptions) -> PathCost:
    """The promoter verifies, copies (``file_workers`` files at a time) and publishes in one
    invocation. Its hash reads happen in that invocation unless ``hash_reads`` is "none"."""
    prepare = PREPARE_ROUND_TRIPS * a.request_latency_s + verify_seconds(
        sizes, a, hash_reads=a.hash_reads != "none"
    )
    releases = [copy_seconds(s, a) + a.request_latency_s for s in sizes]  # + metadata PUT
    ends = [prepare + e for e in finish_times(releases, a.file_workers)]
    duration = max(ends) + PUBLISH_ROUND_TRIPS * a.request_latency_s
    timeout = None
    if duration > a.timeout_s:
        done = [s for s, e in zip(sizes, ends, strict=True) if e <= a.timeout_s]
        if prepare > a.timeout_s:
            timeout = f"in verification, before any copy (it needs {prepare:,.0f} s)"
        elif len(done) == len(sizes):
            timeout = "while publishing, every copy done"
        else:
            timeout = f"after {len(done)} of {len(sizes)} files ({sum(done) / GB:,.0f} GB) copied"
    gb_seconds = a.memory_gb * min(duration, a.timeout_s)
    return PathCost(
        wall_s=duration,
        longest_invocation_s=duration,
        invocations=1,
        gb_seconds=gb_seconds,
        lambda_usd=_lambda_usd(gb_seconds, 1, a),
        transitions=0,
        transitions_usd=0.0,
        timeout=timeout,
    )


def copy_step_seconds(size: int, a: Assumptions) -> float:
    """One item of the copy map: the copy step's own requests, the copy and its checks."""
    return STEP_ROUND_TRIPS * a.request_latency_s + copy_seconds(size, a)


def hash_step_seconds(size: int, a: Assumptions) -> float:
    """One item of the hash map: the step's own requests, then the staged file read through
    once (its GET's round trip and its bytes at ``read_mb_s``: the step is its invocation's
    only read)."""
    return (HASH_STEP_ROUND_TRIPS + 1) * a.request_latency_s + size / (a.read_mb_s * MB)


def map_seconds(steps: Sequence[float], a: Assumptions, concurrency: int) -> float:
    """A Distributed Map's wall time: its items ``concurrency`` at a time, each after the
    per-item overhead (0 for no items)."""
    if not steps:
        return 0.0
    return max(finish_times([a.item_overhead_s + s for s in steps], concurrency))


def fanout_path(sizes: Sequence[int], a: Assumptions) -> PathCost:
    """The promoter verifies and starts one execution; with ``hash_reads`` "hash-map" a first
    Distributed Map runs one hash step per file staged multipart, and ends before a second
    runs one copy step per file, ``hash_concurrency`` and ``copy_concurrency`` at a time;
    the publish step reads
    every done marker and publishes. Transitions: the parent states plus two per item of each
    map (the child execution started, and its Task)."""
    # The code writes the hash items object whatever S3 holds (with nothing to hash, the
    # state machine's choice skips the map); the code before it ("promoter") had neither.
    hash_map = a.hash_reads != "promoter"
    job_round_trips = JOB_ROUND_TRIPS if hash_map else JOB_ROUND_TRIPS - 1
    promoter = (PREPARE_ROUND_TRIPS + job_round_trips) * a.request_latency_s + verify_seconds(
        sizes, a, hash_reads=a.hash_reads == "promoter"
    )
    hashed = a.hash_reads == "hash-map"
    hashes = [hash_step_seconds(s, a) for s in sizes if hashed and needs_hash_read(s, a)]
    steps = [copy_step_seconds(s, a) for s in sizes]
    map_wall = map_seconds(hashes, a, a.hash_concurrency) + map_seconds(
        steps, a, a.copy_concurrency
    )
    publish = (
        1 + math.ceil(len(sizes) / LIST_PAGE) + PUBLISH_ROUND_TRIPS
    ) * a.request_latency_s + math.ceil(len(sizes) / a.file_workers) * a.request_latency_s
    invocations = [promoter, *hashes, *steps, publish]
    longest = max(invocations)
    wall = promoter + map_wall + publish
    timeout = None
    if longest > a.timeout_s:
        which = "the promoter's invocation (verification)" if longest == promoter else "a step"
        timeout = f"{which} needs {longest:,.0f} s"
    elif wall > a.execution_timeout_s:
        timeout = f"the execution needs {wall:,.0f} s, over its {a.execution_timeout_s:,.0f} s"
    gb_seconds = a.memory_gb * sum(min(d, a.timeout_s) for d in invocations)
    if not hash_map:
        parents = PARENT_STATES_WITHOUT_HASH_MAP
    else:
        parents = PARENT_STATES if hashes else PARENT_STATES_NOTHING_TO_HASH
    transitions = parents + TRANSITIONS_PER_ITEM * (len(hashes) + len(steps))
    return PathCost(
        wall_s=wall,
        longest_invocation_s=longest,
        invocations=len(invocations),
        gb_seconds=gb_seconds,
        lambda_usd=_lambda_usd(gb_seconds, len(invocations), a),
        transitions=transitions,
        transitions_usd=transitions * a.transition_usd,
        timeout=timeout,
    )


def safe_single_limit(sizes: Sequence[int], a: Assumptions, *, margin: float) -> int:
    """The most leading files of ``sizes`` the single path promotes within ``margin`` times the
    timeout (0 when not even the first one does). The single path's duration never falls when
    a file is added, so this is a binary search.

    Raises :class:`ModelError` for a margin outside (0, 1].
    """
    if not 0 < margin <= 1:
        raise ModelError(f"margin must be in (0, 1], not {margin}")
    budget = margin * a.timeout_s
    return longest_prefix(sizes, lambda prefix: single_path(prefix, a).wall_s <= budget)


def fanout_limit(sizes: Sequence[int], a: Assumptions) -> int:
    """The most leading files of ``sizes`` the fan-out path promotes with every invocation
    within the timeout (the promoter's verification is the one that grows with the set)."""
    return longest_prefix(sizes, lambda prefix: fanout_path(prefix, a).timeout is None)


def longest_prefix(sizes: Sequence[int], fits: Callable[[Sequence[int]], bool]) -> int:
    """The length of the longest prefix of ``sizes`` that ``fits`` (0 when none does), for a
    ``fits`` that, once false, stays false for longer prefixes: a binary search."""
    low, high = 0, len(sizes)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(sizes[:middle]):
            low = middle
        else:
            high = middle - 1
    return low


# --- Printing ------------------------------------------------------------------------------


def _timeout_cell(cost: PathCost) -> str:
    return "no" if cost.timeout is None else f"**yes**: {cost.timeout}"


def print_main_table(counts: Sequence[int], a: Assumptions, mix: dict[int, list[int]]) -> None:
    print(
        "| files | GB | path | wall s | longest invocation s | invocations | GB-s | Lambda $ "
        "| transitions | transitions $ | total $ | an invocation times out |"
    )
    print("| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for n in counts:
        sizes = mix[n]
        for name, cost in (("single", single_path(sizes, a)), ("fan-out", fanout_path(sizes, a))):
            transitions = f"{cost.transitions:,}" if name == "fan-out" else "-"
            transitions_usd = f"{cost.transitions_usd:.4f}" if name == "fan-out" else "-"
            print(
                f"| {n:,} | {sum(sizes) / GB:,.0f} | {name} | {cost.wall_s:,.0f} "
                f"| {cost.longest_invocation_s:,.0f} | {cost.invocations:,} "
                f"| {cost.gb_seconds:,.0f} | {cost.lambda_usd:.4f} | {transitions} "
                f"| {transitions_usd} | {cost.total_usd:.4f} | {_timeout_cell(cost)} |"
            )


def print_sensitivity(counts: Sequence[int], a: Assumptions, mix: dict[int, list[int]]) -> None:
    variants = [
        ("as assumed", a),
        ("copy x0.5", replace(a, copy_mb_s=a.copy_mb_s / 2)),
        ("copy x2", replace(a, copy_mb_s=a.copy_mb_s * 2)),
        ("read x0.5", replace(a, read_mb_s=a.read_mb_s / 2)),
        ("read x2", replace(a, read_mb_s=a.read_mb_s * 2)),
        ("item overhead x2", replace(a, item_overhead_s=a.item_overhead_s * 2)),
        ("copy and read x0.5", half_throughputs(a)),
    ]
    other = _comparison(a.hash_reads)
    print(
        "| changed figure | files | single s | single times out | fan-out s | fan-out longest s "
        f"| fan-out times out | {other} fan-out s | its longest s | its times out |"
    )
    print("| --- | ---: | ---: | --- | ---: | ---: | --- | ---: | ---: | --- |")
    for label, variant in variants:
        compared = replace(variant, hash_reads=other)
        for n in counts:
            single, fanout = single_path(mix[n], variant), fanout_path(mix[n], variant)
            then = fanout_path(mix[n], compared)
            print(
                f"| {label} | {n:,} | {single.wall_s:,.0f} | {_yes_no(single)} "
                f"| {fanout.wall_s:,.0f} | {fanout.longest_invocation_s:,.0f} | {_yes_no(fanout)} "
                f"| {then.wall_s:,.0f} | {then.longest_invocation_s:,.0f} | {_yes_no(then)} |"
            )


def half_throughputs(a: Assumptions) -> Assumptions:
    """``a`` with both assumed S3 throughputs (server-side copy, one invocation's reads)
    halved."""
    return replace(a, copy_mb_s=a.copy_mb_s / 2, read_mb_s=a.read_mb_s / 2)


def print_goal(sizes: Sequence[int], a: Assumptions) -> None:
    """The fan-out goal for the largest set: at most 20 minutes at the assumed figures, 30 at
    half the assumed throughputs, and no invocation over 5 minutes in either."""
    rows = [
        ("as assumed", fanout_path(sizes, a), GOAL_WALL_S),
        ("copy and read x0.5", fanout_path(sizes, half_throughputs(a)), GOAL_WALL_HALF_S),
    ]
    print(
        f"| {len(sizes):,} files | fan-out wall | goal | longest invocation | goal | met |\n"
        "| --- | ---: | ---: | ---: | ---: | --- |"
    )
    for label, cost, goal in rows:
        met = cost.wall_s <= goal and cost.longest_invocation_s <= GOAL_INVOCATION_S
        print(
            f"| {label} | {cost.wall_s / 60:,.1f} min | {goal / 60:.0f} min "
            f"| {cost.longest_invocation_s:,.0f} s | {GOAL_INVOCATION_S:.0f} s "
            f"| {'yes' if met else '**no**'} |"
        )


def _comparison(mode: HashReads) -> HashReads:
    """The behaviour the tables compare ``mode`` with: the code before the hash map, or (when
    that is ``mode``) the code."""
    return "hash-map" if mode == "promoter" else "promoter"


def _yes_no(cost: PathCost) -> str:
    return "no" if cost.timeout is None else "**yes**"


def print_assumptions(a: Assumptions) -> None:
    print("| assumption | value | source |")
    print("| --- | ---: | --- |")
    for name, (meaning, source) in ASSUMPTION_SOURCES.items():
        where = f"{source.title}, {source.url}" if source.url else source.title
        value = getattr(a, name)
        shown = (
            f"{value:g}"
            if isinstance(value, float)
            else f"{value:,}"
            if isinstance(value, int)
            else value
        )
        print(f"| `--{name.replace('_', '-')}`: {meaning} | {shown} | {where} |")
    print(
        f"| Step Functions transitions: 1 per child execution started + 1 per child Task "
        f"(+1 per retry), for each map, + {PARENT_STATES} parent states "
        f"({PARENT_STATES_NOTHING_TO_HASH} with nothing to hash) | - | {SFN_TRANSITIONS.title}, "
        f"{SFN_TRANSITIONS.url}; {SFN_PRICING.title}, {SFN_PRICING.url} |"
    )
    print(
        f"| part size and count limits | 5 MiB-5 GiB, 10,000 parts | {S3_MULTIPART_LIMITS.title}, "
        f"{S3_MULTIPART_LIMITS.url} |"
    )
    print(
        f"| Lambda memory and CPU | 1 MB steps, 1,769 MB = 1 vCPU | {LAMBDA_MEMORY.title}, "
        f"{LAMBDA_MEMORY.url} |"
    )


def defaults_keep_single(
    sizes: Sequence[int],
    *,
    min_files: int = DEFAULT_FANOUT_MIN_FILES,
    min_bytes: int = DEFAULT_FANOUT_MIN_BYTES,
) -> int:
    """How many leading files of ``sizes`` the thresholds (by default the settings' defaults)
    leave on the single path: a set goes through the state machine once it reaches
    ``min_files`` files or ``min_bytes`` bytes."""
    total = 0
    for k, size in enumerate(sizes, start=1):
        total += size
        if k >= min_files or total >= min_bytes:
            return k - 1
    return len(sizes)


def size_profiles(mix: Sequence[int], low_gb: float, high_gb: float) -> dict[str, list[int]]:
    """The mix, and sets of one size each: the worst case for hash reads (every file above the
    single-request limit), the largest single-request copy, and small wheels."""
    return {
        f"{low_gb:g}-{high_gb:g} GB mix": list(mix),
        "8 GB each (staged multipart)": [8 * GB] * 2_000,
        "5 GiB each (largest single-request copy)": [5 * GIB] * 2_000,
        "100 MB each": [100 * MB] * 20_000,
    }


def print_thresholds(
    profiles: dict[str, list[int]],
    a: Assumptions,
    margin: float,
    *,
    min_files: int = DEFAULT_FANOUT_MIN_FILES,
    min_bytes: int = DEFAULT_FANOUT_MIN_BYTES,
) -> None:
    print(
        f"Largest set the single path promotes within {margin:.0%} of the {a.timeout_s:.0f} s "
        f"timeout, against the largest set the thresholds leave on it (min files {min_files}, "
        f"min bytes {min_bytes / GIB:g} GiB = {min_bytes / GB:.1f} GB; the settings' defaults "
        f"are {DEFAULT_FANOUT_MIN_FILES} and {DEFAULT_FANOUT_MIN_BYTES / GIB:g} GiB), and the "
        "largest set the fan-out path promotes at all:"
    )
    print()
    print(
        "| files | staged hash reads | single path safe up to | thresholds keep single up to "
        "| verdict | fan-out promotes up to |"
    )
    print("| --- | --- | ---: | ---: | --- | ---: |")
    for label, sizes in profiles.items():
        kept = defaults_keep_single(sizes, min_files=min_files, min_bytes=min_bytes)
        kept_cell = f"{kept:,} ({sum(sizes[:kept]) / GB:,.0f} GB)"
        for mode in HASH_READS:
            variant = replace(a, hash_reads=mode)
            safe = safe_single_limit(sizes, variant, margin=margin)
            fans = fanout_limit(sizes, variant)
            verdict = "safe" if kept <= safe else "**unsafe**"
            fans_cell = f"{fans:,} ({sum(sizes[:fans]) / GB:,.0f} GB)"
            if fans == len(sizes):
                fans_cell = f"all {fans:,} modelled"
            print(
                f"| {label} | {mode} | {safe:,} ({sum(sizes[:safe]) / GB:,.0f} GB) "
                f"| {kept_cell} | {verdict} | {fans_cell} |"
            )


def parse_args(argv: Sequence[str] | None) -> tuple[argparse.Namespace, Assumptions]:
    defaults = Assumptions()
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--files", type=int, nargs="+", default=[20, 200, 2000])
    parser.add_argument("--low-gb", type=float, default=2.0, help="smallest file, GB")
    parser.add_argument("--high-gb", type=float, default=8.0, help="largest file, GB")
    parser.add_argument("--seed", type=int, default=13, help="seed of the size mix")
    parser.add_argument(
        "--fanout-min-files",
        type=int,
        default=DEFAULT_FANOUT_MIN_FILES,
        help="threshold to judge (default DEFAULT_FANOUT_MIN_FILES)",
    )
    parser.add_argument(
        "--fanout-min-bytes",
        type=int,
        default=DEFAULT_FANOUT_MIN_BYTES,
        help="threshold to judge, bytes (default DEFAULT_FANOUT_MIN_BYTES)",
    )
    parser.add_argument(
        "--margin", type=float, default=0.5, help="share of the timeout the single path may use"
    )
    for name, (meaning, source) in ASSUMPTION_SOURCES.items():
        value = getattr(defaults, name)
        flag = f"--{name.replace('_', '-')}"
        help_text = f"{meaning} (default {value}: {source.title})"
        if name == "hash_reads":
            parser.add_argument(flag, choices=HASH_READS, default=value, help=help_text)
        else:
            parser.add_argument(flag, type=type(value), default=value, help=help_text)
    args = parser.parse_args(argv)
    try:
        assumptions = Assumptions(**{name: getattr(args, name) for name in ASSUMPTION_SOURCES})
        size_mix(1, low_gb=args.low_gb, high_gb=args.high_gb)
        if args.margin <= 0 or args.margin > 1:
            raise ModelError(f"margin must be in (0, 1], not {args.margin}")
        if args.fanout_min_files < 1 or args.fanout_min_bytes < 1:
            raise ModelError("fanout-min-files and fanout-min-bytes must be at least 1")
        if min(args.files) < 1:
            raise ModelError(f"file counts must be at least 1, not {min(args.files)}")
    except ModelError as exc:
        parser.error(str(exc))
    return args, assumptions


def main(argv: Sequence[str] | None = None) -> int:
    args, a = parse_args(argv)
    counts = sorted(set(args.files))
    largest = size_mix(max(counts), low_gb=args.low_gb, high_gb=args.high_gb, seed=args.seed)
    mix = {n: largest[:n] for n in counts}
    span = f"{args.low_gb:g}-{args.high_gb:g} GB"
    print(
        f"Model of promoting N files of {span} (uniform, seed {args.seed}); staged hash reads: "
        f"{a.hash_reads} ({HASH_READS_MEANING[a.hash_reads]}). Single: one invocation; fan-out: "
        "promoter + one hash step per file staged multipart + one copy step per file + publish."
    )
    print()
    print_main_table(counts, a, mix)
    print()
    print_goal(mix[max(counts)], a)
    other = _comparison(a.hash_reads)
    print()
    print(f"The same with --hash-reads {other} ({HASH_READS_MEANING[other]}), for comparison:")
    print()
    print_main_table(counts, replace(a, hash_reads=other), mix)
    print()
    print(
        "Sensitivity to the figures AWS does not publish (one changed at a time; the last "
        f"three columns: fan-out with --hash-reads {other}):"
    )
    print()
    print_sensitivity(counts, a, mix)
    print()
    print_thresholds(
        size_profiles(largest, args.low_gb, args.high_gb),
        a,
        args.margin,
        min_files=args.fanout_min_files,
        min_bytes=args.fanout_min_bytes,
    )
    print()
    print("Assumptions:")
    print()
    print_assumptions(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
