"""How a run installs (wheelgate.history.install_route): the one rule the history, its page
and bisect follow."""

from __future__ import annotations

from tests.unit.bisect_runs import evidence, history_file, history_run, unchecked
from wheelgate.history.install_route import run_install, with_install
from wheelgate.history.model import InstallRoute, RunInstall, RunState

WHEEL = "torch-2.7.0-py3-none-any.whl"


def test_a_passed_tests_evidence_comes_before_a_failed_ones_whatever_their_order() -> None:
    own = history_file("1", WHEEL)
    run = history_run(
        "1", [own], [evidence("gpu", [own], result="failed"), evidence("smoke", [own])]
    )

    assert run_install(run) == RunInstall(route=InstallRoute.EVIDENCE, test="smoke")


def test_a_run_whose_only_test_failed_installs_that_tests_evidence() -> None:
    own = history_file("1", WHEEL)
    run = history_run("1", [own], [evidence("smoke", [own], result="failed")])

    assert run_install(run) == RunInstall(route=InstallRoute.EVIDENCE, test="smoke")


def test_a_test_that_recorded_no_installed_file_is_no_evidence() -> None:
    own = history_file("1", WHEEL)
    run = history_run("1", [own], [evidence("smoke", [])], state=RunState.REJECTED)

    install = run_install(run)

    assert install.route is InstallRoute.NONE
    assert "smoke (passed)" in install.reason


def test_a_run_never_reported_installs_its_offer_unless_its_offer_was_not_checked() -> None:
    own = history_file("1", WHEEL)
    fresh = history_run("1", [own])
    refused = history_run("1", [own], install=unchecked("dep-1.0.whl is not in nightly"))

    assert run_install(fresh) == RunInstall(route=InstallRoute.OFFER)
    assert run_install(refused) == unchecked("dep-1.0.whl is not in nightly")


def test_with_install_sets_the_route_on_the_run() -> None:
    own = history_file("1", WHEEL)

    run = with_install(history_run("1", [own], [evidence("smoke", [own])]))

    assert run.install == RunInstall(route=InstallRoute.EVIDENCE, test="smoke")
