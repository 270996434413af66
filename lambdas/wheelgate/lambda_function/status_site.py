"""The status site projection: each decision shown on the status pages (:class:`StatusSite`).

The service hands it every :class:`~wheelgate.promotion.decisions.Decision`, a redelivered one
included (the pages converge on the records), after the metrics and the run history. It reads
nothing the decision holds: an override request's target run comes with the decision.
"""

from __future__ import annotations

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit

from wheelgate.core.metrics import METRIC_STATUS_PAGE_ERRORS
from wheelgate.core.settings import PromoterSettings
from wheelgate.promotion.decisions import Decision
from wheelgate.status.store import StatusStore
from wheelgate.storage.bucket import Bucket


class StatusSite:
    """Folds each decision into the status pages of ``store``; a failure adds one
    ``StatusPageErrors`` to ``metrics`` and is raised (the service logs it; the next decision
    rewrites the pages)."""

    def __init__(self, store: StatusStore, metrics: Metrics) -> None:
        self.store = store
        self.metrics = metrics

    @classmethod
    def of(cls, settings: PromoterSettings, staging: Bucket, metrics: Metrics) -> StatusSite:
        """The status site the ``settings`` describe. It lives in ``staging`` (served at the
        nightly domain's ``/status/``): a rejected run must not change a byte of nightly."""
        store = StatusStore(
            staging,
            indexes=settings.allowed_indexes,
            dashboard_url=settings.dashboard_url,
            history_base_url=settings.staging_base_url,
        )
        return cls(store, metrics)

    def project(self, decision: Decision) -> None:
        try:
            self.store.update(decision.record, run=decision.run)
        except Exception:
            self.metrics.add_metric(name=METRIC_STATUS_PAGE_ERRORS, unit=MetricUnit.Count, value=1)
            raise
