"""A stage entry's offer checked when folded (wheelgate.history.offer): each offered file
must be one nightly released under that name with that SHA-256; an offer that cannot be
checked leaves the run without one, saying why, and the entry is folded all the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.promotion_world import Promoter
from tests.unit.test_history_writers import entry_for, history, write_entry
from wheelgate.core.layout import NIGHTLY
from wheelgate.history.model import (
    InstallRoute,
    OfferedFile,
    OfferFile,
    RunInstall,
    StagedEntry,
)
from wheelgate.history.offer import OfferUnchecked, checked_offer
from wheelgate.staging.local_artifacts import sha256_file

INDEX = "idx"


@pytest.fixture
def p(tmp_path: Path) -> Promoter:
    return Promoter(tmp_path, run_expiry_days=14)


def offer_of(*files: tuple[str, str]) -> tuple[OfferFile, ...]:
    return tuple(OfferFile(filename=n, sha256=s) for n, s in files)


def test_an_offer_of_files_nightly_released_is_kept_with_their_nightly_keys(p: Promoter) -> None:
    dep = p.wheel("dep", "1.0")
    p.report("201", p.stage("201", dep))
    pkg = p.wheel("pkg", "1.0")
    p.stage("202", pkg)
    entry = entry_for("202", pkg, offer=offer_of((dep.name, sha256_file(dep))))

    assert p.deliver(write_entry(p, entry)) is None

    run = {r.run_id: r for r in history(p)}["202"]
    assert run.offer == (
        OfferedFile(
            filename=dep.name,
            project="dep",
            sha256=sha256_file(dep),
            nightly_key=NIGHTLY.artifact(entry.index, dep.name),
        ),
    )
    assert run.install == RunInstall(route=InstallRoute.OFFER)


@pytest.mark.parametrize("forgery", ["other bytes", "never released"])
def test_an_offer_nightly_does_not_vouch_for_is_dropped_and_the_run_says_why(
    p: Promoter, forgery: str
) -> None:
    dep = p.wheel("dep", "1.0")
    p.report("203", p.stage("203", dep))
    pkg = p.wheel("pkg", "1.0")
    p.stage("204", pkg)
    name = dep.name if forgery == "other bytes" else "ghost-1.0-py3-none-any.whl"
    entry = entry_for("204", pkg, offer=offer_of((name, "e" * 64)))

    assert p.deliver(write_entry(p, entry)) is None

    [run] = [r for r in history(p) if r.run_id == "204"]
    assert run.offer == ()
    assert run.install is not None
    assert run.install.route is InstallRoute.NONE
    assert name in run.install.reason
    assert [f.filename for f in run.files] == [pkg.name]


def test_a_later_entry_adds_the_offered_files_an_earlier_one_lacked(p: Promoter) -> None:
    dep, tool = p.wheel("dep", "1.0"), p.wheel("tool", "1.0")
    p.report("205", p.stage("205", dep, tool))
    pkg, extra = p.wheel("pkg", "1.0"), p.wheel("extra", "1.0")
    p.stage("206", pkg, extra)

    p.deliver(write_entry(p, entry_for("206", pkg, offer=offer_of((dep.name, sha256_file(dep))))))
    p.deliver(
        write_entry(p, entry_for("206", extra, offer=offer_of((tool.name, sha256_file(tool)))))
    )

    [run] = [r for r in history(p) if r.run_id == "206"]
    assert [f.filename for f in run.offer] == sorted([dep.name, tool.name])


def test_an_offered_file_that_is_the_entrys_own_is_not_looked_for_in_nightly() -> None:
    own = ("pkg-1.0-py3-none-any.whl", "a" * 64)
    entry = StagedEntry(
        run_id="1",
        index=INDEX,
        commit="c" * 40,
        staged_at="2026-01-02T03:04:05Z",
        files=({"filename": own[0], "sha256": own[1], "size": 1},),  # type: ignore[arg-type]
        offer=offer_of(own),
    )

    def nightly(index: str, project: str) -> dict[str, str]:
        raise AssertionError(f"nightly was asked for {project}")

    assert checked_offer(entry, nightly) == ()


def test_an_offered_name_that_is_no_distribution_cannot_be_checked() -> None:
    entry = StagedEntry(
        run_id="1",
        index=INDEX,
        commit="c" * 40,
        staged_at="2026-01-02T03:04:05Z",
        files=({"filename": "pkg-1.0-py3-none-any.whl", "sha256": "a" * 64, "size": 1},),  # type: ignore[arg-type]
        offer=offer_of(("not-a-wheel.txt", "b" * 64)),
    )

    with pytest.raises(OfferUnchecked, match=r"not-a-wheel\.txt"):
        checked_offer(entry, lambda index, project: {})
