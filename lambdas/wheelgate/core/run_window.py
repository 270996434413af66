"""How long ``wheelgate stage`` may add to a run: the days before a run's pages could outlive
the files they list."""

from __future__ import annotations

from collections.abc import Mapping

from wheelgate.core.env_names import ENV_RUN_STAGE_WINDOW_DAYS
from wheelgate.core.setting_values import SettingsError

DEFAULT_RUN_STAGE_WINDOW_DAYS = 1
#: S3 removes expired objects asynchronously, some time after they become eligible; a run's
#: pages become eligible this many days before the earliest file they can list, so that they
#: are gone first.
RUN_PAGE_EXPIRY_MARGIN_DAYS = 1


def run_stage_window_days(run_expiry_days: int, page_expiry_days: int) -> int:
    """Days after a run's first staged object during which ``wheelgate stage`` may still write
    the run's pages, given that staged objects under ``runs/`` expire after ``run_expiry_days``
    and the run's pages after ``page_expiry_days`` (``staging_run_expiry_days`` and
    ``staging_run_page_expiry_days``).

    A page written within the window becomes eligible for expiry at least
    :data:`RUN_PAGE_EXPIRY_MARGIN_DAYS` before any file it lists (each was staged no earlier
    than the run's first object). Raises :class:`SettingsError` when no whole day is left.
    """
    window = run_expiry_days - page_expiry_days - RUN_PAGE_EXPIRY_MARGIN_DAYS
    if page_expiry_days < 1 or window < 1:
        least = RUN_PAGE_EXPIRY_MARGIN_DAYS + 1
        raise SettingsError(
            f"run pages that expire after {page_expiry_days} day(s) and staged files after "
            f"{run_expiry_days} leave no day to stage a run in: pages must expire at least "
            f"{least} days before the files (1 to stage the run in, "
            f"{RUN_PAGE_EXPIRY_MARGIN_DAYS} for S3's asynchronous removal), so the page days "
            f"must be from 1 to the file days minus {least}"
        )
    return window


def run_stage_window_from_env(environ: Mapping[str, str]) -> int:
    """``WHEELGATE_RUN_STAGE_WINDOW_DAYS``, or :data:`DEFAULT_RUN_STAGE_WINDOW_DAYS` when unset.
    Raises :class:`SettingsError` for anything but a positive whole number of days."""
    raw = environ.get(ENV_RUN_STAGE_WINDOW_DAYS, "").strip()
    if not raw:
        return DEFAULT_RUN_STAGE_WINDOW_DAYS
    if not raw.isdigit() or int(raw) < 1:
        raise SettingsError(
            f"{ENV_RUN_STAGE_WINDOW_DAYS} must be a positive number of days, not {raw!r}"
        )
    return int(raw)
