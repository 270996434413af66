"""Which index directories the status site shows: every allowed one, promoted to or not, and
never a directory's archive (``<DIR>/_archive``), which a yank's pages name."""

from __future__ import annotations

from tests.unit.memory_bucket import World
from tests.unit.test_status_page import INDEX, Dom, fold, promoted
from wheelgate.core.records import PromotionRecord, State
from wheelgate.status.pages import render_overview, shown_directories
from wheelgate.status.state import STATE_KEY, DirectoryStatus, apply_record, page_key, parse_state
from wheelgate.status.store import StatusStore

OTHER = "v2/gfx950-dcgpu"
ARCHIVE = f"{INDEX}/_archive"


def yank(run_id: str = "yank-1") -> PromotionRecord:
    """A yank of a file of INDEX as the promoter records it: its pages are INDEX's project page
    and INDEX's archive page."""
    record = PromotionRecord(
        run_id=run_id,
        state=State.PROMOTED,
        message="yanked",
        decided_at="2026-11-30T05:00:00Z",
        pages=[f"{INDEX}/t/index.html", f"{ARCHIVE}/t/index.html"],
    )
    return record.with_decision(
        at="2026-11-30T05:00:00Z", state=State.PROMOTED, reason=None, message="yanked",
        manifest_sha256=None, actor=None,
    )  # fmt: skip


def test_a_yank_is_a_decision_of_its_directory_and_its_archive_is_no_directory() -> None:
    state = fold(promoted("run-1", 1), yank())
    assert list(state.directories) == [INDEX]
    assert [d.run_id for d in state.directories[INDEX].decisions] == ["yank-1", "run-1"]
    assert state.directories[INDEX].latest is not None
    assert "_archive" not in render_overview(state)


def test_an_archive_a_state_listed_as_a_directory_is_dropped() -> None:
    # Given a state written before archives were told apart
    state = fold(promoted("run-1", 1))
    state = state.model_copy(
        update={"directories": {**state.directories, ARCHIVE: DirectoryStatus()}}
    )
    # Then the overview never shows it, and the next decision drops it
    assert [index for index, _ in shown_directories(state)] == [INDEX]
    assert list(apply_record(state, yank("yank-2")).directories) == [INDEX]


def test_every_allowed_directory_is_shown_promoted_to_or_not() -> None:
    state = fold(promoted("run-1", 1))
    page = Dom(render_overview(state, indexes=[OTHER, INDEX]))
    text = " ".join(page.all_text().split())
    # The allowed directory nothing was decided in is shown, and has no page to link yet
    assert f"{OTHER} No run promoted yet." in text
    assert f"{INDEX}/" in " ".join(page.hrefs())
    assert not any(OTHER in href for href in page.hrefs())
    assert text.index(INDEX) < text.index(OTHER)


def test_the_status_store_shows_the_promoters_allowed_directories() -> None:
    staging = World().bucket("staging")
    store = StatusStore(staging, indexes=frozenset({INDEX, OTHER}))  # type: ignore[arg-type]
    store.update(promoted("run-1", 1))
    overview = staging.get(page_key())
    assert overview is not None
    assert f"{OTHER}</h3>" in overview[0].decode()
    found = staging.get(STATE_KEY)
    assert found is not None
    assert list(parse_state(found[0]).directories) == [INDEX]  # nothing stored for OTHER
