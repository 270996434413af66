"""The promoter's CloudWatch metrics: their namespace, names and dimensions, which the
promoter emits and the stack's alarms and dashboard select on."""

from __future__ import annotations

#: Powertools service name of the promoter; Powertools adds it as the ``service`` metric
#: dimension, so the stack's alarms must use the same value.
SERVICE_NAME = "wheelgate-promoter"
#: The name of that dimension (Powertools' own; the alarms and the dashboard select on it).
METRIC_SERVICE_DIMENSION = "service"
#: CloudWatch namespace and metric names the promoter emits and the stack alarms on.
METRICS_NAMESPACE = "WheelGate"
METRIC_PROMOTIONS_REJECTED = "PromotionsRejected"
METRIC_PROMOTIONS_SUCCEEDED = "PromotionsSucceeded"
#: A promotion attempt that raised; the message is retried (partial batch response), so the
#: Lambda ``Errors`` metric does not see it.
METRIC_PROMOTION_ERRORS = "PromotionErrors"
#: Seconds from the manifest's write (its S3 event time) to the run's pages being published.
METRIC_PROMOTION_LATENCY = "PromotionLatency"
#: Files and bytes a promotion copied into nightly (files nightly already held not counted).
METRIC_FILES_COPIED = "FilesCopied"
METRIC_BYTES_COPIED = "BytesCopied"
#: One count per rejected run, with the reason code as a dimension of its own (the metrics
#: above carry only the service dimension, which the alarms rely on).
METRIC_REJECTIONS_BY_REASON = "RejectionsByReason"
METRIC_REASON_DIMENSION = "reason"
#: A manifest refused for an integrity reason (``wheelgate.core.errors.INTEGRITY_REASONS``): a
#: rejection with one of them, or a write by a writer not trusted for it (noted, not decided).
#: The one rejection metric that pages; ``tests-failed`` and the like are routine.
METRIC_INTEGRITY_REJECTIONS = "IntegrityRejections"
#: A promotion that found its index directory leased (retried soon; no alarm watches it).
METRIC_INDEX_BUSY = "IndexBusy"
#: A message whose body is not an S3 event (retried, then dead-lettered).
METRIC_POISON_MESSAGES = "PoisonMessages"
#: A decision the status page could not be updated with (best effort; never retried).
METRIC_STATUS_PAGE_ERRORS = "StatusPageErrors"
#: A message or fan-out step the promoter could not take because its settings are missing or
#: bad (failed, so nothing is released; retried, then dead-lettered). Alarmed.
METRIC_SETTINGS_ERRORS = "SettingsErrors"
#: Every metric the promoter emits, in the namespace above.
METRIC_NAMES = (
    METRIC_PROMOTIONS_SUCCEEDED,
    METRIC_PROMOTIONS_REJECTED,
    METRIC_REJECTIONS_BY_REASON,
    METRIC_INTEGRITY_REJECTIONS,
    METRIC_FILES_COPIED,
    METRIC_BYTES_COPIED,
    METRIC_PROMOTION_LATENCY,
    METRIC_PROMOTION_ERRORS,
    METRIC_INDEX_BUSY,
    METRIC_POISON_MESSAGES,
    METRIC_STATUS_PAGE_ERRORS,
    METRIC_SETTINGS_ERRORS,
)
