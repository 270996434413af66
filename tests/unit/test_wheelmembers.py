"""A wheel's RECORD is held to the wheel's own members, never trusted alone."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from wheelgate.core.wheelmembers import Member, RecordMismatch, record_problems
from wheelgate.core.wheelrecord import RecordRow
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.staging.wheelbytes import WheelUnreadable, verified_archive

INFO = "app-1.0.dist-info"
A, B = "a" * 64, "b" * 64


def rows(*pairs: tuple[str, str | None]) -> tuple[RecordRow, ...]:
    return tuple(RecordRow(path, sha) for path, sha in pairs)


def test_a_record_that_lists_every_member_with_its_bytes_has_no_problem() -> None:
    members = [Member("app/__init__.py", A), Member(f"{INFO}/METADATA", B)]
    record = rows(("app/__init__.py", A), (f"{INFO}/METADATA", B), (f"{INFO}/RECORD", None))
    assert record_problems(INFO, record, [*members, Member(f"{INFO}/RECORD", A)]) == []


@pytest.mark.parametrize(
    ("record", "members", "problem"),
    [
        # The same RECORD, other member bytes: an honest build's RECORD on other code
        (
            (("app/__init__.py", A),),
            [Member("app/__init__.py", B)],
            "app/__init__.py has other bytes than RECORD says",
        ),
        ((), [Member("app/evil.py", A)], "app/evil.py is in the archive but not in RECORD"),
        (
            (("app/__init__.py", A), ("app/gone.py", B)),
            [Member("app/__init__.py", A)],
            "RECORD lists app/gone.py, which the archive does not hold",
        ),
        (
            (("app/__init__.py", None),),
            [Member("app/__init__.py", A)],
            "RECORD lists app/__init__.py without a hash",
        ),
        (
            (("app/__init__.py", A),),
            [Member("app/__init__.py", A), Member("app/__init__.py", B)],
            "app/__init__.py is in the archive 2 times",
        ),
        (
            (("app/__init__.py", A), ("app/__init__.py", B)),
            [Member("app/__init__.py", A)],
            "RECORD lists app/__init__.py twice with different hashes",
        ),
    ],
)
def test_a_record_that_does_not_describe_the_members_is_refused(
    record: tuple[tuple[str, str | None], ...], members: list[Member], problem: str
) -> None:
    assert problem in record_problems(INFO, rows(*record), members)


def test_signature_files_and_directory_entries_are_not_held_to_the_record(tmp_path: Path) -> None:
    # Given a wheel with a RECORD.jws signature RECORD does not list, and a directory entry
    wheel = build_wheel(tmp_path, "app", "1.0")
    signed = tmp_path / "signed" / wheel.name
    signed.parent.mkdir()
    with zipfile.ZipFile(wheel) as given, zipfile.ZipFile(signed, "w") as written:
        written.writestr("app/", b"")
        for info in given.infolist():
            written.writestr(info, given.read(info))
        written.writestr("app-1.0.dist-info/RECORD.jws", b"signature")
    # Then its RECORD is verified all the same
    with zipfile.ZipFile(signed) as archive:
        verified = verified_archive(archive, signed.name, "0" * 64)
    assert verified.content.dist_info == "app-1.0.dist-info"


def test_a_real_wheel_with_an_honest_record_is_verified_and_a_lying_one_refused(
    tmp_path: Path,
) -> None:
    honest = build_wheel(tmp_path, "app", "1.0", module_source='BUILD = "honest"\n')
    with zipfile.ZipFile(honest) as archive:
        assert verified_archive(archive, honest.name, "0" * 64).content.rows
    lying = tmp_path / "lying" / honest.name
    lying.parent.mkdir()
    with zipfile.ZipFile(honest) as given, zipfile.ZipFile(lying, "w") as written:
        for info in given.infolist():
            evil = info.filename == "app/__init__.py"
            written.writestr(info, b'BUILD = "evil"\n' if evil else given.read(info))
    with zipfile.ZipFile(lying) as archive, pytest.raises(RecordMismatch) as refused:
        verified_archive(archive, lying.name, "0" * 64)
    assert str(refused.value) == (
        f"{lying.name}: its RECORD does not describe its own members: "
        "app/__init__.py has other bytes than RECORD says"
    )


def test_an_archive_without_one_record_of_its_project_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "app-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as written:
        written.writestr("app/__init__.py", b"")
    with zipfile.ZipFile(path) as archive, pytest.raises(WheelUnreadable, match="found 0"):
        verified_archive(archive, path.name, "0" * 64)
