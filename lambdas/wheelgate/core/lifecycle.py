"""When staged objects expire, and how long a run may still be staged into.

Staging's lifecycle rules expire every object under ``runs/`` ``staging_run_expiry_days`` after
it was written, and a run's index pages (tagged, see ``core.layout.RUN_PAGE_TAG_KEY``) after
``staging_run_page_expiry_days``. A page is rewritten each time a job of the run stages files,
so it is younger than the files it lists; ``wheelgate stage`` therefore refuses to write a run's
pages once the run's first object is older than the window
(:func:`wheelgate.core.settings.run_stage_window_days`). Then every page expires before any file
it lists (tests/unit/test_lifecycle.py shows the arithmetic).
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta


class StageWindowClosed(ValueError):
    """The run's first object was staged longer ago than the staging window: a page written now
    could outlive the files it lists."""


def lifecycle_expiry(written: datetime, days: int) -> datetime:
    """When S3 expires an object written at ``written`` under a rule of ``days`` days: the
    write time plus the days, rounded up to the next midnight UTC (S3 User Guide, "Lifecycle
    configuration elements", Days). ``written`` must be timezone-aware."""
    due = (written + timedelta(days=days)).astimezone(UTC)
    midnight = datetime.combine(due.date(), time(0), tzinfo=UTC)
    return midnight if due == midnight else midnight + timedelta(days=1)


def stage_deadline(first_staged: datetime, window_days: int) -> datetime:
    """The last moment a run whose first object was written at ``first_staged`` may be staged
    into (its pages written)."""
    return first_staged + timedelta(days=window_days)


def check_stage_window(
    run_id: str, first_staged: datetime | None, now: datetime, window_days: int
) -> None:
    """Return if a run's pages may be written at ``now``: nothing is staged for it yet
    (``first_staged`` is ``None``), or its first object is at most ``window_days`` old.

    Raises :class:`StageWindowClosed` naming the run, when it was first staged and the deadline.
    """
    if first_staged is None:
        return
    deadline = stage_deadline(first_staged, window_days)
    if now > deadline:
        raise StageWindowClosed(
            f"run {run_id} was first staged at {first_staged.isoformat()}, more than "
            f"{window_days} day(s) ago (until {deadline.isoformat()}): its index pages would "
            "outlive the files it lists, which expire first; stage under a new run id"
        )
