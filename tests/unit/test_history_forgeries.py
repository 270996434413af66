"""A history no build job can bend: each attack a build job's permissions allow (create-only
writes under ``runs/`` and ``history/_entries/``) is made, its forged write is shown to have
gone through, and then the promoter's history is shown to keep none of it."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.unit.promotion_world import COMMIT, INDEX, Promoter
from tests.unit.test_history_writers import entry_for, history, staged_on, write_entry
from wheelgate.core.layout import CHECKSUM_SUFFIX, NIGHTLY, STAGING
from wheelgate.core.objects import META_COMMIT, META_RUN_ID, META_SHA256
from wheelgate.history.fold import REFUSED_CAPPED, REFUSED_FORMAT, REFUSED_INDEX, REFUSED_SHA256
from wheelgate.history.model import CommitTimeBy, HistoryHead, RunState, StagedEntry
from wheelgate.history.page import listed_runs
from wheelgate.history.store import STAGED_RUNS_PER_DAY, HistoryStore
from wheelgate.local.sample_wheels import manifest_for
from wheelgate.staging.local_artifacts import sha256_file

DAY = datetime(2026, 1, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def p(tmp_path: Path) -> Promoter:
    return Promoter(tmp_path, run_expiry_days=14)


def forge(p: Promoter, key: str, body: bytes, **metadata: str) -> None:
    """A build job's create-only write; it must go through (the attack is allowed to land)."""
    p.staging.put(
        key,
        body,
        content_type="application/octet-stream",
        metadata=metadata or None,
        if_none_match=True,
    )
    assert p.staging.objects[key].body == body


def fold(p: Promoter, entry: StagedEntry) -> str | None:
    """Write ``entry`` as a build job does (create-only), then fold it: the refusal's reason
    (``None``: folded)."""
    key = STAGING.history_entry(entry.index, entry.run_id, entry.entry_id)
    forge(p, key, entry.to_json().encode())
    result = p.service.fold_entry(key)
    assert result is not None
    return result.reason


def test_an_entry_dated_before_the_culprit_is_staged_when_s3_says_its_objects_were(
    p: Promoter,
) -> None:
    # Given a run whose objects S3 dates on the 2nd, and its entry claiming 1999
    wheel = p.wheel()
    p.stage("301", wheel)
    staged_on(p, "301", DAY)
    entry = entry_for("301", wheel, staged_at="1999-01-01T00:00:00.000000Z")
    # When it is folded
    assert fold(p, entry) is None
    # Then the history dates it by S3's LastModified, and its files expire from there
    [run] = history(p)
    assert run.staged_at == "2026-01-02T09:00:00.000000Z"
    assert run.files[0].expires_at == "2026-01-17T00:00:00.000000Z"


def test_a_later_entry_changes_neither_the_attempt_nor_the_commit_time_of_a_run(
    p: Promoter,
) -> None:
    # Given run 302 folded from its first entry: attempt 1, no commit time
    first, other = p.wheel("pkg", "1.0"), p.wheel("other", "1.0")
    p.stage("302", first, other)
    assert fold(p, entry_for("302", first)) is None
    # When another entry of the run, which any build job may write, claims attempt 9 and a
    # commit time before the culprit's
    forged = entry_for("302", other, attempt=9, commit_time="2000-01-01T00:00:00.000000Z")
    assert fold(p, forged) is None
    # Then its file is added (the run is not reported yet), but its attempt and time are not
    [run] = history(p)
    assert (run.attempt, run.commit_time, run.commit_time_by) == (1, None, None)
    assert sorted(f.filename for f in run.files) == sorted([first.name, other.name])


def test_the_reporters_commit_time_and_attempt_replace_the_build_jobs(p: Promoter) -> None:
    wheel = p.wheel()
    manifest = p.stage("303", wheel)
    build_time = "2000-01-01T00:00:00.000000Z"
    assert fold(p, entry_for("303", wheel, attempt=7, commit_time=build_time)) is None
    assert history(p)[0].commit_time_by is CommitTimeBy.BUILD

    p.report("303", {**manifest, "commit_time": "2026-01-02T10:05:00+01:00", "attempt": 2})

    [run] = history(p)
    assert (run.commit_time, run.commit_time_by, run.attempt) == (
        "2026-01-02T09:05:00.000000Z",
        CommitTimeBy.REPORTER,
        2,
    )


