"""The promoter's settings: what the stack writes is what the promoter reads, field for field,
and the three settings a gate cannot do without refuse to start when missing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from tests.unit.samples import INDEX, PROMOTER_ENV
from wheelgate.core.env_names import (
    ENV_ALLOWED_INDEXES,
    ENV_DASHBOARD_URL,
    ENV_NIGHTLY_PAGE_RETENTION_DAYS,
    ENV_TRUSTED_REPORTER_ID,
    ENV_VERDICT_KEY_ARN,
)
from wheelgate.core.import_sources import ImportSource
from wheelgate.core.setting_parsers import ANY_INDEX, deferring
from wheelgate.core.setting_values import (
    ListingRetention,
    NewLocalLabels,
    RetentionRule,
    SettingsError,
)
from wheelgate.core.settings import PromoterSettings, allowed_indexes_from_env

#: Settings in which no field has its default, so that each one's round trip is seen.
EVERY_FIELD = PromoterSettings(
    staging_bucket="staging",
    nightly_bucket="nightly",
    nightly_base_url="https://nightly.example/",
    staging_base_url="https://staging.example/",
    nightly_distribution_id="ENIGHTLY",
    trusted_reporter_id="AROAREPORTER",
    trusted_deps_id="AROADEPS",
    required_tests={INDEX: ("smoke", "unit")},
    allowed_indexes=frozenset({INDEX, "v2/other"}),
    break_glass_id="AROABREAKGLASS",
    block_all_on_failure=False,
    allow_build_tag_rereleases=True,
    allow_new_local_labels=NewLocalLabels(indexes=frozenset({INDEX})),
    test_url_hosts=frozenset({"github.com", "ci.example"}),
    dashboard_url="https://console.example/dashboard",
    fanout_state_machine_arn="arn:aws:states:us-east-1:1:stateMachine:fanout",
    fanout_min_files=7,
    run_expiry_days=14,
    repository_url="https://github.com/example/project",
    fanout_min_bytes=1024,
    fanout_copy_concurrency=20,
    manifest_queue_url="https://sqs.example/manifests",
    dead_letter_queue_url="https://sqs.example/dlq",
    nightly_retention_mode="COMPLIANCE",
    nightly_page_retention_days=3,
    listing_retention=ListingRetention(
        default=RetentionRule(keep_versions=5), indexes={INDEX: RetentionRule(keep_days=9)}
    ),
    verdict_key_arn="arn:aws:kms:us-east-1:1:key/verdicts",
    import_sources=(ImportSource("old-bucket", "v2/"), ImportSource("older-bucket")),
)


def without(*names: str) -> dict[str, str]:
    return {k: v for k, v in PROMOTER_ENV.items() if k not in names}


def test_no_field_of_the_round_trip_settings_has_its_default() -> None:
    defaulted = [
        name
        for name, field in PromoterSettings.model_fields.items()
        if not field.is_required() and getattr(EVERY_FIELD, name) == field.default
    ]
    assert defaulted == []


@pytest.mark.parametrize("name", sorted(PromoterSettings.model_fields))
def test_every_field_reads_back_what_the_stack_writes(name: str) -> None:
    env = EVERY_FIELD.to_env()
    assert set(env) == set(PromoterSettings.env_names())
    assert getattr(PromoterSettings.from_env(env), name) == getattr(EVERY_FIELD, name)


def test_the_whole_settings_read_back_equal() -> None:
    assert PromoterSettings.from_env(EVERY_FIELD.to_env()) == EVERY_FIELD


#: The settings a gate cannot do without (no default).
GATE_SETTINGS = (ENV_TRUSTED_REPORTER_ID, ENV_ALLOWED_INDEXES, ENV_VERDICT_KEY_ARN)


@pytest.mark.parametrize("variable", GATE_SETTINGS)
def test_the_promoter_refuses_to_start_without_a_gate_setting(variable: str) -> None:
    # Given the smallest environment the promoter starts with, less one gate setting
    PromoterSettings.from_env(PROMOTER_ENV)
    # Then reading it names the variable instead of opening the gate
    with pytest.raises(SettingsError, match=f"environment variable {variable} is not set"):
        PromoterSettings.from_env(without(variable))
    with pytest.raises(SettingsError, match=f"{variable} is not set"):
        PromoterSettings.from_env({**PROMOTER_ENV, variable: "  "})


def test_every_missing_or_bad_variable_is_named_at_once_not_only_the_first() -> None:
    # Given an environment without any gate setting, and one bad count
    env = {**without(*GATE_SETTINGS), "WHEELGATE_FANOUT_MIN_FILES": "many"}
    # When it is read
    with pytest.raises(SettingsError) as raised:
        PromoterSettings.from_env(env)
    # Then the error names each variable, each with what is wrong
    problems = {p.variable: p.problem for p in raised.value.problems}
    assert set(problems) == {*GATE_SETTINGS, "WHEELGATE_FANOUT_MIN_FILES"}
    for variable in GATE_SETTINGS:
        assert problems[variable].startswith(f"environment variable {variable} is not set: set ")
    assert problems["WHEELGATE_FANOUT_MIN_FILES"] == (
        "WHEELGATE_FANOUT_MIN_FILES must be a non-negative integer, not 'many'"
    )
    assert str(raised.value).startswith("4 settings are missing or bad: ")
    assert all(p in str(raised.value) for p in problems.values())


def test_a_single_problem_is_the_whole_message_and_names_its_variable() -> None:
    with pytest.raises(SettingsError) as raised:
        PromoterSettings.from_env(
            {**PROMOTER_ENV, "WHEELGATE_NIGHTLY_RETENTION_MODE": "GOVERNANCE"}
        )
    [problem] = raised.value.problems
    assert problem.variable == ENV_NIGHTLY_PAGE_RETENTION_DAYS
    assert str(raised.value) == problem.problem


def test_an_empty_index_list_is_refused_and_only_the_explicit_value_means_any() -> None:
    with pytest.raises(SettingsError, match=f"{ENV_ALLOWED_INDEXES} lists no index directory"):
        PromoterSettings.from_env({**PROMOTER_ENV, ENV_ALLOWED_INDEXES: "[]"})
    any_index = PromoterSettings.from_env({**PROMOTER_ENV, ENV_ALLOWED_INDEXES: ANY_INDEX})
    assert any_index.allowed_indexes == frozenset()
    assert any_index.to_env()[ENV_ALLOWED_INDEXES] == ANY_INDEX
    # The CLI reads the same values (unset too, as the promoter refuses what it lets through).
    assert allowed_indexes_from_env({ENV_ALLOWED_INDEXES: ANY_INDEX}) == frozenset()
    assert allowed_indexes_from_env({ENV_ALLOWED_INDEXES: json.dumps([INDEX])}) == {INDEX}


def test_half_a_page_lock_names_the_missing_variable() -> None:
    with pytest.raises(SettingsError, match=f"{ENV_NIGHTLY_PAGE_RETENTION_DAYS} is not set"):
        PromoterSettings.from_env(
            {**PROMOTER_ENV, "WHEELGATE_NIGHTLY_RETENTION_MODE": "GOVERNANCE"}
        )


def keyword_settings(**values: Any) -> PromoterSettings:
    required: dict[str, Any] = {
        "staging_bucket": "${Token[Staging]}",
        "nightly_bucket": "${Token[Nightly]}",
        "nightly_base_url": "${Token[NightlyUrl]}",
        "trusted_reporter_id": "${Token[Reporter]}",
        "allowed_indexes": frozenset({INDEX}),
        "verdict_key_arn": "${Token[Key]}",
    }
    return PromoterSettings(**{**required, **values})


def test_tokens_at_synthesis_are_kept_for_the_promoter_to_check_at_cold_start() -> None:
    def is_token(value: str) -> bool:
        return value.startswith("${Token[")

    with deferring(is_token):
        settings = keyword_settings(dashboard_url="${Token[Dashboard]}")
    env = settings.to_env()
    assert env[ENV_DASHBOARD_URL] == "${Token[Dashboard]}"
    assert env["WHEELGATE_NIGHTLY_BASE_URL"] == "${Token[NightlyUrl]}"
    # Outside synthesis the same value is checked, and refused
    with pytest.raises(ValidationError, match=ENV_DASHBOARD_URL):
        keyword_settings(dashboard_url="${Token[Dashboard]}")
    with pytest.raises(SettingsError, match=ENV_DASHBOARD_URL):
        PromoterSettings.from_env(env)


@pytest.mark.parametrize("url", ["github.com/o/r", "ftp://example.org/o/r", "https://"])
def test_a_repository_url_that_is_no_web_url_is_refused_by_name(url: str) -> None:
    with pytest.raises(SettingsError, match="WHEELGATE_REPOSITORY_URL must be an http"):
        PromoterSettings.from_env({**PROMOTER_ENV, "WHEELGATE_REPOSITORY_URL": url})
    assert (
        PromoterSettings.from_env(
            {**PROMOTER_ENV, "WHEELGATE_REPOSITORY_URL": "https://github.com/o/r/"}
        ).repository_url
        == "https://github.com/o/r"
    )
