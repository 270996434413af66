"""The status site's state and pages: what a decision record adds, and what reaches the HTML."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from jinja2 import DictLoader, UndefinedError

from tests.unit.samples import PROMOTER_ENV
from tests.unit.test_local_extra import run_without
from wheelgate.core.display import safe_url
from wheelgate.core.records import FileOutcome, PromotionRecord, RefusedFile, SetOutcome, State
from wheelgate.status.links import CI_HOSTS, CiLinks, ci_links
from wheelgate.status.pages import environment, render_directory, render_overview
from wheelgate.status.state import (
    MAX_DECISIONS,
    MAX_DIRECTORIES,
    MAX_REJECTIONS,
    StatusState,
    apply_record,
    page_key,
    parse_state,
)

INDEX = "v2/gfx94X-dcgpu"
COMMIT = "a" * 40


def at(n: int) -> str:
    return f"2026-11-30T04:{n // 60:02d}:{n % 60:02d}.000000Z"


def promoted(
    run_id: str, n: int, *, index: str = INDEX, tests: list[dict[str, str]] | None = None
) -> PromotionRecord:
    record = PromotionRecord(
        run_id=run_id,
        state=State.PROMOTED,
        message="promoted 1 file(s) in 1 set(s) (1 copied)",
        commit=COMMIT,
        decided_at=at(n),
        sets=[
            SetOutcome(
                index=index,
                state=State.PROMOTED,
                files=[
                    FileOutcome(
                        filename=f"torch-2.7.0+{run_id}-py3-none-any.whl",
                        sha256="0123456789ab" + "f" * 52,
                        size=632_000_000,
                        action="copied",
                    )
                ],
                tests=tests
                if tests is not None
                else [{"name": "smoke", "result": "passed", "url": "https://ci.example/1"}],
            )
        ],
    )
    return record.with_decision(
        at=at(n), state=State.PROMOTED, reason=None, message=record.message,
        manifest_sha256=None, actor=None,
    )  # fmt: skip


def rejected(
    run_id: str, n: int, *, index: str | None = INDEX, reason: str = "tests-failed",
    message: str = "test smoke failed", tests: list[dict[str, str]] | None = None,
) -> PromotionRecord:  # fmt: skip
    sets = [] if index is None else [
        SetOutcome(index=index, state=State.REJECTED, reason=reason, message=message,
                   tests=tests or [{"name": "smoke", "result": "failed"}])
    ]  # fmt: skip
    record = PromotionRecord(
        run_id=run_id, state=State.REJECTED, reason=reason, message=message,
        commit=COMMIT, decided_at=at(n), sets=sets,
    )  # fmt: skip
    return record.with_decision(
        at=at(n), state=State.REJECTED, reason=reason, message=message,
        manifest_sha256=None, actor=None,
    )  # fmt: skip


def fold(*records: PromotionRecord) -> StatusState:
    state = StatusState()
    for record in records:
        state = apply_record(state, record)
    return state


class Dom(HTMLParser):
    """Tags with their attributes, and the text, of a page (what a browser would build)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def hrefs(self) -> list[str]:
        return [str(a["href"]) for t, a in self.tags if t == "a"]

    def all_text(self) -> str:
        return "".join(self.text)


# -- latest promoted run -------------------------------------------------------------------


def test_latest_promoted_is_the_newest_promotion_of_a_plain_run() -> None:
    # Given two promotions, a rejection, a yank and an override after them
    yank = PromotionRecord(
        run_id="yank-20261130-abc", state=State.PROMOTED, decided_at=at(9),
        message=f"yanked {INDEX}/torch.whl", pages=[f"{INDEX}/torch/index.json"],
    ).with_decision(
        at=at(9), state=State.PROMOTED, reason=None, message="yanked", manifest_sha256=None,
        actor=None,
    )  # fmt: skip
    override = promoted("override-103-1", 10)
    state = fold(promoted("101", 1), promoted("102", 2), rejected("104", 3), yank, override)
    # Then the latest promoted run is 102, and every decision is listed, newest first
    latest = state.directories[INDEX].latest
    assert latest is not None
    assert (latest.run_id, latest.commit, latest.file_count) == ("102", COMMIT, 1)
    runs = [(d.run_id, d.kind) for d in state.directories[INDEX].decisions]
    assert runs == [
        ("override-103-1", "override"),
        ("yank-20261130-abc", "yank"),
        ("104", "run"),
        ("102", "run"),
        ("101", "run"),
    ]