def test_a_foreign_entry_adding_a_file_to_a_reported_run_changes_nothing(p: Promoter) -> None:
    # Given run 304 promoted with its one wheel
    wheel = p.wheel("pkg", "1.0")
    p.report("304", p.stage("304", wheel))
    [before] = history(p)
    # When another build job stages the victim's bytes under another platform's name in the
    # victim's run, and writes an entry of the victim's run listing it
    foreign = wheel.with_name("pkg-1.0-cp312-cp312-win_amd64.whl")
    foreign.write_bytes(wheel.read_bytes())
    key = STAGING.artifact("304", INDEX, foreign.name)
    forge(p, key, foreign.read_bytes(), **{META_COMMIT: COMMIT, META_RUN_ID: "304"})
    fold(p, entry_for("304", foreign))
    # Then the run's files are still those its manifest named
    [after] = history(p)
    assert after == before
    assert [f.filename for f in after.files] == [wheel.name]


def test_a_decision_replaces_the_files_entries_listed_with_its_manifests(p: Promoter) -> None:
    # Given run 305 whose entries, folded before its report, list a file the manifest does not
    wheel = p.wheel("pkg", "1.0")
    extra = wheel.with_name("pkg-1.0-cp312-cp312-win_amd64.whl")
    extra.write_bytes(wheel.read_bytes())
    p.stage("305", wheel, extra)
    assert fold(p, entry_for("305", wheel, extra)) is None
    # When its report names only the wheel (a re-run's manifest states what it tested)
    p.report("305", manifest_for("305", COMMIT, INDEX, [wheel]))
    # Then the history lists the manifest's file alone
    [run] = history(p)
    assert [f.filename for f in run.files] == [wheel.name]


def without_s3_checksum(p: Promoter, key: str, claimed: str) -> None:
    """Make ``key`` an object S3 holds no SHA-256 of (uploaded in parts), whose writer's
    metadata and ``.sha256`` sidecar both claim ``claimed``."""
    found = p.staging.objects[key]
    found.sha256, found.etag = None, found.etag.rstrip('"') + '-2"'
    found.metadata[META_SHA256] = claimed
    forge(p, key + CHECKSUM_SUFFIX, f"{claimed}  {key.rsplit('/', 1)[1]}\n".encode())


def test_a_sidecar_and_metadata_that_lie_are_never_the_hash_the_history_records(
    p: Promoter,
) -> None:
    # Given a wheel staged in parts (no S3 checksum) whose metadata and sidecar claim the
    # SHA-256 of another, honest wheel
    wheel, honest = p.wheel("pkg", "1.0"), p.wheel("pkg", "2.0")
    p.stage("306", wheel)
    key = STAGING.artifact("306", INDEX, wheel.name)
    without_s3_checksum(p, key, sha256_file(honest))
    lie = entry_for("306", wheel)
    lie = lie.model_copy(
        update={"files": (lie.files[0].model_copy(update={"sha256": sha256_file(honest)}),)}
    )
    # When an entry claims what the sidecar says, Then it is refused (the promoter hashed the
    # bytes); an entry claiming the bytes' hash is folded with it
    assert fold(p, lie) == REFUSED_SHA256
    assert history(p) == []
    assert fold(p, entry_for("306", wheel)) is None
    assert [f.sha256 for f in history(p)[0].files] == [
        hashlib.sha256(wheel.read_bytes()).hexdigest()
    ]


def test_an_entry_for_a_directory_not_allowed_is_refused_before_anything_is_read(
    p: Promoter,
) -> None:
    wheel = p.wheel()
    other = "v2/elsewhere"
    key = STAGING.artifact("307", other, wheel.name)
    forge(p, key, wheel.read_bytes(), **{META_COMMIT: COMMIT, META_RUN_ID: "307"})
    heads = p.world.calls.get("HeadObject", 0)

    assert fold(p, entry_for("307", wheel, index=other)) == REFUSED_INDEX

    assert p.world.calls.get("HeadObject", 0) == heads
    assert not any(k.startswith(STAGING.history_dir(other)) for k in p.staging.objects)


