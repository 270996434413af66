"""What a valid ``deps.yml`` asks for: each file to cache (:class:`FileTarget`) and wheel to
mirror (:class:`WheelTarget`), with the document they come from (:class:`Deps`)."""

from __future__ import annotations

from dataclasses import dataclass

from wheelgate.deps.deps_file import DepsFile
from wheelgate.deps.mirror_runs import python_run_id


@dataclass(frozen=True)
class FileTarget:
    """A file to cache: where it comes from, where it goes, what its bytes must be."""

    entry: str
    line: int
    url: str
    bucket: str
    key: str
    sha256: str
    size: int | None


@dataclass(frozen=True)
class WheelTarget:
    """A wheel to mirror into ``indexes``."""

    entry: str
    line: int
    requirement: str
    project: str
    filename: str
    url: str
    sha256: str
    size: int | None
    indexes: tuple[str, ...]


@dataclass(frozen=True)
class Deps:
    """A validated deps.yml and the targets it names."""

    document: DepsFile
    files: tuple[FileTarget, ...]
    wheels: tuple[WheelTarget, ...]

    @property
    def run_id(self) -> str | None:
        """``deps-<12 hex>``: the reviewed python section's id, or ``None`` without one.

        A hash of the section's canonical JSON (``indexes: all`` resolved): a changed section,
        or a new index directory, has another id. Each sync stages under a fresh mirror run of
        this id (:func:`~wheelgate.deps.mirror_runs.new_mirror_run_id`), which no one can guess
        in advance.
        """
        if not self.document.python:
            return None
        return python_run_id(self.document.python, self.document.validation.indexes)
