"""History runs built directly, as the promoter would record them, for the bisect tests: files
of real bytes (or just names), tests with their evidence, promoted or staged copies."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from wheelgate.core.layout import NIGHTLY, STAGING
from wheelgate.core.manifest import InstalledFile
from wheelgate.history.model import (
    HistoryFile,
    HistoryRun,
    InstallRoute,
    OfferedFile,
    RunInstall,
    RunState,
    TestRecord,
    project_and_version,
)

INDEX = "bisect"
STAGED_AT = "2026-03-02T10:00:00.000000Z"
#: Long after every test's clock.
NEVER = "2999-01-01T00:00:00.000000Z"


def history_file(
    run_id: str,
    filename: str,
    data: bytes | None = None,
    *,
    promoted: bool = False,
    expires_at: str | None = NEVER,
) -> HistoryFile:
    """A file of run ``run_id`` holding ``data`` (default: its name's bytes)."""
    body = filename.encode() if data is None else data
    project, version = project_and_version(filename)
    return HistoryFile(
        filename=filename,
        project=project,
        version=version,
        sha256=hashlib.sha256(body).hexdigest(),
        size=len(body),
        staging_key=STAGING.artifact(run_id, INDEX, filename),
        nightly_key=NIGHTLY.artifact(INDEX, filename) if promoted else None,
        expires_at=expires_at,
    )


def wheel_file(
    run_id: str, wheel: Path, *, promoted: bool = False, expires_at: str | None = NEVER
) -> HistoryFile:
    """:func:`history_file` of a wheel on disk."""
    return history_file(
        run_id, wheel.name, wheel.read_bytes(), promoted=promoted, expires_at=expires_at
    )


def evidence(
    name: str,
    files: Sequence[HistoryFile],
    *,
    result: str = "passed",
    others: Mapping[str, str] | None = None,
) -> TestRecord:
    """Test ``name`` with ``result`` that installed ``files`` and ``others`` (file name ->
    SHA-256 of files that are not the run's, in nightly under their name)."""
    extra = dict(others or {})
    return TestRecord(
        name=name,
        result=result,
        installed=(
            *(InstalledFile(sha256=f.sha256, filename=f.filename) for f in files),
            *(InstalledFile(sha256=sha, filename=n) for n, sha in extra.items()),
        ),
        nightly_keys={sha: NIGHTLY.artifact(INDEX, n) for n, sha in extra.items()},
    )


def offered_file(filename: str, data: bytes | None = None) -> OfferedFile:
    """A nightly file of a run's offer holding ``data`` (default: its name's bytes)."""
    body = filename.encode() if data is None else data
    return OfferedFile(
        filename=filename,
        project=project_and_version(filename)[0],
        sha256=hashlib.sha256(body).hexdigest(),
        nightly_key=NIGHTLY.artifact(INDEX, filename),
    )


def unchecked(reason: str) -> RunInstall:
    """The install of a run whose offer could not be checked."""
    return RunInstall(route=InstallRoute.NONE, reason=reason)


def history_run(
    run_id: str,
    files: Sequence[HistoryFile],
    tests: Sequence[TestRecord] = (),
    *,
    state: RunState | None = None,
    offer: Sequence[OfferedFile] = (),
    install: RunInstall | None = None,
) -> HistoryRun:
    """Run ``run_id`` of :data:`INDEX` with ``files`` and ``tests`` (reported, undecided,
    unless ``state`` says otherwise; staged only without tests), its ``offer`` and the
    ``install`` recorded."""
    return HistoryRun(
        offer=tuple(offer),
        install=install,
        run_id=run_id,
        index=INDEX,
        commit=hashlib.sha1(run_id.encode()).hexdigest(),  # noqa: S324 (a made-up commit)
        staged_at=STAGED_AT,
        state=state or (RunState.PENDING if tests else RunState.STAGED),
        tests=tuple(tests),
        files=tuple(files),
    )