@pytest.mark.parametrize("field", ["staged_at", "commit_time"])
def test_an_entry_time_without_a_zone_is_refused_as_an_entry_format(
    p: Promoter, field: str
) -> None:
    wheel = p.wheel()
    p.stage("308", wheel)
    body = json.loads(entry_for("308", wheel).to_json())
    body[field] = "2099-01-01T00:00:00.000000"
    key = STAGING.history_entry(INDEX, "308", "1-" + "0" * 32)
    forge(p, key, json.dumps(body).encode())

    result = p.service.fold_entry(key)

    assert result is not None
    assert result.reason == REFUSED_FORMAT
    assert "no time zone" in result.message
    assert history(p) == []


def stage_many(p: Promoter, wheel: Path, run_ids: list[str], when: datetime) -> list[str]:
    """Stage ``wheel`` in each run (dated ``when``) and write each run's entry: the keys."""
    keys = []
    for run_id in run_ids:
        key = STAGING.artifact(run_id, INDEX, wheel.name)
        forge(p, key, wheel.read_bytes(), **{META_COMMIT: COMMIT, META_RUN_ID: run_id})
        staged_on(p, run_id, when)
        keys.append(write_entry(p, entry_for(run_id, wheel)))
    return keys


def test_a_flood_of_entries_cannot_hide_a_reported_run_from_the_history_or_its_page(
    p: Promoter,
) -> None:
    # Given run 400 reported, then 200 runs staged by build jobs the same day
    wheel = p.wheel()
    p.stage("400", wheel)
    staged_on(p, "400", DAY)
    p.report("400", manifest_for("400", COMMIT, INDEX, [wheel]))
    flood = [str(5000 + n) for n in range(200)]
    keys = stage_many(p, wheel, flood, DAY + timedelta(hours=1))
    # When every entry is folded
    reasons = [p.service.fold_entry(key).reason for key in keys]  # type: ignore[union-attr]
    # Then the day holds the cap of never-reported runs, the rest are dropped and named
    assert reasons.count(None) == STAGED_RUNS_PER_DAY
    assert set(reasons) == {None, REFUSED_CAPPED}
    runs = {r.run_id: r for r in history(p)}
    assert runs["400"].state is RunState.PROMOTED
    assert len(runs) == STAGED_RUNS_PER_DAY + 1
    head = HistoryHead.model_validate_json(p.staging.objects[STAGING.history_head(INDEX)].body)
    [capped] = head.capped
    assert (capped.day, capped.cap) == ("2026-01-02", STAGED_RUNS_PER_DAY)
    assert capped.dropped[0] == flood[STAGED_RUNS_PER_DAY]
    # And the page lists the reported run
    page = HistoryStore(p.staging, clock=lambda: DAY).newest_runs(INDEX)  # type: ignore[arg-type]
    assert "400" in [r.run_id for r in page]


def test_a_decision_lists_a_run_whose_entry_the_cap_dropped(p: Promoter) -> None:
    wheel = p.wheel()
    flood = [str(6000 + n) for n in range(STAGED_RUNS_PER_DAY + 1)]
    keys = stage_many(p, wheel, flood, DAY)
    assert [p.service.fold_entry(k).reason for k in keys][-1] == REFUSED_CAPPED  # type: ignore[union-attr]

    p.report(flood[-1], manifest_for(flood[-1], COMMIT, INDEX, [wheel]))

    run = {r.run_id: r for r in history(p)}[flood[-1]]
    assert run.state is RunState.PROMOTED
    assert run.files[0].nightly_key == NIGHTLY.artifact(INDEX, wheel.name)


def test_the_page_lists_every_reported_run_of_its_window_whatever_was_staged_after(
    p: Promoter,
) -> None:
    # Given a reported run, then never-reported runs on many later days (the cap per day
    # does not bound them all)
    wheel = p.wheel()
    p.stage("700", wheel)
    staged_on(p, "700", DAY)
    p.report("700", manifest_for("700", COMMIT, INDEX, [wheel]))
    [reported] = history(p)
    later = [
        reported.model_copy(
            update={
                "run_id": str(8000 + n),
                "state": RunState.STAGED,
                "staged_at": f"2026-02-{1 + n // 40:02d}T00:00:{n % 40:02d}.000000Z",
            }
        )
        for n in range(250)
    ]
    # When the page's runs are chosen, Then the reported run is one of them
    listed = listed_runs([reported, *later], 200)
    assert reported in listed
    assert len(listed) == 201
