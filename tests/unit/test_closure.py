"""The run index's dependency closure: every project a Requires-Dist names, for any marker or
extra, walked over nightly's pages and metadata files, each read once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from wheelgate.core.wheelmeta import required_projects
from wheelgate.index.pages import IndexEntry, ProjectPage
from wheelgate.staging.closure import dependency_closure, metadata_key

INDEX = "v2/gfx94X-dcgpu"
TIME = "2026-01-01T00:00:00.000000Z"


def metadata(*requires: str) -> bytes:
    lines = ["Metadata-Version: 2.1", "Name: x", "Version: 1.0"]
    return ("\n".join([*lines, *(f"Requires-Dist: {r}" for r in requires)]) + "\n\n").encode()


def entry(filename: str, metadata_sha256: str | None, url: str | None = None) -> IndexEntry:
    return IndexEntry(filename, url or f"../{filename}", "a" * 64, 1, TIME, None, metadata_sha256)


def test_required_projects_names_every_requirement_whatever_its_marker_or_extra() -> None:
    content = metadata(
        "Filelock>=3",
        'pywin32; sys_platform == "win32"',
        'numpy[extra]; python_version < "3.12"',
        'opt_einsum; extra == "opt-einsum"',
        "not a requirement !!",
    )
    assert required_projects(content) == {"filelock", "pywin32", "numpy", "opt-einsum"}
    assert required_projects(metadata()) == frozenset()


def test_the_closure_walks_nightly_two_levels_deep_and_reads_each_metadata_once() -> None:
    # Given nightly's pages: mid has two releases whose wheels share metadata per release, a
    # platform-only dependency behind a marker, and projects nobody requires.
    pages = {
        "mid": ProjectPage(
            "mid",
            (
                entry("mid-1.0-py3-none-any.whl", "m1"),
                entry("mid-1.0-cp311-cp311-linux_x86_64.whl", "m1"),
                entry("mid-2.0-py3-none-any.whl", "m2"),
            ),
        ),
        "leaf": ProjectPage("leaf", (entry("leaf-1.0-py3-none-any.whl", "l1"),)),
        "winonly": ProjectPage("winonly", (entry("winonly-1.0-py3-none-any.whl", "w1"),)),
        "newdep": ProjectPage("newdep", (entry("newdep-1.0.tar.gz", None),)),
        "unrelated": ProjectPage("unrelated", (entry("unrelated-1.0-py3-none-any.whl", "u1"),)),
    }
    contents = {
        f"{INDEX}/mid-1.0-py3-none-any.whl.metadata": metadata(
            "leaf", 'winonly; sys_platform == "win32"'
        ),
        f"{INDEX}/mid-2.0-py3-none-any.whl.metadata": metadata("leaf", "newdep"),
        f"{INDEX}/leaf-1.0-py3-none-any.whl.metadata": metadata(),
        f"{INDEX}/winonly-1.0-py3-none-any.whl.metadata": metadata(),
    }
    pages_read: list[str] = []
    metadata_read: list[str] = []

    def read_page(project: str) -> ProjectPage:
        pages_read.append(project)
        return pages.get(project, ProjectPage(project, ()))

    def read_metadata(key: str) -> bytes | None:
        metadata_read.append(key)
        return contents.get(key)

    # When the closure of a run's app (which needs mid, and a project nightly lacks) is walked...
    with ThreadPoolExecutor(max_workers=2) as pool:
        closure = dependency_closure(
            INDEX, {"App": [metadata("mid", "notinnightly")]}, read_page, read_metadata, pool=pool
        )
    # Then it holds the run's project, both levels, every marker's and every release's
    # dependencies, and projects nightly lacks with an empty page; never the unrelated one.
    assert sorted(closure) == ["app", "leaf", "mid", "newdep", "notinnightly", "winonly"]
    assert closure["notinnightly"].entries == ()
    assert closure["mid"] == pages["mid"]
    assert sorted(pages_read) == sorted(closure)
    # And each distinct METADATA was read once (mid 1.0's two wheels share one); an sdist has
    # none to read.
    assert sorted(metadata_read) == sorted(contents)


def test_a_file_linked_from_elsewhere_or_without_metadata_has_no_metadata_key() -> None:
    assert metadata_key(INDEX, "mid", entry("mid-1.0.tar.gz", None)) is None
    absolute = entry("mid-1.0-py3-none-any.whl", "m1", url="https://example.com/mid-1.0.whl")
    assert metadata_key(INDEX, "mid", absolute) is None
    encoded = entry("mid-1.0+rocm-py3-none-any.whl", "m1", url="../mid-1.0%2Brocm-py3-none-any.whl")
    assert metadata_key(INDEX, "mid", encoded) == f"{INDEX}/mid-1.0+rocm-py3-none-any.whl.metadata"
