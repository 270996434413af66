"""The routes a run installs by, with real pip and uv from the local stack over HTTP: a run
whose only test failed installs that test's evidence; a run never reported installs its
offer, resolved among its offered files alone, each hash-checked, the resolver's picks
installed exactly (a dependency that lives only in nightly included, and nothing else)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.test_bisect_install import (
    INSTALLERS,
    contents,
    holds,
    release,
    stage,
)
from tests.integration.test_bisect_install import make_installer as make_installer
from tests.unit.bisect_runs import evidence, history_run, offered_file, wheel_file
from wheelgate.bisect.environment import Installer
from wheelgate.bisect.install import PipRunInstaller, install_run
from wheelgate.history.model import InstallRoute, RunState
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.staging.local_artifacts import sha256_file
from wheelgate.storage.bucket import Bucket


@INSTALLERS
def test_a_run_whose_only_test_failed_installs_that_tests_evidence(
    kind: Installer,
    buckets: tuple[Bucket, Bucket],
    make_installer: Callable[..., PipRunInstaller],
    tmp_path: Path,
) -> None:
    # Given a rejected run whose one test failed after installing its wheel
    staging, _ = buckets
    run_id = f"route-failed-{kind}"
    wheel = build_wheel(tmp_path / "w", "route-failed", "1.0+gbad")
    stage(staging, run_id, wheel)
    own = wheel_file(run_id, wheel)
    run = history_run(
        run_id, [own], [evidence("smoke", [own], result="failed")], state=RunState.REJECTED
    )

    # When it is installed without a test named
    report = install_run(run, make_installer(kind), tmp_path / "venv")

    # Then the failed test's evidence is installed, and the plan says so
    assert (report.plan.route, report.plan.test) == (InstallRoute.EVIDENCE, "smoke")
    assert [f.sha256 for f in report.files] == [sha256_file(wheel)]
    assert holds(tmp_path / "venv") == contents(wheel)


@pytest.mark.slow
@INSTALLERS
def test_a_run_never_reported_installs_its_offer_and_only_what_resolves_from_it(
    kind: Installer,
    buckets: tuple[Bucket, Bucket],
    make_installer: Callable[..., PipRunInstaller],
    tmp_path: Path,
) -> None:
    # Given a staged run whose wheel requires a dependency that lives only in nightly, and
    # whose index offered two versions of it, an unrelated project and an older build of its own
    staging, nightly = buckets
    run_id = f"route-offer-{kind}"
    core = build_wheel(tmp_path / "w", "route-core", "2.0+gnew", requires=["route-dep<2"])
    old_core = build_wheel(tmp_path / "n", "route-core", "1.0")
    dep_1, dep_2 = (build_wheel(tmp_path / "n", "route-dep", v) for v in ("1.5", "2.0"))
    other = build_wheel(tmp_path / "n", "route-other", "1.0")
    stage(staging, run_id, core)
    for wheel in (old_core, dep_1, dep_2, other):
        release(nightly, wheel)
    offer = [offered_file(w.name, w.read_bytes()) for w in (old_core, dep_1, dep_2, other)]
    run = history_run(run_id, [wheel_file(run_id, core)], offer=offer)
    installer = make_installer(kind)

    # When it is installed
    report = install_run(run, installer, tmp_path / "venv")

    # Then the resolver picked the run's own wheel and the dependency it allows, installed
    # exactly; the older build of its own project was never fetched
    assert (report.plan.route, report.plan.test) == (InstallRoute.OFFER, None)
    assert {f.sha256 for f in report.files} == {sha256_file(core), sha256_file(dep_1)}
    assert holds(tmp_path / "venv") == contents(core, dep_1)
    assert sha256_file(old_core) not in installer.cache