def test_an_older_promotion_arriving_late_does_not_replace_the_latest() -> None:
    state = fold(promoted("new", 5), promoted("old", 1))
    assert state.directories[INDEX].latest is not None
    assert state.directories[INDEX].latest.run_id == "new"


def test_a_refused_replay_of_a_promoted_run_is_a_rejection_not_a_new_promotion() -> None:
    first = promoted("200", 1)
    replay = first.with_decision(
        at=at(2), state=State.REJECTED, reason="replay-conflict", message="already promoted",
        manifest_sha256=None, actor=None,
    )  # fmt: skip
    state = fold(first, replay)
    assert state.directories[INDEX].latest is not None
    assert state.directories[INDEX].latest.decided_at == at(1)
    assert [(r.run_id, r.reason) for r in state.rejections] == [("200", "replay-conflict")]


def test_applying_the_same_record_twice_changes_nothing() -> None:
    once = fold(promoted("1", 1), rejected("2", 2))
    assert apply_record(once, rejected("2", 2)) == once
    assert apply_record(once, promoted("1", 1)) == once


def test_a_rejection_without_sets_is_listed_without_a_directory() -> None:
    state = fold(rejected("3", 1, index=None, reason="untrusted-writer", message="not reporter"))
    assert state.directories == {}
    assert [(r.index, r.reason) for r in state.rejections] == [(None, "untrusted-writer")]
    assert "untrusted-writer" in render_overview(state)


# -- bounds --------------------------------------------------------------------------------


def test_history_is_bounded() -> None:
    state = StatusState()
    for n in range(MAX_REJECTIONS + 30):
        state = apply_record(state, rejected(f"r{n}", n))
    decisions = state.directories[INDEX].decisions
    assert len(decisions) == MAX_DECISIONS
    assert decisions[0].run_id == f"r{MAX_REJECTIONS + 29}"
    assert len(state.rejections) == MAX_REJECTIONS
    assert state.rejections[-1].run_id == "r30"


def test_directories_are_bounded_keeping_the_promoted_ones() -> None:
    state = fold(promoted("keep", 0, index="kept/dir"))
    for n in range(MAX_DIRECTORIES + 5):
        state = apply_record(state, rejected(f"x{n}", n + 1, index=f"junk/d{n}"))
    assert len(state.directories) == MAX_DIRECTORIES
    assert "kept/dir" in state.directories
    assert "junk/d0" not in state.directories


def test_long_messages_are_cut() -> None:
    state = fold(rejected("1", 1, message="x" * 10_000))
    assert len(state.rejections[0].message) <= 500


def test_state_round_trips_through_json() -> None:
    state = fold(promoted("1", 1), rejected("2", 2))
    assert parse_state(state.to_json()) == state
    assert '"schema": "wheelgate/status/v1"' in state.to_json()


# -- escaping ------------------------------------------------------------------------------

HOSTILE_NAME = '<script>alert("name")</script>'
HOSTILE_MESSAGE = "<script>alert(1)</script><img src=x onerror=alert(2)>"


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JavaScript:alert(1)",
        " javascript:alert(1)",
        "java\tscript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox(1)",
        "//evil.example/x",
        "https:/no-host",
        'https://ci.example/" onmouseover="alert(1)',
    ],
)
def test_only_absolute_http_urls_become_links(url: str) -> None:
    assert safe_url(url) is None
    state = fold(promoted("1", 1, tests=[{"name": "smoke", "result": "passed", "url": url}]))
    for html in (render_overview(state), render_directory(state, INDEX)):
        dom = Dom(html)
        assert url.strip() not in dom.hrefs()
        assert not any(
            h.lower().lstrip().startswith(("javascript", "data", "vb")) for h in dom.hrefs()
        )
        assert all(
            name.lower() not in ("onmouseover", "onerror")
            for _, attrs in dom.tags
            for name in attrs
        )


