"""The history page's table: one line per run, newest first, each linking its card (files and
install line) below, and the link back to the status site."""

from __future__ import annotations

from html.parser import HTMLParser

from tests.unit.history_page_samples import (
    INDEX,
    NIGHTLY_URL,
    NOW,
    REPOSITORY_URL,
    nightly_runs,
    sample_runs,
)
from tests.unit.test_history_page import Page, render
from wheelgate.history.model import HistoryRun, RunState
from wheelgate.history.page import render_history_page, result_counts


class Table(HTMLParser):
    """The table's header cells (tag, scope, text) and rows (cells' text, links)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.heads: list[tuple[str, str | None]] = []
        self.rows: list[dict[str, list[str]]] = []
        self.caption = ""
        self._in: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "table":
            self._in.append("table")
        if not self._in:
            return
        if tag == "th":
            self.heads.append((str(found.get("scope")), None))
        if tag == "tr" and self.heads and any(s == "col" for s, _ in self.heads):
            self.rows.append({"cells": [], "links": []})
        if tag in ("th", "td") and self.rows:
            self.rows[-1]["cells"].append("")
        if tag == "a" and self.rows:
            self.rows[-1]["links"].append(str(found["href"]))
        self._in.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self._in and tag == self._in[-1]:
            self._in.pop()
        if tag == "table":
            self._in = []

    def handle_data(self, data: str) -> None:
        if "caption" in self._in:
            self.caption += data
        elif self.rows and self.rows[-1]["cells"] and {"td", "th"} & set(self._in):
            self.rows[-1]["cells"][-1] += data

    def cells(self, row: int) -> list[str]:
        return [" ".join(c.split()) for c in self.rows[row]["cells"]]


def test_the_table_lists_each_run_on_one_line_newest_first() -> None:
    runs = sample_runs()
    table = Table(render([runs["expired"], runs["promoted"], runs["rejected"]]))
    assert [table.cells(i)[0] for i in range(len(table.rows))] == ["1002", "1001", "0900"]
    rejected = runs["rejected"]
    assert table.cells(0) == [
        "1002",
        "not promoted tests-failed",
        rejected.commit[:12],
        "2026-03-19 09:36",
        "2026-03-19 12:00",
        "1 passed 1 failed",
    ]
    assert f"{REPOSITORY_URL}/commit/{rejected.commit}" in table.rows[0]["links"]
    assert table.cells(2)[1] == "not promoted expired tests-failed"


def test_the_table_heads_its_columns_and_each_row_for_screen_readers() -> None:
    table = Table(render(list(sample_runs().values())))
    columns = [scope for scope, _ in table.heads if scope == "col"]
    assert len(columns) == 6
    assert [scope for scope, _ in table.heads].count("row") == len(table.rows) == 5
    assert "5 runs, newest first" in " ".join(table.caption.split())


def test_each_row_links_its_runs_card_and_each_card_links_the_table_back() -> None:
    html = render(list(sample_runs().values()))
    table, page = Table(html), Page(html)
    anchors = [row["links"][0] for row in table.rows]
    assert anchors == [f"#{card}" for card in page.runs]
    assert all("#runs" in page.run_links(card[4:-2]) for card in page.runs)
    assert 'id="runs"' in html


def test_a_runs_card_holds_its_install_line_before_its_files() -> None:
    text = Page(render([sample_runs()["rejected"]])).text("1002")
    line = f"wheelgate bisect install run:1002 --index {INDEX} --as-test smoke"
    assert text.index(line) < text.index("1 file")


def test_test_results_are_counted_passed_first_then_failed_then_the_rest() -> None:
    run = sample_runs()["rejected"]
    tests = (*run.tests, *(t.model_copy(update={"result": "skipped"}) for t in run.tests))
    odd = run.model_copy(update={"tests": (tests[2], tests[0], tests[1], tests[3])})
    assert result_counts(odd) == (("passed", 1), ("failed", 1), ("skipped", 2))
    assert result_counts(sample_runs()["staged"]) == ()


def _status_link(runs: list[HistoryRun]) -> list[str]:
    return [link for link in Page(render(runs)).links if "/status/" in link]


def test_the_page_links_its_directorys_status_page_once_a_run_there_was_decided() -> None:
    runs = sample_runs()
    assert _status_link([runs["promoted"]]) == [f"{NIGHTLY_URL}status/{INDEX}/"]
    assert _status_link([runs["rejected"], runs["staged"]]) == [f"{NIGHTLY_URL}status/{INDEX}/"]
    # Before any decision there, the directory has no status page: the overview is linked
    assert _status_link([runs["staged"], runs["pending"]]) == [f"{NIGHTLY_URL}status/"]
    assert _status_link([]) == [f"{NIGHTLY_URL}status/"]


def test_a_page_of_two_hundred_runs_has_two_hundred_lines_and_cards() -> None:
    runs = nightly_runs(200)
    html = render_history_page(runs, index=INDEX, nightly_base_url=NIGHTLY_URL, now=NOW)
    assert len(Table(html).rows) == len(Page(html).runs) == 200
    assert sum(r.state is RunState.REJECTED for r in runs) == 40
    # Rejected runs older than staging's two weeks expired: nothing installs them any more
    installable = [r for r in runs if not r.expired(NOW)]
    assert 150 < len(installable) < 200
    assert html.count('<pre class="install">') == len(installable)
