"""The promotion service over in-memory buckets: it reads the request, guards redelivery,
checks the writer, and acts on what the route decided."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.unit.promotion_world import BREAK_GLASS, INDEX, INTRUDER, REPORTER, Promoter
from wheelgate.core.layout import STAGING
from wheelgate.core.override import SCHEMA_OVERRIDE_V1
from wheelgate.index.yank import SCHEMA_YANK_V1
from wheelgate.promotion.event import ManifestEvent


@pytest.fixture
def promoter(tmp_path: Path) -> Promoter:
    return Promoter(tmp_path)


def test_a_passed_run_from_the_reporter_is_promoted_into_nightly(promoter: Promoter) -> None:
    wheel = promoter.wheel()
    record = promoter.report("run-1", promoter.stage("run-1", wheel))
    assert record.state.value == "promoted", record.message
    assert promoter.nightly.get(f"{INDEX}/{wheel.name}") is not None
    page = json.loads(promoter.nightly.get(f"{INDEX}/pkg/index.json")[0])  # type: ignore[index]
    assert [f["filename"] for f in page["files"]] == [wheel.name]
    assert promoter.heard.decided == [record]


def test_a_failed_run_is_rejected_and_nightly_is_untouched(promoter: Promoter) -> None:
    manifest = promoter.stage("run-1", promoter.wheel())
    manifest["sets"][0]["tests"][0]["result"] = "failed"
    record = promoter.report("run-1", manifest)
    assert (record.state.value, record.reason) == ("rejected", "tests-failed")
    assert promoter.in_nightly() == []


def test_a_manifest_from_another_writer_is_noted_and_decides_nothing(promoter: Promoter) -> None:
    # Given a manifest first written by a principal not trusted for it
    manifest = promoter.stage("run-1", promoter.wheel())
    noted = promoter.report("run-1", manifest, principal=INTRUDER)
    # Then it is noted as pending, nothing is copied, and no decision is told
    assert (noted.state.value, noted.reason) == ("pending", "untrusted-writer")
    assert promoter.in_nightly() == []
    assert promoter.heard.decided == []
    assert promoter.heard.ignored == [noted]
    # When the reporter writes the very same bytes, Then they decide the run
    assert promoter.report("run-1", manifest).state.value == "promoted"


def test_without_a_reporter_role_the_promoter_does_not_start(tmp_path: Path) -> None:
    # The settings fail closed before any writer is judged: no reporter id, no promoter
    with pytest.raises(ValidationError, match="WHEELGATE_TRUSTED_REPORTER_ID"):
        Promoter(tmp_path, trusted_reporter_id=None)


def test_the_same_bytes_delivered_again_change_nothing(promoter: Promoter) -> None:
    manifest = promoter.stage("run-1", promoter.wheel())
    key = promoter.write("run-1", json.dumps(manifest).encode())
    first = promoter.deliver(key)
    writes = promoter.world.calls["PutObject"]
    assert promoter.deliver(key) == first
    assert promoter.world.calls["PutObject"] == writes
    assert len(promoter.heard.decided) == 1


def test_a_promoted_run_is_never_changed_by_other_bytes(promoter: Promoter) -> None:
    promoter.report("run-1", promoter.stage("run-1", promoter.wheel()))
    other = promoter.stage("run-1", promoter.wheel("pkg", "2.0"))
    record = promoter.report("run-1", other)
    assert record.state.value == "promoted"
    assert record.history[-1].reason == "replay-conflict"
    assert promoter.nightly.get(f"{INDEX}/pkg-2.0-py3-none-any.whl") is None


def test_an_overwritten_manifest_is_not_judged_on_the_newer_bytes(promoter: Promoter) -> None:
    manifest = promoter.stage("run-1", promoter.wheel())
    key = promoter.write("run-1", json.dumps(manifest).encode())
    etag = promoter.staging.head(key).etag  # type: ignore[union-attr]
    promoter.write("run-1", b"{}")
    assert promoter.service.handle(ManifestEvent(key, REPORTER, etag=etag)) is None


def test_a_yank_request_yanks_a_released_file(promoter: Promoter) -> None:
    wheel = promoter.wheel()
    promoter.report("run-1", promoter.stage("run-1", wheel))
    yank = {
        "schema": SCHEMA_YANK_V1,
        "run_id": "yank-1",
        "index": INDEX,
        "filename": wheel.name,
        "yanked": True,
        "reason": "broken",
    }
    record = promoter.report("yank-1", yank)
    assert record.state.value == "promoted"
    assert record.message == f"yanked {wheel.name} in {INDEX} (reason: broken)"
    page = json.loads(promoter.nightly.get(f"{INDEX}/pkg/index.json")[0])  # type: ignore[index]
    assert page["files"][0]["yanked"] == "broken"


def override_request(target: str, request: str = "override-run-1-x") -> dict[str, str]:
    return {
        "schema": SCHEMA_OVERRIDE_V1,
        "run_id": request,
        "target_run_id": target,
        "reason": "the failure is a known flake",
    }


def test_an_override_promotes_a_rejected_run_and_records_both(promoter: Promoter) -> None:
    manifest = promoter.stage("run-1", promoter.wheel())
    manifest["sets"][0]["tests"][0]["result"] = "failed"
    promoter.report("run-1", manifest)
    record = promoter.report("override-run-1-x", override_request("run-1"), BREAK_GLASS)
    assert record.message == "override applied: run run-1 promoted"
    target = promoter.service.load_record("run-1")
    assert target is not None
    assert target.state.value == "promoted"
    assert target.override == {
        "by": BREAK_GLASS,
        "reason": "the failure is a known flake",
        "request": "override-run-1-x",
    }


def test_an_override_from_the_reporter_is_rejected_on_its_own_record(promoter: Promoter) -> None:
    manifest = promoter.stage("run-1", promoter.wheel())
    manifest["sets"][0]["tests"][0]["result"] = "failed"
    promoter.report("run-1", manifest)
    record = promoter.report("override-run-1-x", override_request("run-1"), REPORTER)
    assert (record.state.value, record.reason) == ("rejected", "untrusted-writer")
    assert promoter.service.load_record("run-1").state.value == "rejected"  # type: ignore[union-attr]


def test_a_key_that_is_not_a_manifest_is_nothing_to_do(promoter: Promoter) -> None:
    assert promoter.deliver("runs/run-1/x.whl") is None
    assert promoter.deliver(STAGING.manifest("gone")) is None
