"""Listing retention: which versions a project page keeps (index/retention.py), the setting
that chooses the rule (core/settings.py), and archive links (index/pages.py rebase)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from wheelgate.core.env_names import ENV_LISTING_RETENTION
from wheelgate.core.layout import PAGES, href
from wheelgate.core.setting_values import ListingRetention, RetentionRule, SettingsError
from wheelgate.core.settings import listing_retention_from_env
from wheelgate.index.pages import IndexEntry, rebase, upload_time
from wheelgate.index.retention import retain

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
INDEX = "v2/gfx94X-dcgpu"


def wheel(
    version: str, *, days_ago: float = 0, yanked: str | bool = False, tag: str = "py3-none-any"
) -> IndexEntry:
    name = f"torch-{version}-{tag}.whl"
    return IndexEntry(
        filename=name,
        url=href(PAGES.project_dir(INDEX, "torch"), f"{INDEX}/{name}"),
        sha256="a" * 64,
        size=1,
        upload_time=upload_time(NOW - timedelta(days=days_ago)),
        yanked=yanked,
    )


def listed_versions(entries: list[IndexEntry], rule: RetentionRule) -> list[str]:
    result = retain(entries, rule, now=NOW)
    assert {e.filename for e in result.listed} | {e.filename for e in result.delisted} == {
        e.filename for e in entries
    }
    return sorted({str(e.version) for e in result.listed})


NIGHTLIES = [wheel(f"2.10.0.dev202611{d:02d}", days_ago=30 - d) for d in range(1, 31)]


def test_no_rule_lists_everything() -> None:
    assert len(listed_versions(NIGHTLIES, RetentionRule())) == 30


def test_keep_versions_lists_the_newest_k_by_version_order() -> None:
    # Given 30 nightlies, and 2.9.1 released today (newer upload, older version)...
    entries = [*NIGHTLIES, wheel("2.9.1")]
    # Then K=3 keeps the three highest versions, not the three latest uploads.
    assert listed_versions(entries, RetentionRule(keep_versions=3)) == [
        "2.10.0.dev20261128",
        "2.10.0.dev20261129",
        "2.10.0.dev20261130",
    ]


def test_keep_versions_orders_by_version_not_by_string() -> None:
    entries = [wheel("1.9"), wheel("1.10"), wheel("1.2")]
    assert listed_versions(entries, RetentionRule(keep_versions=1)) == ["1.10"]


def test_keep_days_lists_versions_first_released_within_the_window() -> None:
    # dev20261130 is 0 days old, dev20261121 9 days: D=10 keeps ten nightlies.
    kept = listed_versions(NIGHTLIES, RetentionRule(keep_days=10))
    assert kept == [f"2.10.0.dev202611{d}" for d in range(21, 31)]


def test_a_version_counts_from_its_first_file() -> None:
    # Given a version whose first wheel is 40 days old and a second 1 day old...
    entries = [
        wheel("1.0", days_ago=40),
        wheel("1.0", days_ago=1, tag="cp312-cp312-linux_x86_64"),
        wheel("2.0", days_ago=1),
    ]
    # Then D=30 delists both of 1.0's files: the version was released 40 days ago.
    result = retain(entries, RetentionRule(keep_days=30), now=NOW)
    assert [e.filename for e in result.delisted] == [e.filename for e in entries[:2]]


def test_both_rules_list_what_either_keeps() -> None:
    # K=5 and D=10 over 30 daily nightlies: the last ten days (more than 5).
    assert len(listed_versions(NIGHTLIES, RetentionRule(keep_versions=5, keep_days=10))) == 10
    # K=15 and D=10: never fewer than 15.
    assert len(listed_versions(NIGHTLIES, RetentionRule(keep_versions=15, keep_days=10))) == 15


def test_the_newest_version_is_never_delisted() -> None:
    # Given a dependency last released two years ago (filelock)...
    old = [wheel("3.12.0", days_ago=800), wheel("3.13.0", days_ago=730)]
    # Then a days-only rule still lists its newest version, so it still resolves.
    assert listed_versions(old, RetentionRule(keep_days=30)) == ["3.13.0"]


def test_local_versions_of_one_release_are_one_version() -> None:
    # Given the same nightly built for two ROCm versions, and an older nightly...
    entries = [
        wheel("2.10.0.dev20261130+rocm7.0"),
        wheel("2.10.0.dev20261130+rocm6.4"),
        wheel("2.10.0.dev20261129+rocm7.0", days_ago=1),
    ]
    # Then K=1 keeps both builds of the newest nightly, and only them.
    result = retain(entries, RetentionRule(keep_versions=1), now=NOW)
    assert [e.filename for e in result.listed] == [e.filename for e in entries[:2]]
    assert [e.filename for e in result.delisted] == [entries[2].filename]


def test_ties_keep_every_file_of_a_version() -> None:
    # Given three wheels of one version (a tie on version) and an older version...
    entries = [
        wheel("2.0", tag="cp311-cp311-linux_x86_64"),
        wheel("2.0", tag="cp312-cp312-linux_x86_64"),
        wheel("2.0", tag="cp313-cp313-linux_x86_64"),
        wheel("1.0"),
    ]
    # Then K=1 lists all three files of 2.0, and none of 1.0.
    assert [
        e.filename for e in retain(entries, RetentionRule(keep_versions=1), now=NOW).listed
    ] == [e.filename for e in entries[:3]]


def test_wholly_yanked_versions_do_not_count_towards_k() -> None:
    # Given 4.0 and 3.0 yanked, over 2.0 and 1.0...
    entries = [
        wheel("4.0", yanked="broken"),
        wheel("3.0", yanked=True),
        wheel("2.0"),
        wheel("1.0"),
    ]
    # Then K=1 lists 2.0 (the newest live version) and the yanked versions above it, where
    # pip shows them to `==` pins; 1.0 goes.
    assert listed_versions(entries, RetentionRule(keep_versions=1)) == ["2.0", "3.0", "4.0"]
    # And with every version yanked, the newest one stays listed.
    all_yanked = [wheel("2.0", yanked=True), wheel("1.0", yanked=True)]
    assert listed_versions(all_yanked, RetentionRule(keep_versions=1)) == ["2.0"]


def test_a_yanked_old_version_goes_like_any_other() -> None:
    entries = [wheel("3.0"), wheel("2.0"), wheel("1.0", yanked="bad")]
    result = retain(entries, RetentionRule(keep_versions=2), now=NOW)
    assert [e.filename for e in result.delisted] == [entries[2].filename]


def test_an_unknown_upload_time_counts_as_new() -> None:
    entries = [
        wheel("2.0"),
        IndexEntry(**{**wheel("1.0", days_ago=99).__dict__, "upload_time": ""}),
    ]
    assert listed_versions(entries, RetentionRule(keep_days=30)) == ["1.0", "2.0"]


def test_listing_retention_setting_round_trips_through_the_environment() -> None:
    retention = ListingRetention(
        default=RetentionRule(keep_versions=30),
        indexes={INDEX: RetentionRule(keep_versions=10, keep_days=14)},
    )
    parsed = listing_retention_from_env({ENV_LISTING_RETENTION: retention.to_json()})
    assert parsed == retention
    assert parsed.rule_for(INDEX) == RetentionRule(keep_versions=10, keep_days=14)
    assert parsed.rule_for("v2/other") == RetentionRule(keep_versions=30)
    assert listing_retention_from_env({}) == ListingRetention()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{", f"{ENV_LISTING_RETENTION} is not valid JSON"),
        ('{"default": {"keep_days": -1}}', f"{ENV_LISTING_RETENTION}.default.keep_days is -1"),
        ('{"indexes": {"a//b": {}}}', f"{ENV_LISTING_RETENTION}.indexes: index directory"),
    ],
)
def test_a_bad_environment_value_names_the_key(raw: str, message: str) -> None:
    with pytest.raises(SettingsError, match=message.replace(".", r"\.")):
        listing_retention_from_env({ENV_LISTING_RETENTION: raw})


def test_archive_pages_link_files_two_levels_up_with_plus_encoded() -> None:
    # Given an entry as the listing page links it (../<file>, '+' as %2B)...
    entry = wheel("2.10.0.dev20261130+rocm7.0")
    assert entry.url == "../torch-2.10.0.dev20261130%2Brocm7.0-py3-none-any.whl"
    # When it is linked from the archive page <index>/_archive/torch/...
    moved = rebase(
        [entry],
        PAGES.project_dir(INDEX, "torch"),
        PAGES.project_dir(INDEX, "torch", archive=True),
    )
    # Then the link climbs one level more, still encoded once, and moving back restores it.
    assert moved[0].url == "../../torch-2.10.0.dev20261130%2Brocm7.0-py3-none-any.whl"
    back = rebase(
        moved, PAGES.project_dir(INDEX, "torch", archive=True), PAGES.project_dir(INDEX, "torch")
    )
    assert back == (entry,)
    assert PAGES.root_page(INDEX, json=True, archive=True) == f"{INDEX}/_archive/index.json"
