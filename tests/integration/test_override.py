"""Break-glass overrides: only the break-glass role, only rejected runs, integrity still checked."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_promoter import (
    Run,
    deliver,
    nightly_versions,
    wheel,
)
from wheelgate.core.env_names import ENV_BREAK_GLASS_ID
from wheelgate.core.override import new_request_id
from wheelgate.lambda_function import handler
from wheelgate.local.names import LOCAL_REPORTER_PRINCIPAL
from wheelgate.storage.bucket import Bucket

BREAK_GLASS_ID = "AROABREAKGLASS000001"
BREAK_GLASS = f"AWS:{BREAK_GLASS_ID}:oncall"


@pytest.fixture(autouse=True)
def _break_glass_configured(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(ENV_BREAK_GLASS_ID, BREAK_GLASS_ID)
    handler.promoter.cache_clear()
    yield
    handler.promoter.cache_clear()


@pytest.fixture
def run(buckets: tuple[Bucket, Bucket], tmp_path: Path, request: pytest.FixtureRequest) -> Run:
    name = "ov-" + request.node.name.replace("_", "-")[-50:].strip("-")
    return Run(buckets, tmp_path, name, f"ov/{name[-40:]}")


def put_override(run: Run, reason: str = "GPU runners down; verified by hand") -> str:
    """Write a break-glass override request for ``run``; return the request's id."""
    request_id = new_request_id(run.run_id)
    body = {
        "schema": "wheelgate/override/v1",
        "run_id": request_id,
        "target_run_id": run.run_id,
        "reason": reason,
    }
    key = f"manifests/{request_id}.json"
    run.staging.put(key, json.dumps(body).encode(), content_type="application/json")
    return request_id


def override(
    run: Run, principal: str, reason: str = "GPU runners down; verified by hand"
) -> dict[str, Any]:
    request_id = put_override(run, reason)
    assert deliver(f"manifests/{request_id}.json", principal) == {"batchItemFailures": []}
    found = run.staging.get(f"records/{request_id}.json")
    assert found is not None
    return json.loads(found[0])


def target_record(run: Run) -> dict[str, Any]:
    found = run.staging.get(f"records/{run.run_id}.json")
    assert found is not None
    return json.loads(found[0])


def rejected_run(run: Run) -> None:
    run.stage(wheel(run.tmp))
    assert run.report(run.manifest(result="failed"))["reason"] == "tests-failed"


def test_only_the_break_glass_role_can_override(run: Run, s3: Any) -> None:
    rejected_run(run)
    before = nightly_versions(s3)
    request = override(run, LOCAL_REPORTER_PRINCIPAL)
    assert (request["state"], request["reason"]) == ("rejected", "untrusted-writer")
    assert target_record(run)["state"] == "rejected"
    assert nightly_versions(s3) == before


def test_break_glass_override_promotes_and_records_who_and_why(run: Run, s3: Any) -> None:
    rejected_run(run)
    request = override(run, BREAK_GLASS)
    assert request["state"] == "promoted", request
    record = target_record(run)
    assert record["state"] == "promoted"
    assert record["override"]["by"] == BREAK_GLASS
    assert record["override"]["reason"] == "GPU runners down; verified by hand"
    assert [h["state"] for h in record["history"]] == ["rejected", "promoted"]
    assert run.nightly.head(f"{run.index}/{run.files[0].name}") is not None


def test_a_promoted_run_cannot_be_overridden(run: Run) -> None:
    run.stage(wheel(run.tmp))
    assert run.report(run.manifest())["state"] == "promoted"
    request = override(run, BREAK_GLASS)
    assert request["reason"] == "override-not-applicable"


def test_override_still_checks_integrity(run: Run, s3: Any) -> None:
    rejected_run(run)
    key = f"runs/{run.run_id}/{run.index}/{run.files[0].name}"
    data = bytearray(run.files[0].read_bytes())
    data[len(data) // 2] ^= 0xFF
    s3.put_object(
        Bucket=run.staging.name,
        Key=key,
        Body=bytes(data),
        ChecksumAlgorithm="SHA256",
        Metadata={"wheelgate-commit": "4" * 40},
    )
    before = nightly_versions(s3)
    request = override(run, BREAK_GLASS)
    assert (request["state"], request["reason"]) == ("rejected", "checksum-mismatch")
    assert target_record(run)["state"] == "rejected"
    assert nightly_versions(s3) == before


def test_override_without_a_reason_is_refused(run: Run) -> None:
    rejected_run(run)
    assert override(run, BREAK_GLASS, reason="because")["reason"] == "invalid-manifest"


def test_override_skips_the_evidence_rule_and_the_record_says_so(run: Run) -> None:
    # Given a run reported with a v1 manifest (no install evidence), rejected for it
    run.stage(wheel(run.tmp))
    manifest = run.manifest()
    manifest["schema"] = "wheelgate/manifest/v1"
    del manifest["sets"][0]["tests"][0]["installed"]
    assert run.report(manifest)["reason"] == "evidence-missing"
    # When the break-glass role overrides it
    assert override(run, BREAK_GLASS)["state"] == "promoted"
    # Then it is released, and its file names no test it shipped on
    [released] = target_record(run)["sets"][0]["files"]
    assert (released["filename"], released["evidence"]) == (run.files[0].name, [])
