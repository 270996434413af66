"""The run history's writers: the promoter folds only entries the staged objects vouch for,
records each decision on its run (with each test's evidence and where nightly holds it), and
hands the newest runs to the page writer after each change."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.unit.memory_bucket import World
from tests.unit.promotion_world import BREAK_GLASS, COMMIT, INDEX, NOW, Promoter
from tests.unit.test_promotion_service import override_request
from wheelgate.core.layout import NIGHTLY, STAGING
from wheelgate.history.fold import (
    REFUSED_COMMIT,
    REFUSED_FORMAT,
    REFUSED_KEY,
    REFUSED_MISSING,
    REFUSED_REQUEST,
    REFUSED_SHA256,
)
from wheelgate.history.model import (
    CommitTimeBy,
    EntryFile,
    HistoryRun,
    RunState,
    StagedEntry,
)
from wheelgate.history.reader import BucketHistorySource, read_history
from wheelgate.history.store import HistoryStore
from wheelgate.local.sample_wheels import manifest_for
from wheelgate.promotion.event import ManifestEvent
from wheelgate.staging.local_artifacts import sha256_file

STAGED_AT = "2026-01-02T03:04:05.000000Z"


def entry_for(run_id: str, *wheels: Path, commit: str = COMMIT, **changes: object) -> StagedEntry:
    files = tuple(
        EntryFile(filename=w.name, sha256=sha256_file(w), size=w.stat().st_size) for w in wheels
    )
    values: dict[str, object] = {
        "run_id": run_id,
        "index": INDEX,
        "commit": commit,
        "staged_at": STAGED_AT,
        "files": files,
        **changes,
    }
    return StagedEntry.model_validate(values)


def write_entry(p: Promoter, entry: StagedEntry, key: str | None = None) -> str:
    key = key or STAGING.history_entry(entry.index, entry.run_id, entry.entry_id)
    p.staging.put(key, entry.to_json().encode(), content_type="application/json")
    return key


def staged_on(p: Promoter, run_id: str, when: datetime) -> None:
    """Date every object of run ``run_id`` as S3 would have, had it been written ``when``."""
    for key, found in p.staging.objects.items():
        if key.startswith(STAGING.run_prefix(run_id)):
            found.modified = when


def refusal(p: Promoter, key: str) -> str | None:
    """The reason the promoter refused the entry at ``key`` (``None``: folded)."""
    result = p.service.fold_entry(key)
    assert result is not None
    return result.reason


def history(p: Promoter) -> list[HistoryRun]:
    return read_history(BucketHistorySource(p.staging), INDEX)  # type: ignore[arg-type]


@pytest.fixture
def p(tmp_path: Path) -> Promoter:
    return Promoter(tmp_path, run_expiry_days=14)


def test_an_entry_the_staged_objects_vouch_for_is_folded_with_its_files(p: Promoter) -> None:
    wheel = p.wheel("pkg", "1.0")
    p.stage("101", wheel)
    staged_on(p, "101", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    key = write_entry(p, entry_for("101", wheel, attempt=2, commit_time=STAGED_AT))

    assert p.deliver(key) is None

    [run] = history(p)
    assert (run.run_id, run.attempt, run.state, run.commit_time, run.commit_time_by) == (
        "101",
        2,
        "staged",
        STAGED_AT,
        CommitTimeBy.BUILD,
    )
    assert run.staged_at == "2026-01-02T03:04:05.000000Z"
    [f] = run.files
    assert (f.project, f.version, f.staging_key, f.sha256) == (
        "pkg",
        "1.0",
        STAGING.artifact("101", INDEX, wheel.name),
        sha256_file(wheel),
    )
    # Staged at 03:04 on the 2nd, expired 14 days later at the next midnight (S3's rounding).
    assert f.expires_at == "2026-01-17T00:00:00.000000Z"
    head = json.loads(p.staging.objects[STAGING.history_head(INDEX)].body)
    assert head["months"] == [{"month": "2026-01", "runs": 1}]


@pytest.mark.parametrize(
    ("forgery", "reason"),
    [
        ("other bytes", REFUSED_SHA256),
        ("other size", REFUSED_SHA256),
        ("other commit", REFUSED_COMMIT),
        ("missing file", REFUSED_MISSING),
    ],
)
def test_a_forged_entry_is_refused_whole_and_folds_nothing(
    p: Promoter, forgery: str, reason: str
) -> None:
    good, other = p.wheel("pkg", "1.0"), p.wheel("extra", "1.0")
    p.stage("102", good)
    if forgery == "other bytes":
        p.stage("102", other)
        forged = entry_for("102", good, other)
        files = (forged.files[0], forged.files[1].model_copy(update={"sha256": "e" * 64}))
        entry = forged.model_copy(update={"files": files})
    elif forgery == "other size":
        honest = entry_for("102", good)
        files = (honest.files[0].model_copy(update={"size": honest.files[0].size + 1}),)
        entry = honest.model_copy(update={"files": files})
    elif forgery == "other commit":
        entry = entry_for("102", good, commit="d" * 40)
    else:
        entry = entry_for("102", good, other)

    assert refusal(p, write_entry(p, entry)) == reason
    assert history(p) == []


def test_an_entry_under_a_key_its_content_does_not_name_is_refused(p: Promoter) -> None:
    wheel = p.wheel()
    p.stage("103", wheel)
    entry = entry_for("103", wheel)
    key = STAGING.history_entry(INDEX, "104", entry.entry_id)

    assert refusal(p, write_entry(p, entry, key)) == REFUSED_KEY
    assert history(p) == []


def test_an_entry_for_a_request_run_id_is_refused(p: Promoter) -> None:
    wheel = p.wheel()
    p.stage("yank-0001", wheel)
    entry = entry_for("yank-0001", wheel)

    assert refusal(p, write_entry(p, entry)) == REFUSED_REQUEST
    assert history(p) == []


def test_an_entry_that_is_not_json_is_dropped_with_its_reason(p: Promoter) -> None:
    key = STAGING.history_entry(INDEX, "105", "1-abc")
    p.staging.put(key, b"{not json", content_type="application/json")

    result = p.service.fold_entry(key)

    assert result is not None
    assert (result.reason, result.message.split(": ")[0]) == (
        REFUSED_FORMAT,
        f"{key} is not a history entry",
    )


def test_stage_calls_union_their_files_until_the_run_is_reported_then_add_nothing(
    p: Promoter,
) -> None:
    first, second, late = p.wheel("pkg", "1.0"), p.wheel("extra", "1.0"), p.wheel("late", "1.0")
    manifest = p.stage("106", first, second)
    p.deliver(write_entry(p, entry_for("106", second)))
    p.deliver(write_entry(p, entry_for("106", first)))
    assert sorted(f.filename for f in history(p)[0].files) == sorted([first.name, second.name])
    p.report("106", manifest)

    p.stage("106", late)
    p.deliver(write_entry(p, entry_for("106", late)))

    [run] = history(p)
    assert run.state is RunState.PROMOTED
    assert [(f.filename, f.nightly_key) for f in run.files] == [
        (name, NIGHTLY.artifact(INDEX, name)) for name in sorted([first.name, second.name])
    ]


def test_a_decision_records_state_tests_evidence_and_where_nightly_holds_a_dependency(
    p: Promoter,
) -> None:
    dep = p.wheel("dep", "1.0")
    p.report("107", p.stage("107", dep))
    pkg = p.wheel("pkg", "1.0")
    manifest = p.stage("108", pkg)
    manifest = manifest_for("108", COMMIT, INDEX, [pkg], installed=[pkg, dep])

    record = p.report("108", manifest)

    assert record.state.value == "promoted", record
    run = {r.run_id: r for r in history(p)}["108"]
    [test] = run.tests
    assert (run.state, test.name, test.result) == (RunState.PROMOTED, "smoke", "passed")
    assert {f.sha256 for f in test.installed} == {sha256_file(pkg), sha256_file(dep)}
    assert test.nightly_keys == {sha256_file(dep): NIGHTLY.artifact(INDEX, dep.name)}
    [f] = run.files
    assert f.nightly_key == NIGHTLY.artifact(INDEX, pkg.name)
    assert (run.decided_at, run.reported_at) != (None, None)


def test_a_rejected_run_never_folded_is_created_from_its_decision(p: Promoter) -> None:
    wheel = p.wheel()
    manifest = manifest_for("109", COMMIT, INDEX, [wheel], result="failed")
    p.stage("109", wheel)

    record = p.report("109", manifest)

    [run] = history(p)
    assert run.state is RunState.REJECTED
    assert run.reasons == (record.sets[0].reason,) == ("tests-failed",)
    assert [(f.filename, f.nightly_key) for f in run.files] == [(wheel.name, None)]
    assert run.files[0].expires_at is not None
    assert [(t.name, t.result) for t in run.tests] == [("smoke", "failed")]


def test_the_page_writer_gets_the_newest_runs_first_after_each_change(tmp_path: Path) -> None:
    staging = World().bucket("staging")
    pages: list[tuple[str, list[str]]] = []
    store = HistoryStore(
        staging,  # type: ignore[arg-type]
        clock=lambda: NOW,
        page_writer=lambda index, runs: pages.append((index, [r.run_id for r in runs])),
    )
    for run_id, month in (("1", "2025-12"), ("2", "2026-01"), ("3", "2026-01")):
        run = HistoryRun(
            run_id=run_id, index=INDEX, commit=COMMIT, staged_at=f"{month}-05T00:00:00.000000Z"
        )
        store.change_run(INDEX, month, run_id, lambda _old, run=run: run)

    assert pages[-1] == (INDEX, ["3", "2", "1"])
    assert store.newest_runs(INDEX, limit=2) == [r for r in store.newest_runs(INDEX)][:2]
    assert len(pages) == 3


def test_a_late_change_never_lowers_a_months_count_in_the_head(tmp_path: Path) -> None:
    staging = World().bucket("staging")
    store = HistoryStore(staging, clock=lambda: NOW)  # type: ignore[arg-type]
    for run_id in ("1", "2"):
        run = HistoryRun(run_id=run_id, index=INDEX, commit=COMMIT, staged_at=STAGED_AT)
        store.change_run(INDEX, "2026-01", run_id, lambda _old, run=run: run)

    store._name_month(INDEX, "2026-01", 1)  # a slower writer that read one run

    head = json.loads(staging.objects[STAGING.history_head(INDEX)].body)
    assert head["months"] == [{"month": "2026-01", "runs": 2}]


def test_many_runs_of_a_month_are_changed_in_one_write_of_the_shard_and_of_the_head() -> None:
    # Given a month already holding run 1, and a store that counts what it writes
    world = World()
    staging = world.bucket("staging")
    store = HistoryStore(staging, clock=lambda: NOW)  # type: ignore[arg-type]
    first = HistoryRun(run_id="1", index=INDEX, commit=COMMIT, staged_at=STAGED_AT)
    store.change_run(INDEX, "2026-01", "1", lambda _old: first)
    puts_before = world.calls.get("PutObject", 0)
    # When runs 2..4 are added and run 1 is decided in one call
    added = {
        str(n): HistoryRun(run_id=str(n), index=INDEX, commit=COMMIT, staged_at=STAGED_AT)
        for n in (2, 3, 4)
    }
    changes = {rid: (lambda _old, run=run: run) for rid, run in added.items()}
    changes["1"] = lambda old: (old or first).model_copy(update={"state": RunState.PROMOTED})
    kept = store.change_runs(INDEX, "2026-01", changes)
    # Then every run is kept, run 1 keeps its place and takes its decision, the head counts 4
    assert sorted(kept) == ["1", "2", "3", "4"]
    runs = read_history(BucketHistorySource(staging), INDEX)  # type: ignore[arg-type]
    assert sorted(r.run_id for r in runs) == ["1", "2", "3", "4"]
    assert {r.run_id: r.state for r in runs}["1"] is RunState.PROMOTED
    head = json.loads(staging.objects[STAGING.history_head(INDEX)].body)
    assert head["months"] == [{"month": "2026-01", "runs": 4}]
    assert world.calls.get("PutObject", 0) - puts_before == 2


def test_an_event_for_an_entry_reaches_the_folder_not_the_manifest_routes(p: Promoter) -> None:
    wheel = p.wheel()
    p.stage("110", wheel)
    key = write_entry(p, entry_for("110", wheel))

    assert p.service.handle(ManifestEvent(key, "AWS:AROABUILD:job")) is None

    assert [r.run_id for r in history(p)] == ["110"]
    assert p.service.load_record("110") is None


def test_an_override_marks_its_target_run_promoted_and_is_no_run_itself(p: Promoter) -> None:
    wheel = p.wheel()
    manifest = manifest_for("run-1", COMMIT, INDEX, [wheel], result="failed")
    p.stage("run-1", wheel)
    p.report("run-1", manifest)
    assert [r.state for r in history(p)] == [RunState.REJECTED]

    p.report("override-run-1-x", override_request("run-1"), BREAK_GLASS)

    [run] = history(p)
    assert (run.run_id, run.state, run.reasons) == ("run-1", RunState.PROMOTED, ())
    assert run.files[0].nightly_key == NIGHTLY.artifact(INDEX, wheel.name)
