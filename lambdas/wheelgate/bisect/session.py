"""A bisect's state on disk, so a killed bisect resumes with no step retested, and
``wheelgate bisect log`` can show the steps.

The session directory (``.wheelgate-bisect/`` by default) holds ``session.json``: the
arguments, the candidates (the history's runs, so a resumed bisect reads no history and
searches exactly the same list) and every finished step. It is rewritten whole after each
step, through a temporary file renamed over it, so a kill at any moment leaves either the old
or the new state, never half of one. The venv the steps install into lives beside it.

Bisect runs what it finds there, so the directory must be one only this user can write
(:mod:`wheelgate.bisect.private_dir`), and a new session refuses a venv it did not make.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from wheelgate.bisect.candidates import Order
from wheelgate.bisect.command import TimeoutIs
from wheelgate.bisect.private_dir import check_private, private_directory
from wheelgate.bisect.search import Bisection, Verdict
from wheelgate.history.model import HistoryRun, RunInstall, RunState

SESSION_SCHEMA: Final = "wheelgate/bisect-session/v1"
SESSION_FILE: Final = "session.json"
VENV_DIR: Final = "venv"


class SessionError(Exception):
    """A session directory that holds no session, or not one this version wrote."""


class InstallerArgs(BaseModel):
    """How runs are installed: the installer, the interpreter venvs are made with, the cache
    (its directory and size limit in bytes, ``None``: no limit) and where files are read."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    installer: Literal["pip", "uv"] = "pip"
    python: str
    cache_dir: str
    cache_size: int | None = None
    staging_url: str
    nightly_url: str | None = None


class SessionArgs(BaseModel):
    """What the bisect was asked: a resumed one is held to the same."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: str
    good: str
    bad: str
    command: tuple[str, ...]
    timeout: float | None = None
    timeout_is: TimeoutIs = TimeoutIs.BAD
    projects: tuple[str, ...] = ()
    target: str | None = None
    repo: str | None = None
    repository_url: str | None = None
    #: Install exactly the files this test installed, at every step (``--as-test``).
    as_test: str | None = None
    install: InstallerArgs


class Step(BaseModel):
    """One finished probe: the candidate (its number in the list) and its run, the verdict,
    why it was skipped (a reason code and a sentence), the command's exit (124: timed out;
    ``None``: it did not run), seconds, files downloaded (``None``: nothing was fetched), and
    the estimated total of steps at the time."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    number: int
    estimated_total: int
    candidate: int
    run_id: str
    attempt: int
    commit: str
    staged_at: str
    state: RunState
    reasons: tuple[str, ...] = ()
    verdict: Verdict
    reason: str | None = None
    message: str = ""
    exit_code: int | None = None
    seconds: float
    downloaded: int | None = None
    #: What was installed: which test's evidence, or the offer (``None``: nothing planned).
    install: RunInstall | None = None


class Session(BaseModel):
    """A bisect in progress, or finished."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    schema_: Literal["wheelgate/bisect-session/v1"] = Field(SESSION_SCHEMA, alias="schema")
    args: SessionArgs
    order: Order
    notes: tuple[str, ...] = ()
    candidates: tuple[HistoryRun, ...] = Field(min_length=2)
    steps: tuple[Step, ...] = ()

    def bisection(self) -> Bisection:
        """The search as the finished steps left it."""
        bisection = Bisection(len(self.candidates))
        for step in self.steps:
            bisection = bisection.with_verdict(step.candidate, step.verdict)
        return bisection

    def with_step(self, step: Step) -> Session:
        return self.model_copy(update={"steps": (*self.steps, step)})


def changed_candidates(saved: Sequence[HistoryRun], now: Sequence[HistoryRun]) -> list[str]:
    """How a session's candidates (``saved``) differ from the history read ``now``: each run
    gone, or whose commit or files (names and SHA-256) are not the same; empty when none."""
    current = {(r.run_id, r.attempt): r for r in now}
    changes: list[str] = []
    for run in saved:
        named = f"run {run.run_id}" + (f" attempt {run.attempt}" if run.attempt > 1 else "")
        found = current.get((run.run_id, run.attempt))
        if found is None:
            changes.append(f"{named} is no longer in the history")
        elif found.commit != run.commit:
            changes.append(f"{named}: its commit was {run.commit}, it is now {found.commit}")
        elif _files(found) != _files(run):
            gone = sorted(_files(run) - _files(found))
            added = sorted(_files(found) - _files(run))
            said = ", ".join(
                [f"no longer {name} sha256:{sha[:12]}" for name, sha in gone]
                + [f"now {name} sha256:{sha[:12]}" for name, sha in added]
            )
            changes.append(f"{named}: its files changed ({said})")
    return changes


def _files(run: HistoryRun) -> set[tuple[str, str]]:
    return {(f.filename, f.sha256) for f in run.files}


#: Names the session directory in a refusal.
SESSION_ROLE: Final = "the session directory"


class SessionStore:
    """The session directory: ``session.json`` and the steps' venv."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @property
    def path(self) -> Path:
        return self.directory / SESSION_FILE

    @property
    def venv(self) -> Path:
        return self.directory / VENV_DIR

    def exists(self) -> bool:
        return self.path.is_file()

    def create(self) -> None:
        """Make the directory for a new session. Raises
        :class:`~wheelgate.bisect.private_dir.UnsafeDirectory` when someone else owns or can
        write it, and :class:`SessionError` when it already holds a venv (a venv bisect did not
        make would be run at every step)."""
        private_directory(self.directory, SESSION_ROLE)
        if self.venv.exists() or self.venv.is_symlink():
            raise SessionError(
                f"{self.venv} exists, and a new session runs only a venv it made: remove it, "
                "or give another --session"
            )

    def load(self) -> Session:
        """The session saved here. Raises :class:`SessionError` when there is none, or it is
        not a session, and :class:`~wheelgate.bisect.private_dir.UnsafeDirectory` when someone
        else owns or can write the directory."""
        if self.directory.is_dir():
            check_private(self.directory, SESSION_ROLE)
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise SessionError(f"{self.directory} holds no bisect session") from None
        try:
            return Session.model_validate_json(text)
        except ValidationError as exc:
            raise SessionError(f"{self.path} is not a bisect session: {exc}") from None

    def save(self, session: Session) -> None:
        """Write ``session`` whole: a temporary file, flushed to disk, renamed over the old."""
        private_directory(self.directory, SESSION_ROLE)
        handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=".session-")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(session.model_dump_json(by_alias=True, indent=1))
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
