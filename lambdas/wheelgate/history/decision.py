"""A promoter decision as the run history records it on its run.

The promoter tells the history what it decided for one index directory's set of a run
(:class:`RunDecision`); :func:`decided_run` puts it on the run the history holds, or creates
the run when no stage entry of it was folded (a run staged before the history existed, or
whose entry is late). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from wheelgate.history.fold import history_file, union_files
from wheelgate.history.model import HistoryFile, HistoryRun, RunState, TestRecord


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
    installed) and the set's files."""

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


def decided_run(
    existing: HistoryRun | None,
    decision: RunDecision,
    *,
    staged_at: str,
    run_expiry_days: int | None,
) -> HistoryRun:
    """The run ``decision`` leaves: ``existing`` with the decision on it and each released
    file's nightly key, plus any decided file it lacks; or, with no ``existing``, a run made
    from the decision, staged at ``staged_at``.

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
    return base.model_copy(
        update={
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
    released = {(f.filename, f.sha256): f.nightly_key for f in decision.files if f.nightly_key}
    kept = [
        f.model_copy(update={"nightly_key": released.get((f.filename, f.sha256), f.nightly_key)})
        for f in run.files
    ]
    added = [
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
        for f in decision.files
    ]
    return union_files(kept, added)
