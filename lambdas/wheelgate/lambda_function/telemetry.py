"""The promoter function's decision metrics: what each new decision adds to CloudWatch (EMF via
Powertools).

:class:`DecisionMetrics` is the service's first projection
(:class:`~wheelgate.promotion.decisions.Projection`), so a metric counts a decision once, after
it is recorded, never a redelivery of it. The counts (``PromotionsSucceeded``,
``PromotionsRejected``, and ``IntegrityRejections``, the one the stack's alarm watches: a
rejection for one of ``INTEGRITY_REASONS`` or an untrusted write) and the copy and latency
metrics go into the invocation's metric set, which carries only the ``service`` dimension; the
count by reason is written as a metric of its own (``single_metric``) so its ``reason``
dimension never lands on the others.
"""

from __future__ import annotations

from aws_lambda_powertools import Metrics, single_metric
from aws_lambda_powertools.metrics import MetricUnit

from wheelgate.core.errors import is_integrity_reason
from wheelgate.core.metrics import (
    METRIC_BYTES_COPIED,
    METRIC_FILES_COPIED,
    METRIC_INTEGRITY_REJECTIONS,
    METRIC_PROMOTION_LATENCY,
    METRIC_PROMOTIONS_REJECTED,
    METRIC_PROMOTIONS_SUCCEEDED,
    METRIC_REASON_DIMENSION,
    METRIC_REJECTIONS_BY_REASON,
    METRIC_SERVICE_DIMENSION,
    SERVICE_NAME,
)
from wheelgate.core.records import PromotionRecord, State
from wheelgate.promotion.decisions import Decision, DecisionStats, latest_decision

#: The reason dimension of a rejected decision recorded without a reason code.
UNKNOWN_REASON = "unknown"


class DecisionMetrics:
    """Emits the metrics of each new decision into ``metrics`` (flushed by the handler's
    ``log_metrics``); the by-reason count is printed at once as its own EMF document."""

    def __init__(self, metrics: Metrics, *, namespace: str, service: str = SERVICE_NAME) -> None:
        self.metrics = metrics
        self.namespace = namespace
        self.service = service

    def project(self, decision: Decision) -> None:
        """Count a new ``decision``: an untrusted write noted (:meth:`ignored`), else the
        decision on the run (:meth:`decided`). A redelivery counts nothing."""
        if not decision.new:
            return
        if decision.noted:
            self.ignored(decision.record)
        else:
            self.decided(decision.record, decision.stats())

    def decided(self, record: PromotionRecord, stats: DecisionStats) -> None:
        """Count ``record``'s latest decision. A promotion adds one ``PromotionsSucceeded``,
        the files and bytes it copied, and its latency when it published pages; a rejection
        adds one ``PromotionsRejected`` and one ``RejectionsByReason`` with its reason, and
        one ``IntegrityRejections`` when that reason is an integrity reason. A pending entry
        adds nothing. Raises ``ValueError`` for a record with an empty log."""
        decision = latest_decision(record)
        if decision.state is State.PROMOTED:
            self._count(METRIC_PROMOTIONS_SUCCEEDED, 1)
            self._count(METRIC_FILES_COPIED, stats.files_copied)
            self.metrics.add_metric(
                name=METRIC_BYTES_COPIED, unit=MetricUnit.Bytes, value=stats.bytes_copied
            )
            latency = stats.latency_seconds
            if latency is not None:
                self.metrics.add_metric(
                    name=METRIC_PROMOTION_LATENCY, unit=MetricUnit.Seconds, value=latency
                )
        elif decision.state is State.REJECTED:
            self._count(METRIC_PROMOTIONS_REJECTED, 1)
            if is_integrity_reason(decision.reason):
                self._count(METRIC_INTEGRITY_REJECTIONS, 1)
            with single_metric(
                name=METRIC_REJECTIONS_BY_REASON,
                unit=MetricUnit.Count,
                value=1,
                namespace=self.namespace,
                default_dimensions={
                    METRIC_SERVICE_DIMENSION: self.service,
                    METRIC_REASON_DIMENSION: decision.reason or UNKNOWN_REASON,
                },
            ):
                pass

    def ignored(self, record: PromotionRecord) -> None:
        """Count an untrusted write, noted without deciding the run: one
        ``IntegrityRejections`` (someone wrote a manifest who may not)."""
        self._count(METRIC_INTEGRITY_REJECTIONS, 1)

    def _count(self, name: str, value: int) -> None:
        self.metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
