"""The route of a run's manifest (``manifests/<run>.json``): checked, then promoted as tested.

The service routes a manifest here after its writer check. The manifest must be valid, its test
URLs on the configured hosts, and its run not promoted already from other bytes (a promoted run
is never changed); then the service's flow promotes it, its tests deciding which sets.
"""

from __future__ import annotations

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.manifest import manifest_test_url_problems, parse_manifest
from wheelgate.core.records import State
from wheelgate.core.settings import PromoterSettings
from wheelgate.promotion.decisions import Promote, Tested
from wheelgate.promotion.event import Request


class RunRoute:
    """Decides what to do with a run's manifest, by the ``settings``' test URL hosts."""

    def __init__(self, *, settings: PromoterSettings) -> None:
        self.settings = settings

    def decide(self, request: Request) -> Promote:
        """The run of ``request`` to promote as tested.

        Raises :class:`~wheelgate.core.errors.PromotionRejected` for an invalid manifest, a
        test URL off the configured hosts, or a run promoted already from other bytes
        (``replay-conflict``).
        """
        manifest = parse_manifest(request.raw, expected_run_id=request.run_id)
        off_host = manifest_test_url_problems(manifest, self.settings.test_url_hosts)
        if off_host:
            raise PromotionRejected(
                Reason.INVALID_MANIFEST, f"manifest is invalid: {'; '.join(off_host)}"
            )
        existing = request.existing
        if existing is not None and existing.state is State.PROMOTED:
            raise PromotionRejected(
                Reason.REPLAY_CONFLICT,
                f"run {request.run_id} was already promoted from another manifest "
                f"(sha256 {existing.manifest_sha256}); a promoted run is never changed",
            )
        return Promote(manifest, request.digest, existing, Tested())
