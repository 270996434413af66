from __future__ import annotations

import json
from urllib.parse import unquote

from pypi_simple import IndexPage
from pypi_simple import ProjectPage as SimpleProjectPage

from wheelgate.core.layout import NIGHTLY, PAGES, href, key_url, quote_key
from wheelgate.index.pages import (
    IndexEntry,
    ProjectPage,
    absolute,
    merge_entries,
    parse_project_json,
    render_project_html,
    render_project_json,
    render_root_html,
    render_root_json,
    staging_view,
)
from wheelgate.index.simple_api import read_root_page

SHA = "a" * 64
META = "b" * 64


def entry(filename: str, url: str | None = None, **kw: object) -> IndexEntry:
    fields: dict[str, object] = {
        "filename": filename,
        "url": url or f"../{filename}",
        "sha256": SHA,
        "size": 1234,
        "upload_time": "2026-11-30T04:00:00.000000Z",
    }
    fields.update(kw)
    return IndexEntry(**fields)  # type: ignore[arg-type]


WHEEL = entry(
    "torch-2.7.0-cp312-cp312-linux_x86_64.whl", requires_python=">=3.9", metadata_sha256=META
)
YANKED = entry("torch-2.6.0-cp312-cp312-linux_x86_64.whl", yanked="broken build")
SDIST = entry("torch-2.5.0.tar.gz")
PAGE = ProjectPage(name="torch", entries=merge_entries([], [WHEEL, YANKED, SDIST]))


def test_entries_are_sorted_by_version() -> None:
    assert [e.filename for e in PAGE.entries] == [SDIST.filename, YANKED.filename, WHEEL.filename]


def test_html_page_carries_every_field_for_pip() -> None:
    html = render_project_html(PAGE)
    assert '<meta name="pypi:repository-version" content="1.1">' in html
    assert f'href="../{WHEEL.filename}#sha256={SHA}"' in html
    assert 'data-requires-python="&gt;=3.9"' in html
    assert f'data-core-metadata="sha256={META}"' in html
    assert f'data-dist-info-metadata="sha256={META}"' in html
    assert 'data-yanked="broken build"' in html
    assert 'data-upload-time="2026-11-30T04:00:00.000000Z"' in html


def test_html_page_parses_with_pypi_simple() -> None:
    page = SimpleProjectPage.from_html(
        "torch", render_project_html(PAGE), base_url="https://x/v2/torch/"
    )
    by_name = {p.filename: p for p in page.packages}
    wheel = by_name[WHEEL.filename]
    assert wheel.url == f"https://x/v2/{WHEEL.filename}"
    assert wheel.digests == {"sha256": SHA}
    assert wheel.requires_python == ">=3.9"
    assert wheel.metadata_digests == {"sha256": META}
    assert by_name[YANKED.filename].is_yanked
    assert by_name[YANKED.filename].yanked_reason == "broken build"
    assert page.repository_version == "1.1"


def test_json_page_follows_pep_691_and_700() -> None:
    doc = json.loads(render_project_json(PAGE))
    assert doc["meta"] == {"api-version": "1.1"}
    assert doc["name"] == "torch"
    assert doc["versions"] == ["2.5.0", "2.6.0", "2.7.0"]
    wheel = doc["files"][-1]
    assert wheel["hashes"] == {"sha256": SHA}
    assert wheel["core-metadata"] == {"sha256": META}
    assert wheel["size"] == 1234
    assert wheel["upload-time"] == "2026-11-30T04:00:00.000000Z"
    assert doc["files"][0]["core-metadata"] is False
    assert doc["files"][1]["yanked"] == "broken build"


def test_json_page_parses_with_pypi_simple_and_round_trips() -> None:
    text = render_project_json(PAGE)
    parsed = SimpleProjectPage.from_json_data(json.loads(text), base_url="https://x/v2/torch/")
    assert [p.filename for p in parsed.packages] == [e.filename for e in PAGE.entries]
    wheel = parsed.packages[-1]
    assert wheel.size == 1234
    assert wheel.upload_time is not None
    assert wheel.metadata_digests == {"sha256": META}
    assert parse_project_json(text) == PAGE


def test_root_pages_list_projects() -> None:
    html = render_root_html(["torch", "filelock"])
    index = IndexPage.from_html(html)
    assert sorted(index.projects) == ["filelock", "torch"]
    assert read_root_page(render_root_json(["torch", "filelock"])) == ("filelock", "torch")


