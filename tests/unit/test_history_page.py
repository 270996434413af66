"""The run history page a person reads: states, links where the bytes are, escaping, and the
writer that puts it beside the history in staging."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.unit.history_page_samples import (
    INDEX,
    NIGHTLY_URL,
    NOW,
    REPOSITORY_URL,
    evidence_of,
    history_run,
    sample_runs,
    staged_file,
)
from tests.unit.memory_bucket import MemoryBucket, World
from tests.unit.test_local_extra import run_without
from wheelgate.core.layout import STAGING, LayoutError
from wheelgate.history.model import HistoryRun, MonthRef, RunState
from wheelgate.history.model import TestRecord as RecordedTest
from wheelgate.history.page import months_of, render_history_page
from wheelgate.history.page_writer import HistoryPageWriter
from wheelgate.index.pages import HTML_CONTENT_TYPE, PAGE_CACHE_CONTROL


class Page(HTMLParser):
    """The page's articles (one per run): each one's attributes, text and links."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.runs: dict[str, dict[str, object]] = {}
        self.links: list[str] = []
        self.tags: list[str] = []
        self._run: dict[str, object] | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        found = dict(attrs)
        if tag == "article":
            self._run = {"attrs": found, "text": "", "links": []}
            self.runs[str(found["id"])] = self._run
        if "data-route" in found and self._run is not None:
            self._run["route"] = found["data-route"]
        if tag == "a":
            self.links.append(str(found["href"]))
            if self._run is not None:
                self._run["links"].append(str(found["href"]))  # type: ignore[attr-defined]

    def handle_endtag(self, tag: str) -> None:
        if tag == "article":
            self._run = None

    def handle_data(self, data: str) -> None:
        if self._run is not None:
            self._run["text"] = f"{self._run['text']} {data}"

    def text(self, run_id: str) -> str:
        return " ".join(str(self.runs[f"run-{run_id}-1"]["text"]).split())

    def run_links(self, run_id: str) -> list[str]:
        return list(self.runs[f"run-{run_id}-1"]["links"])  # type: ignore[call-overload]


def render(
    runs: list[HistoryRun],
    *,
    repository_url: str | None = REPOSITORY_URL,
    months: tuple[MonthRef, ...] = (),
) -> str:
    return render_history_page(
        runs,
        index=INDEX,
        nightly_base_url=NIGHTLY_URL,
        now=NOW,
        repository_url=repository_url,
        months=months,
    )


def test_runs_are_listed_newest_first_whatever_order_they_come_in() -> None:
    runs = sample_runs()
    page = Page(render([runs["expired"], runs["pending"], runs["promoted"], runs["staged"]]))
    assert list(page.runs) == ["run-1004-1", "run-1003-1", "run-1001-1", "run-0900-1"]


def test_a_rejected_run_says_plainly_it_was_not_promoted_and_why() -> None:
    page = Page(render([sample_runs()["rejected"]]))
    text = page.text("1002")
    assert "not promoted" in text
    assert "tests-failed" in text
    assert "test smoke failed" in text
    assert "failed smoke" in text
    assert page.runs["run-1002-1"]["attrs"] == {"class": "card", "id": "run-1002-1",
                                                "data-state": "rejected"}  # fmt: skip


def test_staged_and_pending_runs_say_they_are_not_promoted_and_where_they_stand() -> None:
    runs = sample_runs()
    page = Page(render([runs["staged"], runs["pending"]]))
    assert "Not promoted: staged, but no test report ever reached the promoter." in page.text(
        "1003"
    )
    assert "Decided not yet" in page.text("1003")
    assert "Not promoted yet: reported, waiting for the promoter's decision." in page.text("1004")


def test_a_promoted_run_links_its_files_in_nightly_even_after_the_staged_copy_expired() -> None:
    promoted = sample_runs()["promoted"]
    page = Page(render([promoted]))
    text = page.text("1001")
    assert "Promoted to nightly." in text
    assert "not promoted" not in text.lower()
    file_links = [link for link in page.run_links("1001") if link.endswith(".whl")]
    assert file_links == [
        NIGHTLY_URL + INDEX + "/" + f.filename.replace("+", "%2B") for f in promoted.files
    ]
    assert "expired" not in text
    assert "wheelgate bisect install run:1001 --index v2/gfx94X-dcgpu --as-test smoke" in text


