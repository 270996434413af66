"""Both forms of a project page come from one PEP 691 document: a page listing every kind of
entry is held to the bytes it was written as before the two forms shared that document
(``tests/unit/page_forms/``), and each form reads back to the entries it was written from."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from wheelgate.core.layout import NIGHTLY, PAGES, href
from wheelgate.index.pages import (
    IndexEntry,
    PageFormatError,
    ProjectPage,
    merge_entries,
    parse_project_json,
    render_project_html,
    render_project_json,
)
from wheelgate.index.simple_api import read_project_page

EXPECTED = Path(__file__).parent / "page_forms"
PAGE_DIR = PAGES.project_dir("v2/gfx94X-dcgpu", "torch")
ROCM = "torch-2.7.0+rocm6.4-cp312-cp312-linux_x86_64.whl"


def entry(filename: str, **kw: object) -> IndexEntry:
    fields: dict[str, object] = {
        "filename": filename,
        "url": href(PAGE_DIR, NIGHTLY.artifact("v2/gfx94X-dcgpu", filename)),
        "sha256": "a" * 64,
        "size": 1234,
        "upload_time": "2026-11-30T04:00:00.000000Z",
    }
    fields.update(kw)
    return IndexEntry(**fields)  # type: ignore[arg-type]


EVERY_KIND = ProjectPage(
    name="torch",
    entries=merge_entries(
        [],
        [
            entry("torch-2.4.0.tar.gz"),
            entry("torch-2.5.0-py3-none-any.whl", yanked='broken <build> & "more"'),
            entry("torch-2.5.1-py3-none-any.whl", yanked=True),
            entry("torch-2.5.2-py3-none-any.whl", yanked=""),
            entry(
                "torch-2.6.0-cp312-cp312-linux_x86_64.whl",
                requires_python=">=3.9,<4",
                metadata_sha256="b" * 64,
                verdict=True,
            ),
            entry(ROCM, requires_python="<3.14,>3.9", metadata_sha256="c" * 64, verdict=True),
            entry(
                "torch-2.8.0-py3-none-any.whl",
                url='https://mirror.example/torch-2.8.0-py3-none-any.whl?a=1&b="2"',
            ),
        ],
    ),
)


def test_the_html_page_of_every_kind_of_entry_is_what_it_was() -> None:
    assert render_project_html(EVERY_KIND) == (EXPECTED / "every_kind.html").read_text()


def test_the_json_page_of_every_kind_of_entry_is_what_it_was() -> None:
    assert render_project_json(EVERY_KIND) == (EXPECTED / "every_kind.json").read_text()


def test_the_json_page_reads_back_to_its_entries() -> None:
    assert parse_project_json(render_project_json(EVERY_KIND)) == EVERY_KIND


def test_both_forms_read_back_to_the_same_files() -> None:
    from_json = read_project_page(render_project_json(EVERY_KIND)).files
    from_html = read_project_page(render_project_html(EVERY_KIND), html=True).files
    # PEP 503 has no size, and an empty yank reason is a yank without one.
    assert from_html == tuple(
        replace(f, size=None, yanked=f.yanked or f.yanked == "") for f in from_json
    )
    assert from_json[5].url == "../torch-2.7.0%2Brocm6.4-cp312-cp312-linux_x86_64.whl"
    assert from_json[5].verdict_url == from_json[5].url + ".verdict.json"


@pytest.mark.parametrize("dropped", ["url", "size", "upload-time", "hashes"])
def test_a_stored_page_whose_file_lacks_what_wheelgate_writes_is_refused(dropped: str) -> None:
    doc = json.loads(render_project_json(EVERY_KIND))
    del doc["files"][2][dropped]
    with pytest.raises(PageFormatError, match="not a WheelGate PEP 691 project page"):
        parse_project_json(json.dumps(doc))
