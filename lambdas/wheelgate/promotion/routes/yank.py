"""The yank route: a yank or unyank request (``manifests/yank-*.json``) applied to nightly.

A request travels as a manifest does, so it reaches this route only after the service's writer
check (the reporter role, as for a run's manifest: :mod:`~wheelgate.promotion.writers`). The
request is parsed, the released file's yank state (PEP 592) set on its nightly pages through
the :class:`~wheelgate.promotion.publish.Publisher` (nothing is deleted; a file nightly never
released is a rejection), under the index directory's lease as a promotion holds it (a busy
directory is a transient error: the request is retried), the changed pages invalidated, and the
request's record written last.
"""

from __future__ import annotations

from wheelgate.core.records import PromotionRecord, RecordEntry, State
from wheelgate.index.pages import upload_time
from wheelgate.index.yank import parse_yank
from wheelgate.promotion.decisions import Decided
from wheelgate.promotion.event import Request
from wheelgate.promotion.lease import IndexLeases
from wheelgate.promotion.publish import Publisher
from wheelgate.promotion.recorder import RecordStore


class YankRoute:
    """Applies yank and unyank requests to the nightly pages and records each one."""

    def __init__(
        self,
        *,
        publisher: Publisher,
        records: RecordStore,
        leases: IndexLeases,
    ) -> None:
        self.publisher = publisher
        self.leases = leases
        self.records = records

    def decide(self, request: Request) -> Decided:
        """Set the yank state ``request`` asks for on its released file's nightly pages.

        Returns the request's record, saved. Raises
        :class:`~wheelgate.core.errors.PromotionRejected` for a request that is invalid or
        names a file nightly never released (the service records the rejection), and
        :class:`~wheelgate.promotion.lease.LeaseBusy` while another promotion or request holds
        the directory's lease.
        """
        yank = parse_yank(request.raw, expected_run_id=request.run_id)
        at = request.at
        with self.leases.hold([yank.index], run_id=request.run_id):
            nightly = self.publisher.yank(yank, at=at)
        invalidations = self.publisher.invalidate(nightly)
        verb = "yanked" if yank.yanked else "unyanked"
        message = f"{verb} {yank.filename} in {yank.index}" + (
            f" (reason: {yank.reason})" if yank.reason else ""
        )
        decision = RecordEntry(
            at=upload_time(at),
            state=State.PROMOTED,
            message=message,
            manifest_sha256=request.digest,
            actor=request.actor,
        )
        record = PromotionRecord.of(request.existing, yank.run_id).following(
            decision, pages=nightly.keys, invalidations=invalidations
        )
        return Decided(self.records.save(record))
