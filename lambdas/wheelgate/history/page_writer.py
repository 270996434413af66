"""Writing an index directory's history page to staging after its history changed.

The history's writer calls a :class:`HistoryPageWriter` with the directory's runs after each
change it commits; the page is derived from them alone, so rewriting it whole is always right
and a lost write is repaired by the next one.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from pydantic import ValidationError

from wheelgate.core.layout import STAGING
from wheelgate.core.timestamps import utc_now
from wheelgate.history.model import HistoryHead, HistoryRun
from wheelgate.history.page import months_of, render_history_page
from wheelgate.index.pages import HTML_CONTENT_TYPE, PAGE_CACHE_CONTROL
from wheelgate.storage.bucket import Bucket


class HistoryPageWriter:
    """Renders and PUTs ``history/<index>/index.html`` into ``bucket`` (staging).

    ``nightly_base_url`` is where promoted files are linked; ``repository_url`` (http or https)
    links commits; ``clock`` (default: the time now) says when "now" is, which decides what
    has expired.
    """

    def __init__(
        self,
        bucket: Bucket,
        *,
        nightly_base_url: str,
        repository_url: str | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.bucket = bucket
        self.nightly_base_url = nightly_base_url
        self.repository_url = repository_url
        self.clock = clock

    def __call__(self, index: str, runs: list[HistoryRun]) -> None:
        """Write the page of ``index`` listing ``runs`` (all of the directory's history: the
        page links a month shard for each month they were staged in). Raises
        :class:`~wheelgate.core.layout.LayoutError` for an invalid ``index`` and what
        :meth:`~wheelgate.storage.bucket.Bucket.put` raises."""
        # The head names every month, also those older than the runs given.
        found = self.bucket.get(STAGING.history_head(index))
        head = None
        if found is not None:
            try:
                head = HistoryHead.model_validate_json(found[0])
            except ValidationError:
                head = None  # a damaged head: the months of the runs given are linked
        html = render_history_page(
            runs,
            index=index,
            nightly_base_url=self.nightly_base_url,
            now=self.clock(),
            repository_url=self.repository_url,
            months=head.months if head is not None else months_of(runs),
        )
        self.bucket.put(
            STAGING.history_page(index),
            html.encode("utf-8"),
            content_type=HTML_CONTENT_TYPE,
            cache_control=PAGE_CACHE_CONTROL,
        )
