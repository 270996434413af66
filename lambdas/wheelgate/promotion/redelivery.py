"""The redelivery guard: what an at-least-once delivery of the same bytes must not redo.

SQS delivers a message at least once, and a manifest's event may come again while its first
delivery's work is under way. The same bytes decided already are not decided again
(:meth:`Redelivery.decided`); an untrusted write noted already is not noted again
(:meth:`Redelivery.noted`); and while a fan-out execution of the same bytes runs, a delivery
starts no second promotion: it makes sure of the job's start once more and decides nothing
new (:meth:`Redelivery.resume`).
"""

from __future__ import annotations

from datetime import datetime

from wheelgate.core.records import PromotionRecord, State
from wheelgate.promotion.fanout.jobs import FanoutJobs


class Redelivery:
    """The guard over ``fanout``'s jobs (``None``: no fan-out, no job ever runs)."""

    def __init__(self, fanout: FanoutJobs | None) -> None:
        self.fanout = fanout

    @staticmethod
    def decided(existing: PromotionRecord | None, digest: str) -> bool:
        """Whether the bytes with SHA-256 ``digest`` were decided already (a pending note of an
        untrusted write decides nothing)."""
        return existing is not None and digest in {
            h.manifest_sha256 for h in existing.history if h.state is not State.PENDING
        }

    @staticmethod
    def noted(
        existing: PromotionRecord | None, digest: str, actor: str | None, reason: str
    ) -> bool:
        """Whether this very write (bytes, writer, refusal) was noted already."""
        return existing is not None and any(
            h.manifest_sha256 == digest and h.actor == actor and h.reason == reason
            for h in existing.history
        )

    def running(self, run_id: str, digest: str) -> bool:
        """Whether a fan-out execution promoting ``run_id`` from these bytes still runs."""
        return self.fanout is not None and self.fanout.running(run_id, digest) is not None

    def resume(
        self, run_id: str, digest: str, existing: PromotionRecord | None, *, at: datetime
    ) -> PromotionRecord | None:
        """The run's record when a fan-out execution of these bytes still runs (its leases,
        pending entry, noted ``at``, and start made sure of once more), else ``None``: go
        on."""
        if self.fanout is None:
            return None
        job = self.fanout.running(run_id, digest)
        return None if job is None else self.fanout.launch(job, existing, at=at)