def test_a_staged_file_links_its_staged_copy_relative_to_the_page_with_plus_encoded() -> None:
    rejected = sample_runs()["rejected"]
    page = Page(render([rejected]))
    [file] = rejected.files
    [file_link] = [link for link in page.run_links("1002") if link.endswith(".whl")]
    # The page is history/v2/gfx94X-dcgpu/index.html: three folders up to the bucket's root.
    assert file_link == f"../../../runs/1002/{INDEX}/" + file.filename.replace("+", "%2B")
    assert "+" not in file_link
    assert "staged copy until 2026-04-02 12:00 UTC" in page.text("1002")


def test_an_expired_run_says_so_links_no_file_and_offers_no_install_line() -> None:
    expired = sample_runs()["expired"]
    page = Page(render([expired]))
    text = page.text("0900")
    assert "Every file of this run has expired" in text
    assert "wheelgate bisect install" not in text
    assert [link for link in page.run_links("0900") if ".whl" in link] == []
    assert expired.files[0].filename in text
    assert page.runs["run-0900-1"]["attrs"]["data-expired"] == "true"  # type: ignore[index]


def test_a_run_with_one_file_expired_still_offers_its_install_line() -> None:
    files = (staged_file("1100", 7, expires_in_days=-1), staged_file("1100", 8, expires_in_days=1))
    run = history_run(
        "1100",
        7,
        state=RunState.REJECTED,
        staged_days_ago=13,
        files=files,
        tests=(evidence_of("smoke", "passed", files[1]),),
    )
    page = Page(render([run]))
    assert len([link for link in page.run_links("1100") if link.endswith(".whl")]) == 1
    assert "wheelgate bisect install run:1100 --index" in page.text("1100")


def test_each_run_says_how_it_installs_and_prints_a_line_only_for_those_that_install() -> None:
    runs = sample_runs()
    page = Page(render(list(runs.values())))

    routes = {k: page.runs[f"run-{r.run_id}-1"].get("route") for k, r in runs.items()}
    assert routes == {
        "promoted": "evidence",
        "rejected": "evidence",
        "expired": None,
        "staged": "offer",
        "pending": "evidence",
    }
    assert "Installs exactly what test smoke installed (it failed)." in page.text("1002")
    assert f"wheelgate bisect install run:1002 --index {INDEX} --as-test smoke" in page.text("1002")
    assert "its offer, its staged files and the 1 nightly file" in page.text("1003")
    assert f"wheelgate bisect install run:1003 --index {INDEX}" in page.text("1003")
    assert "--as-test" not in page.text("1003")


def test_a_run_that_cannot_be_installed_says_why_and_prints_no_install_line() -> None:
    run = history_run(
        "1200",
        8,
        state=RunState.REJECTED,
        staged_days_ago=1,
        files=(staged_file("1200", 8, expires_in_days=13),),
        tests=(RecordedTest(name="smoke", result="failed"),),
    )

    text = Page(render([run])).text("1200")

    assert "Cannot be installed exactly: reported, but no passed or failed test recorded" in text
    assert "wheelgate bisect install" not in text


def test_a_test_name_in_the_install_line_is_quoted_for_the_shell() -> None:
    file = staged_file("1300", 9, expires_in_days=13)
    run = history_run(
        "1300",
        9,
        state=RunState.PROMOTED,
        staged_days_ago=1,
        files=(file,),
        tests=(evidence_of("gpu smoke; rm -rf ~", "passed", file),),
    )

    text = Page(render([run])).text("1300")

    assert "--as-test 'gpu smoke; rm -rf ~'" in text