def test_http_and_https_urls_are_links() -> None:
    assert safe_url("http://ci.example/run?a=1&b=2") == "http://ci.example/run?a=1&b=2"
    state = fold(
        promoted("1", 1, tests=[{"name": "t", "result": "passed", "url": "https://ci.example/a?b=1&c=2"}])
    )  # fmt: skip
    html = render_directory(state, INDEX)
    assert 'href="https://ci.example/a?b=1&amp;c=2"' in html
    assert "https://ci.example/a?b=1&c=2" in Dom(html).hrefs()


def test_hostile_values_are_text_never_markup() -> None:
    # Given a test name, a message, a reason and a run id written to break out of the page
    state = fold(
        promoted("1", 1, tests=[{"name": HOSTILE_NAME, "result": "<b>passed</b>", "url": "x"}]),
        rejected("2", 2, reason="<i>odd</i>", message=HOSTILE_MESSAGE),
    )
    for html in (render_overview(state), render_directory(state, INDEX)):
        dom = Dom(html)
        tags = {t for t, _ in dom.tags}
        # Then no element comes from them, and their text is shown as written
        assert not tags & {"script", "img", "b", "i"}
        text = dom.all_text()
        assert HOSTILE_NAME in text
        if "Recent rejections" in html or "Recent decisions" in html:
            assert HOSTILE_MESSAGE in text


def test_hostile_index_and_file_names_are_escaped_in_links() -> None:
    state = fold(promoted('run"><script>', 1, index='v2/"><script>x'))
    for html in (render_overview(state), render_directory(state, 'v2/"><script>x')):
        assert "script" not in {t for t, _ in Dom(html).tags}


# -- pages ---------------------------------------------------------------------------------


def page_facts(html: str) -> dict[str, Any]:
    dom = Dom(html)
    return {"tags": dom.tags, "text": dom.all_text(), "hrefs": dom.hrefs()}


def test_overview_shows_latest_run_and_rejections_and_links_directories() -> None:
    state = fold(promoted("101", 1), rejected("102", 2))
    facts = page_facts(render_overview(state))
    assert "101" in facts["text"]
    assert COMMIT[:12] in facts["text"]
    assert "tests-failed" in facts["text"]
    assert "https://ci.example/1" in facts["hrefs"]
    # status/index.html links status/v2/gfx94X-dcgpu/
    assert f"{INDEX}/" in facts["hrefs"]
    meta = [a for t, a in facts["tags"] if t == "meta"]
    assert {"name": "viewport", "content": "width=device-width, initial-scale=1"} in meta
    assert {"charset": "utf-8"} in meta
    assert not any(t in ("script", "link", "iframe") for t, _ in facts["tags"])


def test_directory_page_lists_files_with_size_and_short_hash_and_links_up() -> None:
    state = fold(promoted("101", 1), rejected("102", 2))
    html = render_directory(state, INDEX)
    facts = page_facts(html)
    assert "602.7 MiB" in facts["text"]
    assert "0123456789ab" in facts["text"]
    # status/v2/gfx94X-dcgpu/index.html -> v2/gfx94X-dcgpu/<file> and back to status/
    assert "../../../v2/gfx94X-dcgpu/torch-2.7.0%2B101-py3-none-any.whl" in facts["hrefs"]
    assert "../../" in facts["hrefs"][0]
    assert "../../../v2/gfx94X-dcgpu/" in facts["hrefs"]
    assert "tests-failed" in facts["text"]


def overridden(run_id: str, n: int) -> PromotionRecord:
    """``run_id`` promoted by a break-glass override, its smoke test failed."""
    record = promoted(run_id, n, tests=[{"name": "smoke", "result": "failed"}])
    by = "AWS:AROABREAKGLASS000001:****"
    return record.model_copy(
        update={"override": {"by": by, "reason": "runners down", "request": f"override-{n}"}}
    )


def test_the_latest_card_marks_an_override_with_who_when_and_why() -> None:
    state = fold(rejected("101", 1), overridden("101", 2))
    latest = state.directories[INDEX].latest
    assert latest is not None
    assert latest.override is not None
    assert (latest.override.by, latest.override.at) == ("AWS:AROABREAKGLASS000001:****", at(2))
    for html in (render_directory(state, INDEX), render_overview(state)):
        text = " ".join(page_facts(html)["text"].split())
        assert "override promoted by a break-glass override, its tests not passed" in text
        assert "by AWS:AROABREAKGLASS000001:****, 2026-11-30 04:00 UTC: runners down" in text


