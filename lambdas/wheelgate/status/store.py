"""Keeps the status site in the staging bucket up to date, safely under concurrent promoters.

The state (``status/state.json``) is read with its ETag, a decision record is folded in by
:func:`wheelgate.status.state.apply_record`, the touched pages are rendered from the new state and
written, and the state is written last with ``If-Match`` (``If-None-Match: *`` when there is
none yet): it is the commit point, through the one conditional read-modify-write loop
(:func:`~wheelgate.storage.conditional.read_modify_write`), as index pages are. Losing that race
means another promoter committed first; we re-read and re-apply, so no decision is lost, and
every writer's last page writes come from a state that includes all committed decisions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from pydantic import ValidationError

from wheelgate.core.layout import STAGING
from wheelgate.core.records import PromotionRecord
from wheelgate.core.redact import Redactor, mask_principals
from wheelgate.index.pages import HTML_CONTENT_TYPE, PAGE_CACHE_CONTROL
from wheelgate.status.state import (
    STATE_KEY,
    StatusState,
    apply_record,
    page_key,
    parse_state,
    run_kind,
)
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.conditional import (
    MAX_ATTEMPTS,
    Put,
    Rendered,
    StateUpdate,
    read_modify_write,
)

STATE_CONTENT_TYPE = "application/json"


class StatusStore:
    """The status pages and their state in one bucket (staging; the nightly distribution
    serves them at ``/status/``). The overview shows each of ``indexes`` (the promoter's
    allowed index directories), promoted to or not; the pages link ``dashboard_url`` (the
    metrics dashboard) when it is given, and each directory's run history under
    ``history_base_url`` (the staging index's base URL, which serves ``history/<dir>/``) when
    that is given."""

    def __init__(
        self,
        bucket: Bucket,
        *,
        indexes: Iterable[str] = (),
        dashboard_url: str | None = None,
        history_base_url: str | None = None,
        max_attempts: int = MAX_ATTEMPTS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.bucket = bucket
        self.indexes = sorted(indexes)
        self.dashboard_url = dashboard_url
        self.history_base_url = history_base_url
        self._max_attempts = max_attempts
        self._sleep = sleep

    def read(self) -> tuple[StatusState, str | None]:
        """The current state (empty if none, or if it cannot be read) and its ETag, each
        principal in it masked (:func:`~wheelgate.core.redact.mask_principals`: a state written
        before that rule shows as it would now)."""
        found = self.bucket.get(STATE_KEY)
        if found is None:
            return StatusState(), None
        body, etag = found
        try:
            return parse_state(mask_principals(body.decode("utf-8", "replace"))), etag
        except ValidationError:
            # A damaged state is replaced rather than blocking every later update.
            return StatusState(), etag

    def _shown(self, record: PromotionRecord) -> list[PromotionRecord]:
        """The records ``record``'s decision is shown by: an override request's decision is
        its target run's promotion, so the target's record comes first (when the request names
        it, and it is there), then the request's own."""
        target = (record.override or {}).get("target")
        if run_kind(record.run_id) != "override" or not target:
            return [record]
        found = self.bucket.get(STAGING.record(target))
        if found is None:
            return [record]
        return [PromotionRecord.model_validate_json(found[0]), record]

    def update(self, record: PromotionRecord, *, run: PromotionRecord | None = None) -> list[str]:
        """Fold ``record``'s latest decision into the state and rewrite the pages it touches
        (an override request's with its target run's: ``run`` when the caller holds it, else
        read, :meth:`_shown`).

        Returns the keys written (none when the decision was already shown). Raises
        :class:`TransientError` when the state keeps changing under us, and the storage
        adapter's errors.
        """
        # The site is public: mask credential-shaped strings exactly as the record was saved,
        # and principals as every output shows them.
        shown = [
            PromotionRecord.model_validate_json(mask_principals(Redactor()(r.to_json())))
            for r in ([run, record] if run is not None else self._shown(record))
        ]
        link = self.dashboard_url
        # Directory pages an attempt that lost wrote from its state: written again.
        rendered: list[str] = []

        def decide(current: StatusState) -> StateUpdate[list[str]]:
            new = current
            for each in shown:
                new = apply_record(new, each)
            touched = [
                index
                for index, status in new.directories.items()
                if status != current.directories.get(index) or index in rendered
            ]
            keys = [page_key(), *(page_key(index) for index in touched), STATE_KEY]
            return StateUpdate(keys, new != current, lambda: render(new, touched))

        def render(new: StatusState, touched: list[str]) -> Rendered:
            # Imported here: the pages need Jinja2, which only the promoter has (its extra and
            # layer); `wheelgate runs` reads the state with the base install.
            from wheelgate.status.pages import render_directory, render_overview

            rendered.extend(index for index in touched if index not in rendered)
            links = {"dashboard_url": link, "history_base_url": self.history_base_url}
            pages = {page_key(): render_overview(new, indexes=self.indexes, **links)}
            pages.update(
                {page_key(index): render_directory(new, index, **links) for index in touched}
            )
            return Rendered(
                state=Put(
                    STATE_KEY,
                    new.to_json().encode(),
                    content_type=STATE_CONTENT_TYPE,
                    cache_control=PAGE_CACHE_CONTROL,
                ),
                derived=[
                    Put(
                        key,
                        html.encode(),
                        content_type=HTML_CONTENT_TYPE,
                        cache_control=PAGE_CACHE_CONTROL,
                    )
                    for key, html in pages.items()
                ],
            )

        outcome = read_modify_write(
            self.bucket, self.read, decide, max_attempts=self._max_attempts, sleep=self._sleep
        )
        return outcome.result if outcome.written else []
