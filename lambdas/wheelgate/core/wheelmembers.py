"""Whether a wheel's RECORD tells the truth about the wheel's own members. Pure.

A wheel's ``.dist-info/RECORD`` lists each file of the archive with the SHA-256 of its bytes;
``RECORD`` itself and its signature files (``RECORD.jws``, ``RECORD.p7s``) carry no hash.
Installers copy RECORD into the environment without checking it against the archive, and a
build job may write any RECORD it likes. So a wheel whose RECORD describes an honest build
while its members hold other bytes would match an environment that holds the honest build.
Evidence that compares an environment with a wheel's RECORD therefore first holds the RECORD
to the members' bytes (:func:`record_problems`): every file member listed with the hash of its
bytes, every listed path a member, nothing unlisted but RECORD and its signatures, no member
twice. Zip directory entries (names ending in ``/``) hold no bytes and are ignored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from wheelgate.core.wheelrecord import RecordRow

#: The RECORD files that list no hash of their own (PEP 376, PEP 491).
UNHASHED = frozenset({"RECORD", "RECORD.jws", "RECORD.p7s"})
#: How many problems a refusal names.
NAMED_PROBLEMS = 5


class RecordMismatch(ValueError):
    """A wheel whose RECORD does not describe its own members (``record-mismatch``)."""


@dataclass(frozen=True)
class Member:
    """One file member of a wheel: its path in the archive and the SHA-256 of its bytes."""

    path: str
    sha256: str


def record_problems(
    dist_info: str, rows: Sequence[RecordRow], members: Sequence[Member]
) -> list[str]:
    """What keeps RECORD ``rows`` from describing ``members`` exactly (module docstring);
    empty when it does. ``dist_info`` is the wheel's ``<project>-<version>.dist-info``."""
    unhashed = {f"{dist_info}/{name}" for name in UNHASHED}
    problems = [
        f"{path} is in the archive {count} times"
        for path, count in sorted(Counter(m.path for m in members).items())
        if count > 1
    ]
    listed: dict[str, str | None] = {}
    for row in rows:
        if row.path in listed and listed[row.path] != row.sha256:
            problems.append(f"RECORD lists {row.path} twice with different hashes")
        listed[row.path] = row.sha256
    present = {m.path for m in members}
    for member in members:
        if member.path in unhashed:
            continue
        if member.path not in listed:
            problems.append(f"{member.path} is in the archive but not in RECORD")
        elif listed[member.path] is None:
            problems.append(f"RECORD lists {member.path} without a hash")
        elif listed[member.path] != member.sha256:
            problems.append(f"{member.path} has other bytes than RECORD says")
    problems += [
        f"RECORD lists {path}, which the archive does not hold"
        for path in sorted(listed)
        if path not in present and path not in unhashed
    ]
    return problems


def check_record(
    filename: str, dist_info: str, rows: Sequence[RecordRow], members: Sequence[Member]
) -> None:
    """Raise :class:`RecordMismatch` naming ``filename`` and the first problems unless RECORD
    ``rows`` describe ``members`` exactly."""
    problems = record_problems(dist_info, rows, members)
    if problems:
        more = len(problems) - NAMED_PROBLEMS
        raise RecordMismatch(
            f"{filename}: its RECORD does not describe its own members: "
            + "; ".join(problems[:NAMED_PROBLEMS])
            + (f"; and {more} more" if more > 0 else "")
        )
