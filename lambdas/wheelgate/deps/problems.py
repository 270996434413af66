"""What is wrong with a ``deps.yml``: each problem with its line and entry, and the error that
lists them all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class DepsProblem:
    """One thing wrong with deps.yml: 1-based line, the entry (``files[2]``) and a sentence."""

    line: int
    entry: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.entry}: {self.message}"


class DepsInvalid(ValueError):
    """deps.yml breaks its rules; ``problems`` lists every one, in line order."""

    def __init__(self, problems: Sequence[DepsProblem]) -> None:
        self.problems = sorted(set(problems))
        super().__init__("\n".join(str(p) for p in self.problems))