def test_a_run_its_tests_promoted_has_no_override_mark() -> None:
    state = fold(promoted("101", 1))
    assert "break-glass" not in render_directory(state, INDEX)


def test_page_keys() -> None:
    assert page_key() == "status/index.html"
    assert page_key(INDEX) == f"status/{INDEX}/index.html"


def test_pages_are_html5_documents() -> None:
    state = fold(promoted("1", 1))
    for html in (
        render_overview(state),
        render_directory(state, INDEX),
        render_overview(StatusState()),
    ):
        assert html.startswith('<!DOCTYPE html>\n<html lang="en">')
        assert html.rstrip().endswith("</html>")


# -- CI run and commit links -----------------------------------------------------------------

REPO = "https://github.com/ROCm/TheRock"
JOB_URL = f"{REPO}/actions/runs/16454515470/job/46510539321"
RUN_LINK = f"{REPO}/actions/runs/16454515470"
COMMIT_LINK = f"{REPO}/commit/{COMMIT}"


@pytest.mark.parametrize(
    "url",
    [
        JOB_URL,
        RUN_LINK,
        f"{RUN_LINK}/attempts/2",
        f"{JOB_URL}?pr=12&check_suite_focus=true#step:4:17",
        "HTTPS://GitHub.com/ROCm/TheRock/actions/runs/16454515470",
    ],
)
def test_a_github_actions_url_gives_the_run_and_the_commit(url: str) -> None:
    assert ci_links([url], COMMIT) == CiLinks(run=RUN_LINK, commit=COMMIT_LINK)


def test_a_configured_host_is_linked_on_that_host() -> None:
    url = "https://github.example.com/ml/torch/actions/runs/7/job/8"
    hosts = CI_HOSTS | {"github.example.com"}
    assert ci_links([url], COMMIT, hosts=hosts) == CiLinks(
        run="https://github.example.com/ml/torch/actions/runs/7",
        commit=f"https://github.example.com/ml/torch/commit/{COMMIT}",
    )
    assert ci_links([url], COMMIT) == CiLinks()


@pytest.mark.parametrize(
    "url",
    [
        None,
        "",
        "javascript:alert(1)",
        "javascript://github.com/ROCm/TheRock/actions/runs/1",
        "data:text/html,https://github.com/ROCm/TheRock/actions/runs/1",
        "http://github.com/ROCm/TheRock/actions/runs/1",
        "//github.com/ROCm/TheRock/actions/runs/1",
        "https://ci.example/ROCm/TheRock/actions/runs/1",
        "https://github.com.evil.example/ROCm/TheRock/actions/runs/1",
        "https://evil.example/github.com/TheRock/actions/runs/1",
        "https://evil.example/?u=https://github.com/ROCm/TheRock/actions/runs/1",
        "https://user:token@github.com/ROCm/TheRock/actions/runs/1",
        "https://ghp_token@github.com/ROCm/TheRock/actions/runs/1",
        "https://github.com@evil.example/ROCm/TheRock/actions/runs/1",
        "https://github.com:8443/ROCm/TheRock/actions/runs/1",
        "https://github.com/ROCm/TheRock/actions/runs/",
        "https://github.com/ROCm/TheRock/actions/runs/1e3",
        "https://github.com/ROCm/TheRock/actions/runs/-1",
        "https://github.com/ROCm/TheRock/pull/1",
        "https://github.com/ROCm/../actions/runs/1",
        "https://github.com/ROCm/TheRock/../../actions/runs/1",
        "https://github.com/ROCm%2FTheRock/x/actions/runs/1",
        "https://github.com/-ROCm/TheRock/actions/runs/1",
        "https://github.com/RÖCm/TheRock/actions/runs/1",
        'https://github.com/ROCm/The"Rock/actions/runs/1',
        "https://github.com/ROCm/<script>/actions/runs/1",
        "https://github.com/ROCm/TheRock/actions/runs/1 onclick=alert(1)",
        "https://github.com/ROCm/TheRock/actions/runs/1\n",
        "https://github.com/ROCm/TheRock/actions/runs/\uff11",  # a fullwidth digit
    ],
)
def test_anything_but_a_github_actions_run_url_gives_no_link(url: str | None) -> None:
    assert ci_links([url], COMMIT) == CiLinks()


