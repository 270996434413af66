"""The status pages link each directory's run history, which the staging index serves at
``history/<dir>/``: absolute, since the status site is on the nightly domain."""

from __future__ import annotations

from tests.unit.memory_bucket import World
from tests.unit.test_status_page import INDEX, Dom, fold, promoted, rejected
from wheelgate.status.pages import history_link, render_directory, render_overview
from wheelgate.status.state import page_key
from wheelgate.status.store import StatusStore

STAGING_URL = "https://staging.example/"
OTHER = "v2/gfx950-dcgpu"
HISTORY = f"{STAGING_URL}history/{INDEX}/"


def _history_links(html: str) -> list[str]:
    return [href for href in Dom(html).hrefs() if "history/" in href]


def test_a_directorys_page_links_its_run_history_on_the_staging_index() -> None:
    state = fold(promoted("run-1", 1))
    html = render_directory(state, INDEX, history_base_url=STAGING_URL)
    assert _history_links(html) == [HISTORY]


def test_the_overview_links_the_run_history_of_each_directory_with_a_decision() -> None:
    state = fold(promoted("run-1", 1), rejected("run-2", 2, index=OTHER))
    html = render_overview(state, indexes=[INDEX, OTHER, "v2/none"], history_base_url=STAGING_URL)
    assert _history_links(html) == [HISTORY, f"{STAGING_URL}history/{OTHER}/"]


def test_without_the_staging_indexs_url_no_page_links_a_history() -> None:
    state = fold(promoted("run-1", 1))
    assert _history_links(render_directory(state, INDEX)) == []
    assert _history_links(render_overview(state)) == []
    assert history_link(None, INDEX) is None


def test_a_history_link_is_percent_encoded_under_a_base_url_without_its_slash() -> None:
    assert history_link("https://staging.example", "v2/gfx+1") == (
        "https://staging.example/history/v2/gfx%2B1/"
    )


def test_the_status_store_writes_pages_linking_the_history_it_was_given() -> None:
    staging = World().bucket("staging")
    store = StatusStore(staging, history_base_url=STAGING_URL)  # type: ignore[arg-type]
    store.update(promoted("run-1", 1))
    for key in (page_key(), page_key(INDEX)):
        found = staging.get(key)
        assert found is not None
        assert _history_links(found[0].decode()) == [HISTORY], key
