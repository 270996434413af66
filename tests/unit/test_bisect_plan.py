"""The install plan of a run (wheelgate.bisect.plan): which test's evidence, read from where,
and every reason a run is skipped rather than installed."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from packaging.tags import Tag

from tests.unit.bisect_runs import evidence, history_file, history_run, offered_file, unchecked
from wheelgate.bisect.plan import UNKNOWN_SIZE, Sources, plan_run
from wheelgate.bisect.run_installer import (
    SKIP_EXPIRED,
    SKIP_MISSING_FILE,
    SKIP_MISSING_PROJECT,
    SKIP_MISSING_TARGET,
    SKIP_NO_EVIDENCE,
    SKIP_NO_OFFER,
    SkipRun,
)
from wheelgate.bisect.tags import target_tags
from wheelgate.history.model import InstallRoute, RunState
from wheelgate.staging.targets import target_preset

LINUX = target_tags(target_preset("cp312-manylinux_2_28_x86_64"))
SOURCES = Sources("https://staging.example/", "https://nightly.example/")
NOW = datetime(2026, 3, 5, tzinfo=UTC)
LINUX_WHEEL = "torch-2.7.0+abc-cp312-cp312-manylinux_2_17_x86_64.whl"
WINDOWS_WHEEL = "torch-2.7.0+abc-cp312-cp312-win_amd64.whl"


def skip_of(run_plan: Callable[[], object]) -> SkipRun:
    with pytest.raises(SkipRun) as caught:
        run_plan()
    return caught.value


def test_a_preset_takes_older_manylinux_wheels_and_pure_python_ones() -> None:
    assert Tag("cp312", "cp312", "manylinux_2_17_x86_64") in LINUX
    assert Tag("py3", "none", "any") in LINUX
    assert Tag("cp312", "cp312", "win_amd64") not in LINUX


def test_without_a_test_named_the_plan_is_the_first_passed_tests_evidence_that_fits() -> None:
    linux, windows = history_file("1", LINUX_WHEEL), history_file("1", WINDOWS_WHEEL)
    helper = history_file("1", "helper-1.0-py3-none-any.whl")
    run = history_run(
        "1",
        [linux, windows, helper],
        [
            evidence("failing", [linux], result="failed"),
            evidence("windows", [windows, helper]),
            evidence("linux", [linux, helper]),
        ],
    )

    plan = plan_run(run, tags=LINUX, sources=SOURCES, now=NOW)

    assert plan.test == "linux"
    assert [f.sha256 for f in plan.files] == [linux.sha256, helper.sha256]


def test_a_promoted_file_is_read_from_nightly_and_another_from_staging_until_it_expires() -> None:
    promoted = history_file("1", LINUX_WHEEL, promoted=True, expires_at="2026-01-01T00:00:00Z")
    staged = history_file("1", "helper-1.0-py3-none-any.whl")
    run = history_run("1", [promoted, staged], [evidence("t", [promoted, staged])])

    urls = [f.url for f in plan_run(run, tags=LINUX, sources=SOURCES, now=NOW).files]

    assert urls == [
        "https://nightly.example/bisect/torch-2.7.0%2Babc-cp312-cp312-manylinux_2_17_x86_64.whl",
        "https://staging.example/runs/1/bisect/helper-1.0-py3-none-any.whl",
    ]


def test_an_expired_file_never_promoted_skips_the_run_as_expired() -> None:
    gone = history_file("1", LINUX_WHEEL, expires_at="2026-03-01T00:00:00.000000Z")
    run = history_run("1", [gone], [evidence("t", [gone])])

    skip = skip_of(lambda: plan_run(run, tags=LINUX, sources=SOURCES, now=NOW))

    assert skip.reason == SKIP_EXPIRED
    assert LINUX_WHEEL in skip.message


def test_a_file_that_is_not_the_runs_is_read_from_its_nightly_key_or_skipped_as_missing() -> None:
    own = history_file("1", LINUX_WHEEL)
    run = history_run(
        "1", [own], [evidence("t", [own], others={"dep-1.0-py3-none-any.whl": "d" * 64})]
    )

    planned = plan_run(run, tags=LINUX, sources=SOURCES, now=NOW).files[1]
    without_nightly = Sources(SOURCES.staging_base_url)
    skip = skip_of(lambda: plan_run(run, tags=LINUX, sources=without_nightly, now=NOW))

    assert (planned.url, planned.size) == (
        "https://nightly.example/bisect/dep-1.0-py3-none-any.whl",
        UNKNOWN_SIZE,
    )
    assert skip.reason == SKIP_MISSING_FILE
    assert "dep-1.0-py3-none-any.whl" in skip.message


def test_a_run_never_reported_plans_its_own_fitting_files_and_its_offered_nightly_files() -> None:
    linux, windows = history_file("1", LINUX_WHEEL), history_file("1", WINDOWS_WHEEL)
    dep = offered_file("dep-1.0-py3-none-any.whl")
    other_torch = offered_file("torch-2.6.0-cp312-cp312-manylinux_2_17_x86_64.whl")
    windows_dep = offered_file("wdep-1.0-cp312-cp312-win_amd64.whl")
    run = history_run("1", [linux, windows], offer=[dep, other_torch, windows_dep])

    plan = plan_run(run, tags=LINUX, sources=SOURCES, now=NOW)

    assert (plan.route, plan.test, plan.requirements) == (InstallRoute.OFFER, None, ("torch",))
    assert [(f.filename, f.url) for f in plan.files] == [
        (LINUX_WHEEL, "https://staging.example/runs/1/bisect/" + LINUX_WHEEL.replace("+", "%2B")),
        (dep.filename, "https://nightly.example/bisect/dep-1.0-py3-none-any.whl"),
    ]


def test_a_run_never_reported_whose_offer_was_not_checked_is_skipped_as_no_offer() -> None:
    run = history_run(
        "1", [history_file("1", LINUX_WHEEL)], install=unchecked("nightly has no dep-1.0.whl")
    )

    skip = skip_of(lambda: plan_run(run, tags=LINUX, sources=SOURCES, now=NOW))

    assert skip.reason == SKIP_NO_OFFER
    assert "nightly has no dep-1.0.whl" in skip.message


def test_a_reported_run_no_test_of_which_recorded_its_files_is_skipped_as_no_evidence() -> None:
    own = history_file("1", LINUX_WHEEL)
    run = history_run("1", [own], [evidence("t", [])], state=RunState.REJECTED)

    skip = skip_of(lambda: plan_run(run, tags=LINUX, sources=SOURCES, now=NOW))

    assert skip.reason == SKIP_NO_EVIDENCE
    assert "t (passed)" in skip.message


def test_without_a_passed_test_the_failed_tests_evidence_is_installed_and_named() -> None:
    linux, helper = history_file("1", LINUX_WHEEL), history_file("1", "helper-1.0-py3-none-any.whl")
    run = history_run(
        "1",
        [linux, helper],
        [
            evidence("skipped", [linux], result="skipped"),
            evidence("smoke", [linux], result="failed"),
        ],
        state=RunState.REJECTED,
    )

    plan = plan_run(run, tags=LINUX, sources=SOURCES, now=NOW)

    assert (plan.route, plan.test) == (InstallRoute.EVIDENCE, "smoke")
    assert [f.filename for f in plan.files] == [LINUX_WHEEL]


def test_a_foreign_file_with_the_runs_bytes_under_another_name_does_not_replace_its_own() -> None:
    linux = history_file("1", LINUX_WHEEL, b"torch bytes")
    # Given a file another entry added to the run: another platform's name, the same bytes.
    planted = history_file("1", WINDOWS_WHEEL, b"torch bytes")
    run = history_run("1", [linux, planted], [evidence("t", [linux])])

    plan = plan_run(run, tags=LINUX, sources=SOURCES, now=NOW)

    assert [f.filename for f in plan.files] == [LINUX_WHEEL]


def test_an_unknown_test_name_is_skipped_with_the_runs_tests_listed() -> None:
    own = history_file("1", LINUX_WHEEL)
    run = history_run("1", [own], [evidence("smoke", [own]), evidence("gpu", [own])])

    skip = skip_of(lambda: plan_run(run, tags=LINUX, sources=SOURCES, now=NOW, as_test="cpu"))

    assert skip.reason == SKIP_NO_EVIDENCE
    assert "'cpu'" in skip.message
    assert "'smoke', 'gpu'" in skip.message


def test_a_named_test_is_installed_as_it_was_even_when_it_failed() -> None:
    linux, helper = history_file("1", LINUX_WHEEL), history_file("1", "helper-1.0-py3-none-any.whl")
    run = history_run("1", [linux, helper], [evidence("t", [helper, linux], result="failed")])

    plan = plan_run(run, tags=LINUX, sources=SOURCES, now=NOW, as_test="t")

    assert [f.filename for f in plan.files] == [helper.filename, linux.filename]


def test_a_run_without_a_file_of_a_requested_project_is_skipped_as_missing_project() -> None:
    own = history_file("1", LINUX_WHEEL)
    run = history_run("1", [own], [evidence("t", [own])])

    skip = skip_of(
        lambda: plan_run(run, tags=LINUX, sources=SOURCES, now=NOW, projects=["TorchVision"])
    )

    assert skip.reason == SKIP_MISSING_PROJECT
    assert "torchvision" in skip.message


def test_a_run_without_a_wheel_for_the_target_is_skipped_as_missing_target() -> None:
    windows = history_file("1", WINDOWS_WHEEL)
    run = history_run("1", [windows], [evidence("t", [windows])])

    skip = skip_of(lambda: plan_run(run, tags=LINUX, sources=SOURCES, now=NOW))

    assert skip.reason == SKIP_MISSING_TARGET