def test_staging_view_keeps_own_entries_over_borrowed_nightly_ones() -> None:
    nightly = absolute([WHEEL, SDIST], "https://nightly/v2/torch/")
    assert nightly[0].url == f"https://nightly/v2/{WHEEL.filename}"
    staged = entry(WHEEL.filename, url=f"../../runs/1/v2/{WHEEL.filename}")
    new = entry("torch-2.8.0-cp312-cp312-linux_x86_64.whl", url="../../runs/1/v2/t.whl")
    result = staging_view(nightly, add=[staged, new])(())
    urls = {e.filename: e.url for e in result}
    assert urls[WHEEL.filename] == staged.url  # staging wins the clash
    assert urls[SDIST.filename].startswith("https://nightly/")
    # Re-merging with newer nightly entries drops the stale borrowed ones, keeps own.
    again = staging_view(nightly[:1], drop=[WHEEL.filename])(result)
    assert {e.filename for e in again} == {WHEEL.filename, new.filename}
    assert {e.url for e in again if e.filename == WHEEL.filename} == {nightly[0].url}


ROCM = "torch-2.7.0+rocm6.4-cp312-cp312-linux_x86_64.whl"


def test_encoded_hrefs_reach_both_formats_with_the_fragment_intact() -> None:
    # Given the entry promotion writes for a file whose name has a '+' (a local version)...
    page_dir = PAGES.project_dir("v2/gfx94X-dcgpu", "torch")
    rocm = entry(ROCM, url=href(page_dir, NIGHTLY.artifact("v2/gfx94X-dcgpu", ROCM)))
    page = ProjectPage(name="torch", entries=(rocm,))
    # ...both pages link it with %2B, relative, the HTML one with its #sha256= fragment.
    html = render_project_html(page)
    assert f'href="../torch-2.7.0%2Brocm6.4-cp312-cp312-linux_x86_64.whl#sha256={SHA}"' in html
    assert 'href="../torch-2.7.0+' not in html
    doc = json.loads(render_project_json(page))
    assert doc["files"][0]["url"] == "../torch-2.7.0%2Brocm6.4-cp312-cp312-linux_x86_64.whl"
    assert doc["files"][0]["filename"] == ROCM
    # Reading the page back and writing it again changes nothing (no %252B).
    assert render_project_json(parse_project_json(render_project_json(page))) == (
        render_project_json(page)
    )
    # What clients make of it: the link names the file with its '+'.
    (package,) = SimpleProjectPage.from_html("torch", html, base_url=NIGHTLY_PAGE).packages
    assert unquote(package.url.split("#")[0]).endswith("/" + ROCM)


NIGHTLY_PAGE = "https://nightly.example/v2/gfx94X-dcgpu/torch/"


def test_absolute_urls_on_a_run_page_are_encoded_exactly_once() -> None:
    # Given nightly's page (encoded relative hrefs) borrowed by a run's page...
    nightly = entry(ROCM, url="../" + quote_key(ROCM))
    borrowed = absolute([nightly], key_url("https://nightly.example/", "v2/gfx+x/torch/"))
    expected = (
        "https://nightly.example/v2/gfx%2Bx/torch-2.7.0%2Brocm6.4-cp312-cp312-linux_x86_64.whl"
    )
    assert borrowed[0].url == expected
    # ...making it absolute again, or refreshing the run's page, keeps one encoding.
    assert absolute(borrowed, "https://elsewhere.example/x/") == borrowed
    page = staging_view(borrowed)(())
    again = staging_view(absolute(page, "https://staging.example/runs/1/v2/torch/"))(page)
    assert [e.url for e in again] == [expected]
    assert "%25" not in render_project_html(ProjectPage("torch", again))


def test_hrefs_are_still_html_escaped() -> None:
    # An absolute URL may carry a query; the page escapes what HTML needs escaped.
    odd = entry(ROCM, url='https://mirror.example/f.whl?a=1&b="2"')
    html = render_project_html(ProjectPage("torch", (odd,)))
    assert 'href="https://mirror.example/f.whl?a=1&amp;b=&quot;2&quot;#sha256=' in html


def test_rebuild_rewrites_a_raw_link_left_by_an_older_page() -> None:
    from wheelgate.index.rebuild import reconcile

    # Given a page written before links were encoded, and the entry a rescan makes...
    old = entry(ROCM, url=f"../{ROCM}", yanked="bad kernels")
    scanned = entry(ROCM, url=href("v2/x/torch/", f"v2/x/{ROCM}"))
    # ...the rebuilt entry links the file encoded and keeps the page's yank state.
    (rebuilt,) = reconcile((old,), [scanned])
    assert rebuilt.url == "../torch-2.7.0%2Brocm6.4-cp312-cp312-linux_x86_64.whl"
    assert rebuilt.yanked == "bad kernels"
