"""The offer a stage call records (wheelgate.staging.run_index.offered_files): the nightly
files its run's index lists beside the run's own, by name and SHA-256, from the closure's
pages the call read to write the run's pages."""

from __future__ import annotations

from wheelgate.history.model import MAX_OFFER_FILES, OfferFile
from wheelgate.index.pages import IndexEntry, ProjectPage
from wheelgate.staging.run_index import offered_files


def entry(filename: str, sha: str, yanked: str | bool = False) -> IndexEntry:
    return IndexEntry(
        filename=filename,
        url=f"https://nightly.example/idx/{filename}",
        sha256=sha,
        size=1,
        upload_time="2026-01-01T00:00:00.000000Z",
        yanked=yanked,
    )


def test_every_file_the_closures_pages_list_is_offered_by_name_and_sha256() -> None:
    closure = {
        "dep": ProjectPage("dep", (entry("dep-1.0-py3-none-any.whl", "a" * 64),)),
        "pkg": ProjectPage("pkg", (entry("pkg-0.9-py3-none-any.whl", "b" * 64),)),
        "empty": ProjectPage("empty", ()),
    }

    assert offered_files(closure) == (
        OfferFile(filename="dep-1.0-py3-none-any.whl", sha256="a" * 64),
        OfferFile(filename="pkg-0.9-py3-none-any.whl", sha256="b" * 64),
    )


def test_a_yanked_file_is_not_offered() -> None:
    closure = {"dep": ProjectPage("dep", (entry("dep-1.0-py3-none-any.whl", "a" * 64, ""),))}

    assert offered_files(closure) == ()


def test_an_offer_past_the_limit_is_not_recorded_in_part() -> None:
    many = tuple(entry(f"dep-1.{i}-py3-none-any.whl", f"{i:064x}") for i in range(MAX_OFFER_FILES))
    closure = {"dep": ProjectPage("dep", many)}
    more = {"dep": ProjectPage("dep", (*many, entry("dep-9.0-py3-none-any.whl", "f" * 64)))}

    assert len(offered_files(closure)) == MAX_OFFER_FILES
    assert offered_files(more) == ()
