"""A rejected run's record says which commit and which staged files were refused, so nobody has
to read ``manifests/`` to tell (the record schema stays readable by older readers)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.unit.promotion_world import COMMIT, INDEX, Promoter
from wheelgate.core.records import PromotionRecord, StagedFile
from wheelgate.local.sample_wheels import manifest_for
from wheelgate.promotion.recorder import stated_commit


@pytest.fixture
def promoter(tmp_path: Path) -> Promoter:
    return Promoter(tmp_path)


def staged_file(wheel: Path) -> StagedFile:
    data = wheel.read_bytes()
    return StagedFile(filename=wheel.name, sha256=hashlib.sha256(data).hexdigest(), size=len(data))


def test_a_run_rejected_by_its_tests_names_its_commit_and_staged_files(
    promoter: Promoter,
) -> None:
    wheel = promoter.wheel()
    manifest = promoter.stage("run-1", wheel)
    manifest["sets"][0]["tests"][0]["result"] = "failed"
    record = promoter.report("run-1", manifest)
    assert (record.state.value, record.reason) == ("rejected", "tests-failed")
    assert record.commit == COMMIT
    assert record.sets[0].staged == [staged_file(wheel)]
    assert record.sets[0].files == []  # nothing was released


def test_a_run_rejected_after_its_tests_passed_names_its_staged_files(
    promoter: Promoter,
) -> None:
    # Given a manifest listing a wheel that was never staged (its tests passed)
    staged, missing = promoter.wheel(), promoter.wheel("other")
    promoter.stage("run-1", staged)
    manifest = manifest_for("run-1", COMMIT, INDEX, [staged, missing])
    record = promoter.report("run-1", manifest)
    # Then the refusal is an integrity one, and the record lists what the manifest staged
    assert (record.state.value, record.reason) == ("rejected", "file-missing"), record.message
    assert record.commit == COMMIT
    assert record.sets[0].staged == [staged_file(staged), staged_file(missing)]


def test_an_invalid_manifest_still_records_the_commit_it_states(promoter: Promoter) -> None:
    manifest = promoter.stage("run-1", promoter.wheel())
    manifest["sets"][0]["tests"][0]["url"] = "https://elsewhere.example/run/1"
    record = promoter.report("run-1", manifest)
    assert (record.state.value, record.reason) == ("rejected", "invalid-manifest")
    assert record.commit == COMMIT


def test_a_manifest_that_is_no_json_records_no_commit(promoter: Promoter) -> None:
    record = promoter.report("run-1", b"not json")
    assert (record.state.value, record.commit) == ("rejected", None)


def test_a_record_written_before_staged_files_were_kept_still_reads() -> None:
    old = (
        '{"schema": "wheelgate/record/v1", "run_id": "r", "state": "rejected", "sets": '
        '[{"index": "v2/x", "state": "rejected", "files": []}]}'
    )
    assert PromotionRecord.model_validate_json(old).sets[0].staged == []


@pytest.mark.parametrize(
    "raw",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"commit": "' + b"a" * 40 + b'", "pad": "' + b"x" * (5 * 1024 * 1024) + b'"}',
        b"not json",
    ],
    ids=["nested 100,000 deep", "over the manifest limit", "not JSON"],
)
def test_a_hostile_manifest_states_no_commit_and_never_fails_its_rejection(raw: bytes) -> None:
    assert stated_commit(raw) is None