def test_commits_link_the_repository_only_when_one_is_given_and_http() -> None:
    run = sample_runs()["rejected"]
    assert f"{REPOSITORY_URL}/commit/{run.commit}" in Page(render([run])).run_links("1002")
    for repository_url in (None, "javascript:alert(1)"):
        html = render([run], repository_url=repository_url)
        assert "/commit/" not in html
        assert run.commit[:12] in Page(html).text("1002")


def test_hostile_test_names_and_messages_are_text_never_markup() -> None:
    script = "<script>alert(1)</script>"
    run = history_run(
        "1200", 9, state=RunState.REJECTED, staged_days_ago=1,
        files=(staged_file("1200", 9, expires_in_days=5),), reasons=("tests-failed",),
        message=f"test {script} failed", tests=(RecordedTest(name=script, result=script),),
    )  # fmt: skip
    html = render([run])
    assert "<script>" not in html
    # The message, the test's name and result, both again in why it cannot be installed, and
    # the result in the run's line of the table.
    assert html.count("&lt;script&gt;alert(1)&lt;/script&gt;") == 6
    assert "script" not in Page(html).tags


def test_the_head_and_month_shards_are_linked_beside_the_page() -> None:
    months = (MonthRef(month="2026-03", runs=4), MonthRef(month="2026-02", runs=1))
    page = Page(render(list(sample_runs().values()), months=months))
    assert "index.json" in page.links
    months_linked = [link for link in page.links if link.endswith(".json") and "/" not in link]
    assert months_linked == ["index.json", "2026-03.json", "2026-02.json"]
    assert f"{NIGHTLY_URL}{INDEX}/" in page.links


def test_months_of_runs_are_counted_newest_first() -> None:
    assert months_of(sample_runs().values()) == (
        MonthRef(month="2026-03", runs=4),
        MonthRef(month="2026-02", runs=1),
    )


def test_a_directory_with_no_run_yet_says_so() -> None:
    assert "No run staged yet." in render([])


def test_an_invalid_index_directory_is_refused_by_name() -> None:
    with pytest.raises(LayoutError, match="runs"):
        render_history_page([], index="runs/x", nightly_base_url=NIGHTLY_URL, now=NOW)


class RecordingBucket(MemoryBucket):
    """A memory bucket that keeps each PUT's options (it stores no content type)."""

    def __init__(self) -> None:
        super().__init__(World(), "staging")
        self.world.buckets["staging"] = {}
        self.options: dict[str, dict[str, Any]] = {}

    def put(self, key: str, body: bytes, **options: Any) -> str:
        self.options[key] = options
        return super().put(key, body, **options)


def test_the_writer_puts_the_page_beside_the_history_as_short_lived_html() -> None:
    bucket = RecordingBucket()
    writer = HistoryPageWriter(
        bucket, nightly_base_url=NIGHTLY_URL, repository_url=REPOSITORY_URL, clock=lambda: NOW
    )
    writer(INDEX, list(sample_runs().values()))
    key = STAGING.history_page(INDEX)
    assert key == f"history/{INDEX}/index.html"
    found = bucket.get(key)
    assert found is not None
    page = Page(found[0].decode("utf-8"))
    assert list(page.runs) == ["run-1004-1", "run-1003-1", "run-1002-1", "run-1001-1", "run-0900-1"]
    assert "2026-02.json" in page.links
    assert bucket.options[key] == {
        "content_type": HTML_CONTENT_TYPE,
        "cache_control": PAGE_CACHE_CONTROL,
    }


def test_the_history_model_needs_no_jinja2_only_rendering_does(tmp_path: Path) -> None:
    # Given an install without Jinja2 (only the promoter extra brings it)
    probe = (
        "from datetime import datetime, UTC\n"
        "from wheelgate.history.page_writer import HistoryPageWriter\n"
        "from wheelgate.history.page import render_history_page\n"
        "render_history_page([], index='a', nightly_base_url='https://n/', now=datetime.now(UTC))\n"
    )
    result = run_without(tmp_path, "jinja2", "-c", probe)
    # Then the modules import, and rendering is what fails, naming Jinja2
    assert "No module named 'jinja2'" in result.stderr
    assert "line 4" in result.stderr
