"""Each route returns what it decided (no route calls back into the service), and the one
writer check fails closed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.unit.promotion_world import (
    BREAK_GLASS,
    BREAK_GLASS_ID,
    INDEX,
    REPORTER,
    REPORTER_ID,
    SOURCE,
    Promoter,
    settings,
)
from wheelgate.core.errors import PromotionRejected
from wheelgate.core.import_rules import new_import_request
from wheelgate.core.override import SCHEMA_OVERRIDE_V1
from wheelgate.promotion import decisions
from wheelgate.promotion.decisions import Decided, Imported, Override, Promote
from wheelgate.promotion.writers import check_writer


@pytest.fixture
def promoter(tmp_path: Path) -> Promoter:
    return Promoter(tmp_path)


def test_the_run_route_returns_a_tested_promotion(promoter: Promoter) -> None:
    manifest = promoter.stage("run-1", promoter.wheel())
    decision = promoter.service.runs.decide(promoter.request("run-1", manifest))
    assert isinstance(decision, Promote)
    assert decision.mode == decisions.Tested()
    assert decision.manifest.run_id == "run-1"
    assert promoter.in_nightly() == []


def test_the_run_route_refuses_a_test_url_off_the_configured_hosts(promoter: Promoter) -> None:
    manifest = promoter.stage("run-1", promoter.wheel())
    manifest["sets"][0]["tests"][0]["url"] = "https://evil.example/run"
    with pytest.raises(PromotionRejected) as refused:
        promoter.service.runs.decide(promoter.request("run-1", manifest))
    assert refused.value.reason.value == "invalid-manifest"


def test_the_override_route_returns_the_target_to_promote_in_override_mode(
    promoter: Promoter,
) -> None:
    manifest = promoter.stage("run-1", promoter.wheel())
    manifest["sets"][0]["tests"][0]["result"] = "failed"
    promoter.report("run-1", manifest)
    request = promoter.request(
        "override-run-1-x",
        {
            "schema": SCHEMA_OVERRIDE_V1,
            "run_id": "override-run-1-x",
            "target_run_id": "run-1",
            "reason": "the failure is a known flake",
        },
        actor=BREAK_GLASS,
    )
    decision = promoter.service.overrides.decide(request)
    assert isinstance(decision, Promote)
    assert decision.manifest.run_id == "run-1"
    assert decision.mode == Override(BREAK_GLASS, "the failure is a known flake", request.run_id)
    assert decision.existing is not None
    assert decision.existing.state.value == "rejected"


def test_the_override_route_refuses_a_run_that_was_not_rejected(promoter: Promoter) -> None:
    promoter.report("run-1", promoter.stage("run-1", promoter.wheel()))
    request = promoter.request(
        "override-run-1-x",
        {
            "schema": SCHEMA_OVERRIDE_V1,
            "run_id": "override-run-1-x",
            "target_run_id": "run-1",
            "reason": "the failure is a known flake",
        },
        actor=BREAK_GLASS,
    )
    with pytest.raises(PromotionRejected, match="only a rejected run can be overridden"):
        promoter.service.overrides.decide(request)


def import_request(promoter: Promoter) -> tuple[str, dict[str, object]]:
    source = promoter.world.bucket(SOURCE.bucket)
    wheel = promoter.wheel("imported", "3.0")
    source.put(SOURCE.prefix + wheel.name, wheel.read_bytes(), content_type="x")
    wanted = new_import_request(SOURCE.uri, INDEX, None, now=datetime(2026, 1, 1, tzinfo=UTC))
    return wanted.run_id, wanted.model_dump(mode="json", by_alias=True)


def test_the_import_route_gathers_and_returns_what_it_kept(promoter: Promoter) -> None:
    run_id, document = import_request(promoter)
    decision = promoter.service.routes["import-"].decide(
        promoter.request(run_id, document, actor=BREAK_GLASS)
    )
    assert isinstance(decision, Promote)
    assert isinstance(decision.mode, Imported)
    assert [f.filename for f in decision.manifest.sets[0].files] == [
        "imported-3.0-py3-none-any.whl"
    ]
    # Gathered into staging, nothing in nightly yet
    assert promoter.in_nightly() == []
    assert decision.existing is not None
    assert decision.existing.state.value == "pending"


def test_an_import_through_the_service_is_promoted_with_its_source(promoter: Promoter) -> None:
    run_id, document = import_request(promoter)
    record = promoter.report(run_id, document, BREAK_GLASS)
    assert record.state.value == "promoted", record.message
    assert record.imported_from == SOURCE.uri
    assert f"{INDEX}/imported-3.0-py3-none-any.whl" in promoter.in_nightly()


def test_an_import_with_nothing_to_keep_is_decided_by_the_route(promoter: Promoter) -> None:
    wanted = new_import_request(SOURCE.uri, INDEX, None, now=datetime(2026, 1, 1, tzinfo=UTC))
    decision = promoter.service.routes["import-"].decide(
        promoter.request(
            wanted.run_id, wanted.model_dump(mode="json", by_alias=True), actor=BREAK_GLASS
        )
    )
    assert isinstance(decision, Decided)
    assert decision.record.history[-1].reason == "import-empty"


WRITERS = [
    # run id, writer, settings, refused?
    ("run-1", REPORTER, {}, False),
    ("run-1", BREAK_GLASS, {}, True),
    ("run-1", None, {}, True),
    ("run-1", f"AWS:{REPORTER_ID}0:x", {}, True),
    ("yank-1", REPORTER, {}, False),
    ("deps-1", REPORTER, {}, True),
    ("deps-1", "AWS:AROADEPS:x", {"trusted_deps_id": "AROADEPS"}, False),
    ("deps-1", "AWS:AROADEPS:x", {"trusted_deps_id": None}, True),
    ("override-run-1-x", BREAK_GLASS, {}, False),
    ("override-run-1-x", REPORTER, {}, True),
    ("override-run-1-x", BREAK_GLASS, {"break_glass_id": None}, True),
    ("import-0123456789abcdef", BREAK_GLASS, {}, False),
    ("import-0123456789abcdef", REPORTER, {}, True),
]


@pytest.mark.parametrize(("run_id", "writer", "overrides", "refused"), WRITERS)
def test_one_writer_check_for_every_kind_fails_closed(
    run_id: str, writer: str | None, overrides: dict[str, str | None], refused: bool
) -> None:
    if not refused:
        check_writer(settings(**overrides), run_id, writer)
        return
    with pytest.raises(PromotionRejected) as rejection:
        check_writer(settings(**overrides), run_id, writer)
    assert rejection.value.reason.value == "untrusted-writer"


def test_the_writer_checks_wording_is_kept() -> None:
    with pytest.raises(PromotionRejected) as refused:
        check_writer(settings(break_glass_id=None), "override-run-1-x", REPORTER)
    assert refused.value.message == (
        f"override requested by {REPORTER}, which is not the break-glass role "
        "(no break-glass role configured)"
    )
    with pytest.raises(PromotionRejected) as refused:
        check_writer(settings(), "import-0123456789abcdef", None)
    assert refused.value.message == (
        "import requested by an unknown principal, not by the break-glass role"
    )
    assert BREAK_GLASS_ID in BREAK_GLASS
