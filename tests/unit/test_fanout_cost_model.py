"""The fan-out cost model's arithmetic (bench/fanout_cost.py): copy times, where the single
invocation times out, GB-seconds = memory x duration, state transitions per the state
machine, the safe-limit search, and that its code-derived defaults match the code."""

from __future__ import annotations

import ast
import inspect
import re
import time
from dataclasses import replace
from pathlib import Path

import pytest

from bench.fanout_cost import (
    GB,
    GIB,
    MB,
    PARENT_STATES,
    PARENT_STATES_NOTHING_TO_HASH,
    PARENT_STATES_WITHOUT_HASH_MAP,
    PART_WORKERS,
    PROMOTER_WORKERS,
    TRANSITIONS_PER_ITEM,
    Assumptions,
    ModelError,
    copy_seconds,
    defaults_keep_single,
    fanout_limit,
    fanout_path,
    finish_times,
    hash_step_seconds,
    main,
    safe_single_limit,
    single_path,
    size_mix,
)
from wheelgate.core.settings import DEFAULT_FANOUT_MIN_BYTES, DEFAULT_FANOUT_MIN_FILES
from wheelgate.storage.transfers import multipart_copy

ROOT = Path(__file__).resolve().parents[2]
#: No latency and no overhead: durations are bytes over throughput, easy to check by hand.
BARE = Assumptions(request_latency_s=0.0, item_overhead_s=0.0)


def test_finish_times_follow_a_thread_pool_taking_tasks_in_order() -> None:
    # Given two workers and tasks of 3, 1, 1 and 1 s
    # When they are scheduled in order
    # Then the second worker runs the three short ones back to back
    assert finish_times([3.0, 1.0, 1.0, 1.0], 2) == [3.0, 1.0, 2.0, 3.0]


def test_a_single_request_copy_is_one_round_trip_plus_bytes_over_throughput() -> None:
    a = Assumptions(request_latency_s=0.1, copy_mb_s=100.0)
    assert copy_seconds(1 * GB, a) == pytest.approx(0.1 + 10.0)
    assert copy_seconds(a.single_request_limit, a) == pytest.approx(
        0.1 + a.single_request_limit / (100 * MB)
    )


def test_a_multipart_copy_runs_its_parts_part_workers_at_a_time() -> None:
    # Given a file of exactly 16 parts
    a = Assumptions(request_latency_s=0.1, copy_mb_s=100.0)
    size = 16 * a.part_size
    part = 0.1 + a.part_size / (100 * MB)
    # Then 8 workers copy it in two waves, plus HEAD, create, complete and the copy's HEAD
    assert copy_seconds(size, a) == pytest.approx(2 * part + 4 * 0.1)
    # And 16 workers in one
    assert copy_seconds(size, replace(a, part_workers=16)) == pytest.approx(part + 4 * 0.1)


def test_one_byte_over_the_single_request_limit_goes_multipart() -> None:
    a = Assumptions(request_latency_s=0.1, copy_mb_s=100.0)
    at_limit = copy_seconds(a.single_request_limit, a)
    over = copy_seconds(a.single_request_limit + 1, a)
    # Parts in parallel: much faster than the one 5 GiB CopyObject, despite 3 more round trips
    assert over < at_limit / 4


