"""A promotion service over in-memory buckets (``memory_bucket.py``), and the steps of its
stories: stage a wheel, write a manifest or request, hand its event to the service."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.unit.memory_bucket import MemoryBucket, World
from wheelgate.core.import_sources import ImportSource
from wheelgate.core.layout import STAGING
from wheelgate.core.objects import META_COMMIT, META_RUN_ID
from wheelgate.core.records import PromotionRecord
from wheelgate.core.settings import PromoterSettings
from wheelgate.local.sample_wheels import build_wheel, manifest_for
from wheelgate.promotion.compose import build_service
from wheelgate.promotion.decisions import Decision, Projection
from wheelgate.promotion.event import ManifestEvent, Request
from wheelgate.promotion.service import PromotionService
from wheelgate.storage.limits import TransferLimits

REPORTER_ID = "AROAREPORTER00000001"
REPORTER = f"AWS:{REPORTER_ID}:report"
BREAK_GLASS_ID = "AROABREAKGLASS000001"
BREAK_GLASS = f"AWS:{BREAK_GLASS_ID}:oncall"
INTRUDER = "AWS:AROAINTRUDER0000001:x"
COMMIT = "c" * 40
INDEX = "v2/unit"
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
SOURCE = ImportSource(bucket="elsewhere", prefix="wheels/")


def settings(**overrides: Any) -> PromoterSettings:
    values: dict[str, Any] = {
        "staging_bucket": "staging",
        "nightly_bucket": "nightly",
        "nightly_base_url": "https://nightly.example/",
        "trusted_reporter_id": REPORTER_ID,
        "allowed_indexes": frozenset({INDEX}),
        "verdict_key_arn": "arn:aws:kms:us-east-1:123456789012:key/verdicts",
        "break_glass_id": BREAK_GLASS_ID,
        "import_sources": (SOURCE,),
        **overrides,
    }
    return PromoterSettings(**values)


@dataclass
class Heard:
    """An observer that keeps what it is told."""

    decided: list[PromotionRecord] = field(default_factory=list)
    ignored: list[PromotionRecord] = field(default_factory=list)


class _Observer:
    def __init__(self, heard: Heard) -> None:
        self.heard = heard

    def project(self, decision: Decision) -> None:
        if not decision.new:
            return
        heard = self.heard.ignored if decision.noted else self.heard.decided
        heard.append(decision.record)


class Promoter:
    """The service over one in-memory world, with the steps of a story."""

    def __init__(
        self,
        tmp: Path,
        *,
        metrics: Projection | None = None,
        status_site: Projection | None = None,
        **overrides: Any,
    ) -> None:
        self.tmp = tmp
        self.world = World(limits=TransferLimits(workers=2))
        self.staging: MemoryBucket = self.world.bucket("staging")
        self.nightly: MemoryBucket = self.world.bucket("nightly")
        self.heard = Heard()
        self.service: PromotionService = build_service(
            settings=settings(**overrides),
            staging=self.staging,  # type: ignore[arg-type]
            nightly=self.nightly,  # type: ignore[arg-type]
            clock=lambda: NOW,
            metrics=metrics or _Observer(self.heard),
            status_site=status_site,
        )

    def wheel(self, name: str = "pkg", version: str = "1.0") -> Path:
        return build_wheel(self.tmp / name / version, name, version)

    def stage(self, run_id: str, *wheels: Path) -> dict[str, Any]:
        """Stage ``wheels`` for ``run_id`` and return their passed manifest."""
        for wheel in wheels:
            key = STAGING.artifact(run_id, INDEX, wheel.name)
            self.staging.put(
                key,
                wheel.read_bytes(),
                content_type="application/octet-stream",
                metadata={META_COMMIT: COMMIT, META_RUN_ID: run_id},
            )
        return manifest_for(run_id, COMMIT, INDEX, list(wheels))

    def write(self, run_id: str, document: dict[str, Any] | bytes) -> str:
        body = document if isinstance(document, bytes) else json.dumps(document).encode()
        key = STAGING.manifest(run_id)
        self.staging.put(key, body, content_type="application/json")
        return key

    def deliver(self, key: str, principal: str | None = REPORTER) -> PromotionRecord | None:
        decision = self.service.handle(ManifestEvent(key, principal, event_time=NOW))
        return None if decision is None else decision.record

    def report(
        self, run_id: str, document: dict[str, Any] | bytes, principal: str | None = REPORTER
    ) -> PromotionRecord:
        record = self.deliver(self.write(run_id, document), principal)
        assert record is not None
        return record

    def request(self, run_id: str, document: dict[str, Any], actor: str = REPORTER) -> Request:
        """The :class:`Request` a route is handed for ``document`` written under ``run_id``."""
        raw = json.dumps(document).encode()
        self.write(run_id, raw)
        return Request(
            run_id=run_id,
            raw=raw,
            digest=hashlib.sha256(raw).hexdigest(),
            actor=actor,
            existing=self.service.load_record(run_id),
            event=ManifestEvent(STAGING.manifest(run_id), actor),
            at=NOW,
        )

    def in_nightly(self) -> list[str]:
        return sorted(self.nightly.objects)
