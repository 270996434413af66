"""The installer seam (:class:`RunInstaller`): what one bisect step needs from the installer,
a plan of exact files for a run (:class:`InstallPlan`), fetched into the cache, installed into
a venv; or the reason the run is skipped (:class:`SkipRun`).

The search (:mod:`wheelgate.bisect`) never blames a run for WheelGate's own trouble: whatever
keeps a run from being installed exactly (:class:`SkipRun` and its reason codes) skips it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from wheelgate.history.model import HistoryRun, InstallRoute

#: Why a run is skipped, never counted bad (docs/bisect.md lists them).
SKIP_MISSING_PROJECT = "missing-project"
SKIP_MISSING_TARGET = "missing-target"
SKIP_NO_EVIDENCE = "no-evidence"
#: A run never reported whose offer could not be checked (or was never recorded).
SKIP_NO_OFFER = "no-offer"
SKIP_EXPIRED = "expired"
SKIP_MISSING_FILE = "missing-file"
SKIP_HASH_MISMATCH = "hash-mismatch"
SKIP_INSTALL_FAILED = "install-failed"
#: The command under test asked for it (exit 125), or timed out under ``--timeout-is skip``.
SKIP_BY_COMMAND = "command-skip"


class SkipRun(Exception):
    """A run that cannot be installed exactly: ``reason`` is a code above, ``message`` says
    what was wrong in a sentence."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class PlannedFile:
    """A file to install, and where its bytes are read from (staging or nightly)."""

    filename: str
    sha256: str
    size: int
    url: str


@dataclass(frozen=True)
class InstallPlan:
    """Exactly what installing ``run`` puts in a venv, every file pinned by hash.

    ``route`` ``evidence``: ``files`` are what test ``test`` installed, installed as they are.
    ``route`` ``offer``: ``files`` are what the run's index offered (its own staged files and
    the nightly files it offered beside them, those the environment takes), and a resolver
    that sees only them picks among them what installs ``requirements`` (the run's projects).
    """

    run: HistoryRun
    files: tuple[PlannedFile, ...]
    test: str | None = None
    route: InstallRoute = InstallRoute.EVIDENCE
    requirements: tuple[str, ...] = ()


class RunInstaller(Protocol):
    """Plans, fetches and installs runs. Each method raises :class:`SkipRun` when the run
    cannot be installed exactly; ``fetch`` may run in another thread while a step's command
    runs (prefetching the next candidates)."""

    def plan(self, run: HistoryRun, *, as_test: str | None = None) -> InstallPlan: ...

    def fetch(self, plan: InstallPlan) -> int:
        """Bring the plan's files into the cache; the number downloaded (0: all cached)."""
        ...

    def install(self, plan: InstallPlan, venv: Path) -> None:
        """Make ``venv`` hold exactly the plan's files (creating it, or reusing it)."""
        ...