@pytest.mark.parametrize(
    "commit", [None, "", "abc123", COMMIT.upper(), COMMIT + "0", "g" * 40, "<b>" + "a" * 37]
)
def test_only_a_full_commit_sha_is_linked(commit: str | None) -> None:
    assert ci_links([JOB_URL], commit) == CiLinks(run=RUN_LINK)


def test_urls_that_disagree_link_only_what_they_agree_on() -> None:
    other_run = f"{REPO}/actions/runs/99/job/1"
    other_repo = "https://github.com/ROCm/other/actions/runs/16454515470"
    assert ci_links([JOB_URL, RUN_LINK, None, "https://ci.example/1"], COMMIT) == CiLinks(
        run=RUN_LINK, commit=COMMIT_LINK
    )
    assert ci_links([JOB_URL, other_run], COMMIT) == CiLinks(commit=COMMIT_LINK)
    assert ci_links([JOB_URL, other_repo], COMMIT) == CiLinks()
    assert ci_links([], COMMIT) == CiLinks()


def test_pages_link_the_run_id_and_the_commit() -> None:
    # Given a promoted run and a rejected one whose tests ran in GitHub Actions
    failed = [{"name": "smoke", "result": "failed", "url": f"{REPO}/actions/runs/2/job/3"}]
    state = fold(
        promoted("101", 1, tests=[{"name": "smoke", "result": "passed", "url": JOB_URL}]),
        rejected("102", 2, tests=failed),
    )
    # Then the run id and the commit are links to them, wherever they are shown
    for html in (render_overview(state), render_directory(state, INDEX)):
        dom = Dom(html)
        assert {RUN_LINK, COMMIT_LINK, f"{REPO}/actions/runs/2", JOB_URL} <= set(dom.hrefs())
        assert f'<a href="{RUN_LINK}" rel="nofollow noopener"><code>101</code></a>' in html
        assert f'<a href="{COMMIT_LINK}" rel="nofollow noopener"><code title=' in html


def test_without_github_urls_the_run_id_and_commit_stay_plain_text() -> None:
    state = fold(promoted("101", 1), rejected("102", 2))
    for html in (render_overview(state), render_directory(state, INDEX)):
        assert Dom(html).hrefs().count("https://ci.example/1") == 1
        assert not [h for h in Dom(html).hrefs() if "github" in h or "commit" in h]
        assert "<dd><code>101</code></dd>" in html


def test_yank_and_override_runs_are_not_linked_to_ci() -> None:
    override = promoted(
        "override-101-1", 1, tests=[{"name": "s", "result": "passed", "url": JOB_URL}]
    )
    state = fold(override)
    assert state.directories[INDEX].decisions[0].links == CiLinks()
    assert RUN_LINK not in Dom(render_directory(state, INDEX)).hrefs()


def test_hostile_run_ids_and_commits_stay_text_inside_the_links() -> None:
    record = promoted(
        '<script>alert("run")</script>',
        1,
        tests=[{"name": "s", "result": "passed", "url": JOB_URL}],
    ).model_copy(update={"commit": '"><img src=x onerror=alert(1)>'})
    state = fold(record)
    for html in (render_overview(state), render_directory(state, INDEX)):
        dom = Dom(html)
        assert not {t for t, _ in dom.tags} & {"script", "img"}
        assert '<script>alert("run")</script>' in dom.all_text()
        assert RUN_LINK in dom.hrefs()
        assert not [h for h in dom.hrefs() if "/commit/" in h]


def test_a_state_written_before_links_existed_still_parses_and_renders() -> None:
    # Given status/state.json as the previous promoter wrote it (no "links" anywhere)
    old = {
        "schema": "wheelgate/status/v1",
        "directories": {
            INDEX: {
                "latest": {
                    "run_id": "101", "commit": COMMIT, "decided_at": at(1), "file_count": 1,
                    "files": [{"filename": "t-1-py3-none-any.whl", "size": 1, "sha256": "0" * 64}],
                    "tests": [{"name": "smoke", "result": "passed", "url": JOB_URL}],
                },
                "decisions": [{"run_id": "101", "kind": "run", "state": "promoted",
                               "reason": None, "message": "", "at": at(1), "commit": COMMIT}],
            }
        },
        "rejections": [{"run_id": "102", "kind": "run", "index": INDEX,
                        "reason": "tests-failed", "message": "m", "at": at(2)}],
    }  # fmt: skip
    state = parse_state(json.dumps(old))
    latest = state.directories[INDEX].latest
    assert latest is not None
    assert latest.links == CiLinks()
    assert state.rejections[0].links == CiLinks()
    # Then its pages render as before, and the next promotion brings the links
    assert "<dd><code>101</code></dd>" in render_directory(state, INDEX)
    state = apply_record(
        state, promoted("103", 3, tests=[{"name": "s", "result": "passed", "url": JOB_URL}])
    )
    latest = state.directories[INDEX].latest
    assert latest is not None
    assert latest.links == CiLinks(run=RUN_LINK, commit=COMMIT_LINK)
    assert parse_state(state.to_json()) == state


