"""Both forms of a project page come from one PEP 691 document: a page listing every kind of
entry is held to the bytes it was written as before the two forms shared that document
(``tests/unit/page_forms/``), and each form reads back to the entries it was written from."""

from __future__ import annotations

from pathlib import Path

from wheelgate.core.layout import NIGHTLY, PAGES, href
from wheelgate.index.pages import (
    IndexEntry,
    ProjectPage,
    merge_entries,
    parse_project_json,
    render_project_html,
    render_project_json,
)

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
