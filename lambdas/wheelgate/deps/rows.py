"""The lines of a ``wheelgate deps`` plan or summary: for each file or wheel, what was (or would
be) done with it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Action = Literal[
    "upload", "stage", "skip", "conflict", "uploaded", "staged", "skipped", "failed", "held"
]


@dataclass(frozen=True)
class Row:
    """One line of the plan or the summary."""

    entry: str
    target: str
    action: Action
    bytes: int = 0
    seconds: float = 0.0
    detail: str = ""
