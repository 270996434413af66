"""A run's offer on the local S3: ``wheelgate stage`` records in its history entry the nightly
files its run's index offered (a dependency that lives only in nightly), and the promoter's
fold keeps them, checked against nightly, as the run's offer."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.integration.test_run_history import COMMIT, buckets, service, stage_wheels
from wheelgate.core.layout import NIGHTLY, STAGING
from wheelgate.history.model import InstallRoute, OfferedFile, OfferFile, StagedEntry
from wheelgate.history.reader import BucketHistorySource, read_history
from wheelgate.local.names import LOCAL_REPORTER_PRINCIPAL
from wheelgate.local.sample_wheels import build_wheel, manifest_for
from wheelgate.local.stack import LocalWheelGate
from wheelgate.promotion.event import ManifestEvent


def test_a_stage_entry_offers_a_nightly_dependency_and_the_fold_keeps_it_checked(
    stack: LocalWheelGate, tmp_path: Path
) -> None:
    # Given a dependency promoted to nightly
    index = "offer/one"
    dep = build_wheel(tmp_path / "dep", "offerdep", "1.0")
    stage_wheels(stack, "7001", index, dep)
    staging, _ = buckets()
    key = STAGING.manifest("7001")
    body = json.dumps(manifest_for("7001", COMMIT, index, [dep])).encode()
    staging.put(key, body, content_type="application/json")
    decision = service(stack).handle(ManifestEvent(key, LOCAL_REPORTER_PRINCIPAL))
    record = None if decision is None else decision.record
    assert record is not None
    assert record.state.value == "promoted", record
    dep_sha = hashlib.sha256(dep.read_bytes()).hexdigest()

    # When a run whose wheel requires it is staged, and its entry folded
    pkg = build_wheel(tmp_path / "pkg", "offerpkg", "1.0", requires=["offerdep"])
    stage_wheels(stack, "7002", index, pkg)
    [entry_key] = [
        o.key for o in staging.list(STAGING.history_entry_prefix(index)) if "/7002/" in o.key
    ]
    found = staging.get(entry_key)
    assert found is not None
    entry = StagedEntry.model_validate_json(found[0])
    assert service(stack).handle(ManifestEvent(entry_key)) is None

    # Then the entry offered the dependency, and the run keeps it with its nightly key
    assert entry.offer == (OfferFile(filename=dep.name, sha256=dep_sha),)
    run = {r.run_id: r for r in read_history(BucketHistorySource(staging), index)}["7002"]
    assert run.offer == (
        OfferedFile(
            filename=dep.name,
            project="offerdep",
            sha256=dep_sha,
            nightly_key=NIGHTLY.artifact(index, dep.name),
        ),
    )
    assert run.install is not None
    assert run.install.route is InstallRoute.OFFER
