"""What a bisect concluded, as ``wheelgate bisect run --json`` prints it and
``docs/bisect-result.schema.json`` describes it. Pure.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from wheelgate.bisect.candidates import Order
from wheelgate.bisect.search import Conclusion, Outcome, Verdict
from wheelgate.bisect.session import Session, Step
from wheelgate.history.model import HistoryRun, RunState

RESULT_SCHEMA: Final = "wheelgate/bisect-result/v1"


class ResultRun(BaseModel):
    """A run the result names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str
    attempt: int
    commit: str
    staged_at: str
    state: RunState
    reasons: tuple[str, ...] = ()


class SkippedRun(ResultRun):
    """A run that was skipped, and why: a reason code and a sentence."""

    reason: str
    message: str = ""


class BisectResult(BaseModel):
    """The outcome (``found``, ``inconclusive``, or an end that did not hold), the first bad
    and last good run, the runs the first bad could be, the skipped runs, and every step."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    schema_: Literal["wheelgate/bisect-result/v1"] = Field(RESULT_SCHEMA, alias="schema")
    index: str
    good: str
    bad: str
    order: Order
    candidates: int
    conclusion: Conclusion
    message: str
    first_bad: ResultRun | None = None
    last_good: ResultRun | None = None
    could_be: tuple[ResultRun, ...] = ()
    compare_url: str | None = None
    skipped: tuple[SkippedRun, ...] = ()
    notes: tuple[str, ...] = ()
    steps: tuple[Step, ...] = ()


def result_run(run: HistoryRun) -> ResultRun:
    return ResultRun(
        run_id=run.run_id,
        attempt=run.attempt,
        commit=run.commit,
        staged_at=run.staged_at,
        state=run.state,
        reasons=run.reasons,
    )


def _skipped(run: HistoryRun, step: Step) -> SkippedRun:
    return SkippedRun(
        **result_run(run).model_dump(), reason=step.reason or "", message=step.message
    )


def _message(session: Session, outcome: Outcome) -> str:
    good, bad = session.candidates[0], session.candidates[-1]
    match outcome.conclusion:
        case Conclusion.FOUND:
            return "the first bad run is found"
        case Conclusion.INCONCLUSIVE:
            return (
                f"skipped runs hide the first bad run: it could be any of "
                f"{len(outcome.could_be)} runs"
            )
        case Conclusion.GOOD_END_IS_BAD:
            return f"the good end, run {good.run_id}, is bad: give an older --good"
        case Conclusion.BAD_END_IS_GOOD:
            return f"the bad end, run {bad.run_id}, is good: give a newer --bad"
        case Conclusion.END_SKIPPED:
            step = next(s for s in session.steps if s.verdict is Verdict.SKIP)
            which = "good" if step.candidate == 0 else "bad"
            return (
                f"the {which} end, run {step.run_id}, was skipped ({step.reason}: "
                f"{step.message}): give another --{which}"
            )


def bisect_result(
    session: Session, outcome: Outcome, *, repository_url: str | None = None
) -> BisectResult:
    """The result of ``session`` ending with ``outcome``; ``repository_url`` (a GitHub-like
    repository) gives a compare URL from the last good to the first bad commit."""
    runs = session.candidates
    first_bad = None if outcome.first_bad is None else runs[outcome.first_bad]
    last_good = None if outcome.last_good is None else runs[outcome.last_good]
    compare = None
    if repository_url and first_bad is not None and last_good is not None:
        compare = f"{repository_url.rstrip('/')}/compare/{last_good.commit}...{first_bad.commit}"
    return BisectResult(
        schema=RESULT_SCHEMA,
        index=session.args.index,
        good=session.args.good,
        bad=session.args.bad,
        order=session.order,
        candidates=len(runs),
        conclusion=outcome.conclusion,
        message=_message(session, outcome),
        first_bad=None if first_bad is None else result_run(first_bad),
        last_good=None if last_good is None else result_run(last_good),
        could_be=tuple(result_run(runs[i]) for i in outcome.could_be),
        compare_url=compare,
        skipped=tuple(
            _skipped(runs[s.candidate], s) for s in session.steps if s.verdict is Verdict.SKIP
        ),
        notes=session.notes,
        steps=session.steps,
    )


def json_schema() -> dict[str, Any]:
    """The JSON Schema of :class:`BisectResult` (docs/bisect-result.schema.json)."""
    schema = BisectResult.model_json_schema(by_alias=True, mode="serialization")
    schema["$id"] = "urn:wheelgate:schema:bisect-result:v1"
    schema["title"] = "WheelGate bisect result v1"
    return schema


def schema_text() -> str:
    """:func:`json_schema` as the docs keep it."""
    return json.dumps(json_schema(), indent=2) + "\n"