# -- dashboard link ------------------------------------------------------------------------

DASHBOARD = (
    "https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1"
    "#dashboards/dashboard/WheelGate-promotion"
)


def dashboard_links(html: str) -> list[str]:
    dom = Dom(html)
    anchors = [a for t, a in dom.tags if t == "a"]
    return [str(a["href"]) for a in anchors if str(a["href"]).startswith("https://eu-west-1.")]


def test_pages_link_the_dashboard_when_its_url_is_set() -> None:
    # Given a state with one promoted directory and the dashboard's URL
    state = fold(promoted("101", 1))
    # When both pages are rendered with it, Then each links the dashboard once, as "Dashboard"
    for html in (
        render_overview(state, dashboard_url=DASHBOARD),
        render_directory(state, INDEX, dashboard_url=DASHBOARD),
    ):
        assert dashboard_links(html) == [DASHBOARD]
        assert ">Dashboard</a>" in html
    # The directory page keeps its own links first
    hrefs = Dom(render_directory(state, INDEX, dashboard_url=DASHBOARD)).hrefs()
    assert hrefs[:3] == ["../../", "../../../v2/gfx94X-dcgpu/", DASHBOARD]


def test_pages_have_no_dashboard_link_without_a_url() -> None:
    state = fold(promoted("101", 1))
    for html in (render_overview(state), render_directory(state, INDEX)):
        assert "Dashboard" not in html


def test_a_dashboard_url_that_is_not_http_is_never_a_link() -> None:
    state = fold(promoted("101", 1))
    html = render_overview(state, dashboard_url="javascript:alert(1)")
    assert "Dashboard" not in html
    assert "javascript" not in html


def test_the_promoter_reads_the_dashboard_url_from_its_environment() -> None:
    from wheelgate.core.env_names import ENV_DASHBOARD_URL
    from wheelgate.core.setting_values import SettingsError
    from wheelgate.core.settings import PromoterSettings

    base = PROMOTER_ENV
    assert PromoterSettings.from_env(base).dashboard_url is None
    assert PromoterSettings.from_env({**base, ENV_DASHBOARD_URL: " "}).dashboard_url is None
    configured = PromoterSettings.from_env({**base, ENV_DASHBOARD_URL: DASHBOARD})
    assert configured.dashboard_url == DASHBOARD
    for bad in ("http://example/dash", "console/dashboards", "https:///x", "https://a b/"):
        with pytest.raises(SettingsError, match=f"{ENV_DASHBOARD_URL} must be an https URL"):
            PromoterSettings.from_env({**base, ENV_DASHBOARD_URL: bad})


def imported(run_id: str, n: int) -> PromotionRecord:
    """An import's record: two files imported from a source bucket, one already released,
    one refused."""
    source = "s3://old-release-bucket/v2/gfx94X-dcgpu/"
    files = [
        FileOutcome(
            filename=f"torch-2.{minor}.0+rocm6.3-py3-none-any.whl",
            sha256=f"{minor:x}" * 64,
            size=600_000_000,
            action="imported",
            source=f"{source}torch-2.{minor}.0+rocm6.3-py3-none-any.whl",
        )
        for minor in (4, 5)
    ]
    files.append(
        FileOutcome(
            filename="filelock-3.12.0-py3-none-any.whl",
            sha256="c" * 64,
            size=10_000,
            action="already-released",
        )
    )
    record = PromotionRecord(
        run_id=run_id,
        state=State.PROMOTED,
        message="imported 2 file(s)",
        decided_at=at(n),
        imported_from=source,
        sets=[
            SetOutcome(
                index=INDEX,
                state=State.PROMOTED,
                files=files,
                refused=[
                    RefusedFile(
                        filename="torch-2.3.0-py3-none-any.whl",
                        reason="wheel-name-mismatch",
                        message="METADATA says Version 2.3.0rc1",
                    )
                ],
            )
        ],
    )
    return record.with_decision(
        at=at(n), state=State.PROMOTED, reason=None, message=record.message,
        manifest_sha256=None, actor=None,
    )  # fmt: skip


