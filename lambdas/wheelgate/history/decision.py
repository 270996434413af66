"""A promoter decision as the run history records it on its run.

The promoter tells the history what it decided for one index directory's set of a run
(:class:`RunDecision`); :func:`decided_run` puts it on the run the history holds, or creates
the run when no stage entry of it was folded (a run staged before the history existed, or
whose entry is late, or was left out by its day's cap). Pure.

A decision is the reporter's word on its run: from then on the run's files are those the
decision names for the directory (re-runs included), and the commit time and attempt the
manifest states replace what a build job's entry said.
"""

from __future__ import annotations

from dataclasses import dataclass

from wheelgate.history.fold import history_file
from wheelgate.history.model import CommitTimeBy, HistoryFile, HistoryRun, RunState, TestRecord


@dataclass(frozen=True)
class DecidedFile:
    """A file of the decided set: its name, SHA-256 and size, and its nightly key when the
    decision released these bytes (copied, or already released)."""

    filename: str
    sha256: str
    size: int
    nightly_key: str | None = None


@dataclass(frozen=True)
class RunDecision:
    """What the promoter decided for the set of ``index`` of run ``run_id``: the state, its
    reason codes and message, when it was reported and decided, the tests (with what each
    installed) and the set's files; the commit time (UTC, with ``Z``) and attempt its manifest
    states (``None``: not stated)."""

    run_id: str
    index: str
    commit: str
    state: RunState
    decided_at: str
    reasons: tuple[str, ...] = ()
    message: str = ""
    reported_at: str | None = None
    tests: tuple[TestRecord, ...] = ()
    files: tuple[DecidedFile, ...] = ()
    commit_time: str | None = None
    attempt: int | None = None


def decided_run(
    existing: HistoryRun | None,
    decision: RunDecision,
    *,
    staged_at: str,
    run_expiry_days: int | None,
) -> HistoryRun:
    """The run ``decision`` leaves: ``existing`` with the decision on it, its files the
    decision's (each keeping the nightly key and expiry ``existing`` knew for those bytes),
    and the commit time and attempt the manifest states (``commit_time_by`` the reporter); or,
    with no ``existing``, a run made from the decision, staged at ``staged_at``. A decision
    naming no file (its manifest unreadable) leaves the files as they were.

    A promoted run stays promoted: a later refusal (a replay of its manifest) releases
    nothing and takes nothing back from nightly, so ``existing`` is returned as it is.
    """
    if (
        existing is not None
        and existing.state is RunState.PROMOTED
        and decision.state is not RunState.PROMOTED
    ):
        return existing
    base = existing or HistoryRun(
        run_id=decision.run_id,
        index=decision.index,
        commit=decision.commit,
        staged_at=staged_at,
    )
    stated: dict[str, object] = {}
    if decision.commit_time is not None:
        stated.update(commit_time=decision.commit_time, commit_time_by=CommitTimeBy.REPORTER)
    if decision.attempt is not None:
        stated["attempt"] = decision.attempt
    return base.model_copy(
        update={
            **stated,
            "state": decision.state,
            "reasons": decision.reasons,
            "message": decision.message,
            "decided_at": decision.decided_at,
            "reported_at": decision.reported_at or base.reported_at,
            "tests": decision.tests or base.tests,
            "files": _files(base, decision, run_expiry_days),
        }
    )


def _files(
    run: HistoryRun, decision: RunDecision, run_expiry_days: int | None
) -> tuple[HistoryFile, ...]:
    if not decision.files:
        return run.files
    known = {(f.filename, f.sha256): f for f in run.files}
    files = []
    for f in decision.files:
        had = known.get((f.filename, f.sha256))
        if had is not None:
            files.append(had.model_copy(update={"nightly_key": f.nightly_key or had.nightly_key}))
            continue
        files.append(
            history_file(
                run.run_id,
                run.index,
                f.filename,
                f.sha256,
                f.size,
                staged_at=run.staged_at,
                run_expiry_days=run_expiry_days,
                nightly_key=f.nightly_key,
            )
        )
    return tuple(sorted(files, key=lambda f: f.filename))