def test_the_single_path_times_out_after_the_files_copied_by_the_timeout() -> None:
    # Given 20 files of 5 GiB, one at a time, no latency: 53.7 s each, 1,074 s in all
    a = replace(BARE, hash_reads="none", file_workers=1)
    per_file = 5 * GIB / (a.copy_mb_s * MB)
    cost = single_path([5 * GIB] * 20, a)
    # Then the invocation needs 20 copies' time but is cut at 900 s, 16 copies in
    assert cost.wall_s == pytest.approx(20 * per_file)
    assert int(900 // per_file) == 16
    assert cost.timeout == "after 16 of 20 files (86 GB) copied"
    # And it is billed to the timeout, not to what it needed
    assert cost.gb_seconds == pytest.approx(a.memory_gb * 900)


def test_the_single_path_ends_in_time_one_file_short_of_the_timeout() -> None:
    a = replace(BARE, hash_reads="none", file_workers=1)
    cost = single_path([5 * GIB] * 16, a)
    assert cost.timeout is None
    assert cost.gb_seconds == pytest.approx(a.memory_gb * cost.wall_s)


def test_hash_reads_of_multipart_staged_files_time_out_verification() -> None:
    # Given 12 files of 8 GB (each over 5 GiB: staged multipart, read through to hash them)
    sizes = [8 * GB] * 12
    # When read at 100 MB/s in the promoter's invocation: 960 s before any copy
    cost = single_path(sizes, BARE)
    # Then the single path times out in verification
    assert cost.timeout is not None
    assert cost.timeout.startswith("in verification, before any copy")
    # And so did the fan-out path's promoter invocation before the hash map
    before = fanout_path(sizes, replace(BARE, hash_reads="promoter"))
    assert before.timeout is not None
    assert "promoter" in before.timeout
    # But not with the hash map: each read is a step of its own, 80 s, and the promoter's
    # invocation reads nothing in full
    fanout = fanout_path(sizes, BARE)
    assert fanout.timeout is None
    assert hash_step_seconds(8 * GB, BARE) == pytest.approx(8 * GB / (BARE.read_mb_s * MB))
    assert fanout.longest_invocation_s == pytest.approx(
        max(hash_step_seconds(8 * GB, BARE), copy_seconds(8 * GB, BARE))
    )
    # And the hash map ends before the copy map starts: its wall time adds to the copies'
    assert fanout.wall_s == pytest.approx(
        hash_step_seconds(8 * GB, BARE) + copy_seconds(8 * GB, BARE)
    )
    # And files at or under 5 GiB are never read through (20 of them would take 1,074 s)
    at_limit = single_path([5 * GIB] * 20, BARE)
    assert at_limit.timeout is None
    assert at_limit.wall_s == pytest.approx(2 * copy_seconds(5 * GIB, BARE))


def test_gb_seconds_are_memory_times_billed_duration() -> None:
    sizes = size_mix(50)
    small = fanout_path(sizes, replace(BARE, memory_mb=1024))
    large = fanout_path(sizes, replace(BARE, memory_mb=2048))
    # Duration does not depend on memory in the model: twice the memory, twice the GB-s
    assert large.gb_seconds == pytest.approx(2 * small.gb_seconds)
    # 1,024 MB is 1 GB: with no latency and no hash reads, the promoter's and the publish
    # step's invocations take no time and GB-s is the sum of the copies' seconds
    a = replace(BARE, hash_reads="none")
    cost = fanout_path(sizes, a)
    assert cost.gb_seconds == pytest.approx(sum(copy_seconds(s, a) for s in sizes))
    assert cost.lambda_usd == pytest.approx(
        cost.gb_seconds * a.gb_second_usd + cost.invocations * a.request_usd
    )
    assert cost.invocations == len(sizes) + 2
    # With the hash map, each file staged multipart adds one invocation: its hash step
    hashed = fanout_path(sizes, BARE)
    big = [s for s in sizes if s > BARE.single_request_limit]
    assert 0 < len(big) < len(sizes)
    assert hashed.invocations == len(sizes) + len(big) + 2
    assert hashed.gb_seconds == pytest.approx(
        cost.gb_seconds + sum(hash_step_seconds(s, BARE) for s in big)
    )


def test_transitions_are_the_parent_states_plus_two_per_item_of_each_map() -> None:
    # One per child execution a Distributed Map starts, one for the child's Task state
    assert (
        PARENT_STATES,
        PARENT_STATES_NOTHING_TO_HASH,
        PARENT_STATES_WITHOUT_HASH_MAP,
        TRANSITIONS_PER_ITEM,
    ) == (4, 3, 2, 2)
    # Files at or under 5 GiB: nothing to hash, the choice skips the hash map
    for n, expected in ((20, 43), (200, 403), (2_000, 4_003)):
        cost = fanout_path([1 * GB] * n, BARE)
        assert cost.transitions == expected
        assert cost.transitions_usd == pytest.approx(expected * 0.025 / 1000)
    # Ten files over 5 GiB and ten under: 4 + 2 x 10 hash items + 2 x 20 copy items
    mixed = [8 * GB] * 10 + [1 * GB] * 10
    assert fanout_path(mixed, BARE).transitions == 4 + 20 + 40
    # Before the hash map: 2 parent states and the copy map's items alone
    assert fanout_path(mixed, replace(BARE, hash_reads="promoter")).transitions == 2 + 40
    assert single_path([1 * GB] * 20, BARE).transitions == 0


def test_the_copy_map_runs_copy_concurrency_items_at_a_time() -> None:
    a = replace(BARE, hash_reads="none", copy_concurrency=10, hash_concurrency=1)
    one = fanout_path([2 * GB], a).wall_s
    ten = fanout_path([2 * GB] * 10, a).wall_s
    eleven = fanout_path([2 * GB] * 11, a).wall_s
    assert ten == pytest.approx(one)
    assert eleven == pytest.approx(one + copy_seconds(2 * GB, a))


def test_the_execution_timeout_is_reported() -> None:
    a = replace(BARE, hash_reads="none", copy_concurrency=1, execution_timeout_s=100)
    cost = fanout_path([2 * GB] * 10, a)
    assert cost.timeout is not None
    assert "execution" in cost.timeout


def test_the_safe_limit_is_the_boundary_of_the_margin() -> None:
    sizes = size_mix(300)
    a = Assumptions()
    k = safe_single_limit(sizes, a, margin=0.5)
    assert 0 < k < len(sizes)
    assert single_path(sizes[:k], a).wall_s <= 450
    assert single_path(sizes[: k + 1], a).wall_s > 450
    with pytest.raises(ModelError, match="margin"):
        safe_single_limit(sizes, a, margin=1.5)


def test_defaults_keep_a_set_single_until_either_threshold() -> None:
    assert defaults_keep_single([1] * 500) == DEFAULT_FANOUT_MIN_FILES - 1
    half = DEFAULT_FANOUT_MIN_BYTES // 2
    assert defaults_keep_single([half, half, half]) == 1
    assert defaults_keep_single([half]) == 1
    assert defaults_keep_single([8 * GB] * 10, min_bytes=32 * GIB) == 4


def test_the_fanout_limit_is_where_the_promoters_invocation_stopped_fitting() -> None:
    # Given files over 5 GiB, read through in the promoter's invocation (before the hash map)
    sizes = [8 * GB] * 30
    before = replace(BARE, hash_reads="promoter")
    k = fanout_limit(sizes, before)
    # Then 900 s at 100 MB/s reads 11 of them (88 GB), not 12 (96 GB)
    assert k == 11
    assert fanout_path(sizes[:k], before).timeout is None
    assert fanout_path(sizes[: k + 1], before).timeout is not None
    # And with the hash map (the default) the set has no such limit
    assert fanout_limit(sizes, BARE) == len(sizes)


def test_the_size_mix_is_deterministic_within_its_range_and_prefix_stable() -> None:
    mix = size_mix(2_000)
    assert mix == size_mix(2_000)
    assert mix[:20] == size_mix(20)
    assert all(2 * GB <= s <= 8 * GB for s in mix)
    assert mix != size_mix(2_000, seed=14)
    with pytest.raises(ModelError, match="at least 1"):
        size_mix(0)
    with pytest.raises(ModelError, match="size range"):
        size_mix(5, low_gb=8, high_gb=2)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"part_size": 1024}, "part_size"),
        ({"timeout_s": 901}, "timeout_s"),
        ({"copy_mb_s": 0}, "copy_mb_s"),
        ({"request_latency_s": -1}, "request_latency_s"),
        ({"single_request_limit": 6 * GIB}, "single_request_limit"),
    ],
)
def test_an_impossible_assumption_is_refused_by_name(change: dict[str, float], named: str) -> None:
    with pytest.raises(ModelError, match=named):
        Assumptions(**change)  # type: ignore[arg-type]