def test_an_import_is_shown_apart_from_the_tested_runs() -> None:
    # Given a directory whose latest tested run is 100, then an import...
    state = apply_record(StatusState(), promoted("100", 1))
    state = apply_record(state, imported("import-0123456789abcdef", 2))
    status = state.directories[INDEX]
    # Then the tested run stays the directory's latest; the import is listed on its own.
    assert status.latest is not None
    assert status.latest.run_id == "100"
    [listed] = status.imports
    assert (listed.imported, listed.already, listed.refused) == (2, 1, 1)
    assert listed.source == "s3://old-release-bucket/v2/gfx94X-dcgpu/"
    assert [f.filename for f in listed.files] == [
        "torch-2.4.0+rocm6.3-py3-none-any.whl",
        "torch-2.5.0+rocm6.3-py3-none-any.whl",
    ]
    assert status.decisions[0].kind == "import"
    page = render_directory(state, INDEX)
    tested, _, rest = page.partition("<h2>Imported, untested</h2>")
    assert "torch-2.7.0+100-py3-none-any.whl" in tested
    assert "torch-2.4.0" not in tested
    assert "torch-2.4.0%2Brocm6.3-py3-none-any.whl" in rest.split("<h2>Recent decisions</h2>")[0]
    assert "2 file(s) imported from <code>s3://old-release-bucket/v2/gfx94X-dcgpu/</code>" in rest
    assert "import-0123456789abcdef" in render_overview(state)
    # Folding the same decision again changes nothing.
    again = apply_record(state, imported("import-0123456789abcdef", 2))
    assert again == state


# -- templates -----------------------------------------------------------------------------


def test_autoescape_is_on_in_every_template() -> None:
    # Given a value written as markup, in templates of any name (not only .html) loaded by the
    # pages' environment
    env = environment()
    names = ("x.html", "x.css", "x.txt", "x")
    loaded = env.overlay(loader=DictLoader(dict.fromkeys(names, "{{ value }}")))
    for name in names:
        # Then it renders as text
        assert loaded.get_template(name).render(value="<script>alert(1)</script>") == (
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        ), name
    # And every shipped template, the CSS included, goes through that environment
    assert {"base.html", "overview.html", "directory.html", "macros.html", "status.css"} <= set(
        env.list_templates()
    )


def test_a_script_in_a_record_reaches_the_page_escaped() -> None:
    # Given a run id, an index, a test and a message that are script elements
    script = "<script>alert(1)</script>"
    state = fold(
        promoted(script, 1, index=f"v2/{script}", tests=[{"name": script, "result": script}]),
        rejected("2", 2, index=f"v2/{script}", reason=script, message=script),
    )
    # When both pages are rendered, Then each shows it as escaped text, never as an element
    for html in (render_overview(state), render_directory(state, f"v2/{script}")):
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "<script>" not in html


def test_an_undefined_name_in_a_template_is_an_error_not_a_blank() -> None:
    with pytest.raises(UndefinedError):
        environment().from_string("{{ missing }}").render()


def test_the_state_and_the_terminal_views_need_no_jinja2(tmp_path: Path) -> None:
    # Given an install without Jinja2 (the base install: only the promoter extra brings it)
    needs_it = run_without(tmp_path, "jinja2", "-c", "import wheelgate.status.pages")
    assert "No module named 'jinja2'" in needs_it.stderr
    # Then what `wheelgate status` and `wheelgate runs` import still imports
    probe = (
        "from wheelgate.cli.main import main\n"
        "from wheelgate.status.store import StatusStore\n"
        "from wheelgate.status.summary import recent_decisions, render_decisions, render_run\n"
        "from wheelgate.status.state import StatusState\n"
        "print(render_decisions(recent_decisions(StatusState())))\n"
    )
    result = run_without(tmp_path, "jinja2", "-c", probe)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("no decisions recorded")
