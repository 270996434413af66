"""The break-glass route: an override request (``manifests/override-*.json``) applied to the
rejected run it names.

A request reaches this route only when S3 says the break-glass role wrote it (the service's
writer check, before the request is parsed), and applies only to a run that was rejected (or
whose fan-out promotion started by this very request is still running). It skips the tests, and
with them the evidence rule, and nothing else: the route returns the target run to promote in
override mode, and the service's flow verifies every set before the first copy, every copy
before any page changes, and writes the target's record last. The request's own record, naming
who and why, is written after the target's (:meth:`OverrideRoute.settle`).
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.layout import STAGING
from wheelgate.core.manifest import parse_manifest
from wheelgate.core.override import parse_override
from wheelgate.core.records import PromotionRecord, State
from wheelgate.promotion.decisions import Override, Promote
from wheelgate.promotion.event import Request
from wheelgate.promotion.recorder import RecordStore
from wheelgate.promotion.redelivery import Redelivery
from wheelgate.storage.bucket import Bucket


class OverrideRoute:
    """Decides break-glass override requests, and records each one once its target's
    promotion is decided. ``redelivery`` tells whether the target's fan-out promotion is
    still running."""

    def __init__(
        self,
        *,
        staging: Bucket,
        records: RecordStore,
        redelivery: Redelivery,
    ) -> None:
        self.staging = staging
        self.records = records
        self.redelivery = redelivery

    def decide(self, request: Request) -> Promote:
        """The target run of the override ``request`` to promote in override mode.

        Raises :class:`~wheelgate.core.errors.PromotionRejected` for an invalid request, or a
        target that has no manifest or decision yet, or is not rejected.
        """
        override = parse_override(request.raw, expected_run_id=request.run_id)
        target = override.target_run_id
        found = self.staging.get(STAGING.manifest(target))
        target_record = self.records.load(target)
        if found is None or target_record is None:
            raise PromotionRejected(
                Reason.OVERRIDE_NOT_APPLICABLE,
                f"run {target} has no manifest or no decision yet; nothing to override",
            )
        target_raw = found[0]
        target_digest = hashlib.sha256(target_raw).hexdigest()
        # A redelivered request whose fan-out promotion is still running applies again
        # (it changes nothing): the target is pending only because of that request.
        running = self.redelivery.running(target, target_digest)
        if target_record.state is not State.REJECTED and not running:
            raise PromotionRejected(
                Reason.OVERRIDE_NOT_APPLICABLE,
                f"run {target} is {target_record.state.value}; only a rejected run can be "
                "overridden",
            )
        manifest = parse_manifest(target_raw, expected_run_id=target)
        mode = Override(by=request.actor or "", reason=override.reason, request=request.run_id)
        return Promote(manifest, target_digest, target_record, mode)

    def settle(
        self, request: Request, override: Override, target: PromotionRecord, *, at: datetime
    ) -> PromotionRecord:
        """Record the override ``request`` (decided ``at``) after its ``target`` run's record
        was written: its ``override`` names the target too, whose record the status site
        shows."""
        overridden = PromotionRecord.of(request.existing, request.run_id).overridden(
            target,
            override=override.as_record(),
            at=at,
            manifest_sha256=request.digest,
            actor=request.actor,
        )
        return self.records.save(overridden)
