"""Fetching the next candidates' files while a step's command runs.

Whatever the command concludes, the next probe is one of two candidates: the one after a good
verdict, the one after a bad. Their files are fetched in one background thread, and no other
(a skip makes the search probe a neighbour, which it fetches when it gets there). The step
waits for the thread before it ends, so two fetches never run at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from wheelgate.bisect.run_installer import RunInstaller, SkipRun
from wheelgate.bisect.search import Bisection, Verdict
from wheelgate.history.model import HistoryRun

_log = logging.getLogger(__name__)


def next_possible(bisection: Bisection, probe: int) -> list[int]:
    """The candidates the search probes after ``probe``, if it is good and if it is bad."""
    found: list[int] = []
    for verdict in (Verdict.GOOD, Verdict.BAD):
        after = bisection.with_verdict(probe, verdict).next_probe()
        if after is not None and after not in found:
            found.append(after)
    return found


class Prefetch:
    """A background fetch of some candidates' files; :meth:`wait` for it to end."""

    def __init__(
        self, installer: RunInstaller, runs: Sequence[HistoryRun], *, as_test: str | None = None
    ) -> None:
        self._installer = installer
        self._runs = tuple(runs)
        self._as_test = as_test
        self.downloaded = 0
        self._thread = threading.Thread(target=self._fetch, name="bisect-prefetch", daemon=True)
        self._thread.start()

    def _fetch(self) -> None:
        for run in self._runs:
            try:
                self.downloaded += self._installer.fetch(
                    self._installer.plan(run, as_test=self._as_test)
                )
            except SkipRun:
                continue  # the step that probes it skips it, saying why
            except Exception:
                # A prefetch is only a head start: the step fetches again and reports.
                _log.debug("prefetching run %s failed", run.run_id, exc_info=True)

    def wait(self) -> None:
        self._thread.join()