def test_the_code_derived_defaults_match_the_code() -> None:
    # The promoter function's memory, read from the stack without importing the CDK
    tree = ast.parse((ROOT / "stacks" / "promoter_function.py").read_text())
    memory = next(
        node.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "FUNCTION_MEMORY_MB" for t in node.targets)
        and isinstance(node.value, ast.Constant)
    )
    assert Assumptions().memory_mb == memory
    # The part pool of the multipart copy
    source = inspect.getsource(multipart_copy)
    assert re.findall(r"max_workers=([\w.]+)", source) == ["limits.part_concurrency"]
    assert (PROMOTER_WORKERS, PART_WORKERS) == (16, 8)


def test_the_bench_prints_every_count_for_both_paths_quickly(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # CPU seconds, not wall: a loaded machine's scheduling is not the model's cost.
    started = time.process_time()
    assert main([]) == 0
    elapsed = time.process_time() - started
    out = capsys.readouterr().out
    for n in ("20", "200", "2,000"):
        for path in ("single", "fan-out"):
            found = re.findall(rf"^\| {n} \| [\d,]+ \| {path} \|", out, re.MULTILINE)
            # The code's table and the comparison's (before the hash map)
            assert len(found) == 2, (n, path)
    assert "--hash-reads promoter" in out
    assert "https://aws.amazon.com/step-functions/pricing/" in out
    assert elapsed < 10


def test_bad_options_are_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--part-size", "1024"])
    assert "part_size" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--files", "0"])
    assert "file counts" in capsys.readouterr().err
