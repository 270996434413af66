"""Lifecycle arithmetic: nightly page locks, and run pages that expire before their files."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from tests.unit.samples import PROMOTER_ENV
from wheelgate.core.env_names import (
    ENV_NIGHTLY_PAGE_RETENTION_DAYS,
    ENV_NIGHTLY_RETENTION_MODE,
    ENV_RUN_STAGE_WINDOW_DAYS,
)
from wheelgate.core.lifecycle import (
    StageWindowClosed,
    check_stage_window,
    lifecycle_expiry,
    stage_deadline,
)
from wheelgate.core.run_window import (
    DEFAULT_RUN_STAGE_WINDOW_DAYS,
    run_stage_window_days,
    run_stage_window_from_env,
)
from wheelgate.core.setting_values import PageRetention, SettingsError
from wheelgate.core.settings import PromoterSettings, page_retention_from_env

# -- nightly page locks -----------------------------------------------------------------------


def test_page_retention_is_read_from_both_variables() -> None:
    env = {ENV_NIGHTLY_RETENTION_MODE: "COMPLIANCE", ENV_NIGHTLY_PAGE_RETENTION_DAYS: "7"}
    assert page_retention_from_env(env) == PageRetention(mode="COMPLIANCE", days=7)
    assert page_retention_from_env({}) is None


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {ENV_NIGHTLY_RETENTION_MODE: "GOVERNANCE"},
            f"{ENV_NIGHTLY_PAGE_RETENTION_DAYS} is not set",
        ),
        ({ENV_NIGHTLY_PAGE_RETENTION_DAYS: "7"}, f"{ENV_NIGHTLY_RETENTION_MODE} is not set"),
        (
            {ENV_NIGHTLY_RETENTION_MODE: "governance", ENV_NIGHTLY_PAGE_RETENTION_DAYS: "7"},
            "'governance'; use one of GOVERNANCE, COMPLIANCE",
        ),
        (
            {ENV_NIGHTLY_RETENTION_MODE: "GOVERNANCE", ENV_NIGHTLY_PAGE_RETENTION_DAYS: "0"},
            "positive number of days, not '0'",
        ),
        (
            {ENV_NIGHTLY_RETENTION_MODE: "GOVERNANCE", ENV_NIGHTLY_PAGE_RETENTION_DAYS: "1.5"},
            "positive number of days, not '1.5'",
        ),
    ],
)
def test_a_bad_page_retention_is_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        page_retention_from_env(env)


def test_the_promoter_settings_carry_the_page_retention() -> None:
    env = {
        **PROMOTER_ENV,
        ENV_NIGHTLY_RETENTION_MODE: "GOVERNANCE",
        ENV_NIGHTLY_PAGE_RETENTION_DAYS: "7",
    }
    assert PromoterSettings.from_env(env).page_retention == PageRetention("GOVERNANCE", 7)


def test_a_page_is_locked_for_its_days_from_the_write() -> None:
    written = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)
    assert PageRetention("GOVERNANCE", 7).until(written) == datetime(2026, 3, 8, 12, 30, tzinfo=UTC)


# -- S3's expiry rule ---------------------------------------------------------------------------


def test_s3_expiry_rounds_up_to_the_next_midnight_utc() -> None:
    # The S3 User Guide's example: written 2014-01-15 10:30 UTC, a 3-day rule, expires 01-19 0:00.
    written = datetime(2014, 1, 15, 10, 30, tzinfo=UTC)
    assert lifecycle_expiry(written, 3) == datetime(2014, 1, 19, tzinfo=UTC)
    # A write exactly at midnight is already on the boundary.
    assert lifecycle_expiry(datetime(2014, 1, 15, tzinfo=UTC), 3) == datetime(
        2014, 1, 18, tzinfo=UTC
    )
    # Another zone's time is the same instant.
    eastern = datetime(2014, 1, 15, 20, 30, tzinfo=UTC).astimezone(timezone(timedelta(hours=-5)))
    assert lifecycle_expiry(eastern, 3) == datetime(2014, 1, 19, tzinfo=UTC)


# -- the staging window -------------------------------------------------------------------------


def test_the_window_leaves_the_pages_and_a_days_margin_inside_the_files_life() -> None:
    assert run_stage_window_days(14, 7) == 6
    assert run_stage_window_days(3, 1) == 1
    with pytest.raises(SettingsError, match="no day to stage a run in"):
        run_stage_window_days(8, 7)
    with pytest.raises(SettingsError, match="from 1 to the file days minus 2"):
        run_stage_window_days(14, 0)


def test_the_cli_window_defaults_to_the_smallest_one() -> None:
    assert run_stage_window_from_env({}) == DEFAULT_RUN_STAGE_WINDOW_DAYS == 1
    # The smallest window any valid configuration gives: the default is never too long.
    assert min(run_stage_window_days(e, p) for e in range(3, 40) for p in range(1, e - 1)) == 1
    assert run_stage_window_from_env({ENV_RUN_STAGE_WINDOW_DAYS: "6"}) == 6
    with pytest.raises(SettingsError, match=f"{ENV_RUN_STAGE_WINDOW_DAYS} must be a positive"):
        run_stage_window_from_env({ENV_RUN_STAGE_WINDOW_DAYS: "0"})
    with pytest.raises(SettingsError, match="not 'six'"):
        run_stage_window_from_env({ENV_RUN_STAGE_WINDOW_DAYS: "six"})


_FIRST_STAGED = [
    datetime(2026, 3, 1, 0, 0, tzinfo=UTC),
    datetime(2026, 3, 1, 0, 0, 1, tzinfo=UTC),
    datetime(2026, 3, 1, 11, 59, tzinfo=UTC),
    datetime(2026, 3, 1, 23, 59, 59, 999999, tzinfo=UTC),
]


@pytest.mark.parametrize("first", _FIRST_STAGED)
@pytest.mark.parametrize(("files", "pages"), [(14, 7), (3, 1), (30, 1), (30, 27), (90, 30)])
def test_a_page_written_at_the_last_allowed_moment_expires_before_every_file_it_lists(
    first: datetime, files: int, pages: int
) -> None:
    # Given a run whose first object was staged at `first`, and a later file of it
    window = run_stage_window_days(files, pages)
    last = stage_deadline(first, window)
    check_stage_window("1", first, last, window)
    for listed in (first, first + timedelta(hours=5), last):
        # When its page is (re)written at the last moment stage allows
        page_gone = lifecycle_expiry(last, pages)
        # Then the page expires at least the margin day before the file it lists
        assert page_gone + timedelta(days=1) <= lifecycle_expiry(listed, files)
    # And a moment later stage refuses
    with pytest.raises(StageWindowClosed, match="run 1 was first staged at 2026-03-01"):
        check_stage_window("1", first, last + timedelta(microseconds=1), window)


def test_a_window_one_day_longer_would_let_a_page_outlive_the_margin() -> None:
    # The arithmetic can fail: one more day of staging and the page expires with the file.
    first = datetime(2026, 3, 1, 23, 0, tzinfo=UTC)
    window = run_stage_window_days(14, 7) + 1
    page_gone = lifecycle_expiry(stage_deadline(first, window), 7)
    assert page_gone + timedelta(days=1) > lifecycle_expiry(first, 14)


def test_an_empty_run_is_always_open() -> None:
    check_stage_window("1", None, datetime(2030, 1, 1, tzinfo=UTC), 1)
