"""A shim for moto 5.2.5: its Distributed Map applies no tolerated-failure threshold.

moto parses ``ToleratedFailureCount``/``ToleratedFailurePercentage`` (and their ``...Path``
forms) into the Map Run record, but its item worker
(``iteration/itemprocessor/distributed_item_processor_worker.py``) only counts a failed item:
the Map Run goes on and the Map state succeeds, whatever failed. On AWS
(docs.aws.amazon.com/step-functions/latest/dg/maprun-fail-threshold.html):

- a Map Run fails with ``States.ExceedToleratedFailureThreshold`` once its failed or timed-out
  items exceed the tolerated count, or their share of all its items exceeds the tolerated
  percentage; with both given, exceeding either fails it;
- both default to zero: without either, one failed item fails the Map Run (and the state's
  Catch sees that error). Step Functions may still run child executions already started.

:func:`tolerated_failure_applied` patches moto, in this process, to do that: after an item's
child execution fails, the worker compares the Map Run's failed and timed-out items with the
thresholds the definition gave (a threshold not given is not applied, unless neither is; then
both are zero) and, when one is exceeded, ends the Map Run with that error, as an inline Map's
failed iteration ends its map. The error's Cause is this shim's wording (AWS's is not
documented). Only ``ItemProcessor`` maps are patched (not the legacy ``Iterator`` field).

``tests/integration/test_state_machine.py::test_moto_still_ignores_a_failed_distributed_map_item``
is the canary: the day it fails, moto applies the thresholds itself: delete this module.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

from moto.stepfunctions.parser.api import HistoryEventType, MapRunFailedEventDetails
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
    FailureEvent,
    FailureEventException,
)
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import (
    StatesErrorName,
)
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
    StatesErrorNameType,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor.distributed_item_processor import (  # noqa: E501
    DistributedItemProcessor,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor.distributed_item_processor_worker import (  # noqa: E501
    DistributedItemProcessorWorker,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.state_map import StateMap
from moto.stepfunctions.parser.asl.component.state.exec.state_map.tolerated_failure import (
    ToleratedFailureCountDecl,
    ToleratedFailurePercentageDecl,
)
from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
from moto.stepfunctions.parser.asl.eval.program_state import ProgramEnded, ProgramStopped

#: The error a Map Run fails with when it exceeds its tolerated-failure threshold.
EXCEEDED = StatesErrorNameType.StatesExceedToleratedFailureThreshold
#: Where the shim keeps which thresholds the definition gave (count, percentage).
_GIVEN = "_wheelgate_tolerance_given"


def threshold_exceeded(
    failed: int, total: int, *, count: int | None, percentage: float | None
) -> bool:
    """Whether ``failed`` of ``total`` items exceed the tolerated ``count`` or ``percentage``
    (``None``: that threshold is not applied)."""
    if count is not None and failed > count:
        return True
    return percentage is not None and total > 0 and failed * 100 / total > percentage


def _from_state_props(original: Any) -> Any:
    def from_state_props(self: StateMap, state_props: Any) -> None:
        original(self, state_props)
        given = (
            state_props.get(ToleratedFailureCountDecl) is not None,
            state_props.get(ToleratedFailurePercentageDecl) is not None,
        )
        setattr(self.iteration_component, _GIVEN, given)

    return from_state_props


def _create_worker(original: Any) -> Any:
    def create_worker(
        self: DistributedItemProcessor, env: Any, eval_input: Any, job_pool: Any
    ) -> DistributedItemProcessorWorker:
        worker = original(self, env, eval_input, job_pool)
        setattr(worker, _GIVEN, getattr(self, _GIVEN, (False, False)))
        return worker

    return create_worker


def _eval_job(original: Any) -> Any:
    def eval_job(self: DistributedItemProcessorWorker, env: Any, job: Any) -> None:
        original(self, env, job)
        if isinstance(env.program_state(), (ProgramEnded, ProgramStopped)):
            return  # succeeded, or aborted with its execution: not a failure
        record = self._map_run_record
        failed = record.item_counter.failed.get() + record.item_counter.timed_out.get()
        total = self._job_pool._jobs_number
        count_given, percentage_given = getattr(self, _GIVEN, (False, False))
        neither = not (count_given or percentage_given)
        count = record.tolerated_failure_count if count_given or neither else None
        percentage = record.tolerated_failure_percentage if percentage_given or neither else None
        if not threshold_exceeded(failed, total, count=count, percentage=percentage):
            return
        cause = (
            f"{failed} of {total} item(s) failed or timed out, more than tolerated "
            f"(ToleratedFailureCount {count}, ToleratedFailurePercentage {percentage})"
        )
        # A job whose output is an exception ends the job pool: the Map Run raises it, and the
        # Map state's Retry and Catch see its error.
        job.job_output = FailureEventException(
            failure_event=FailureEvent(
                env=self._env,
                error_name=StatesErrorName(typ=EXCEEDED),
                event_type=HistoryEventType.MapRunFailed,
                event_details=EventDetails(
                    mapRunFailedEventDetails=MapRunFailedEventDetails(
                        error=EXCEEDED.to_name(), cause=cause
                    )
                ),
            )
        )

    return eval_job


@contextmanager
def tolerated_failure_applied() -> Iterator[None]:
    """While entered, moto's Distributed Maps apply their tolerated-failure thresholds as AWS
    does (definitions are parsed again when an execution starts: the shim applies to the
    executions started meanwhile)."""
    patches = (
        (StateMap, "from_state_props", _from_state_props),
        (DistributedItemProcessor, "_create_worker", _create_worker),
        (DistributedItemProcessorWorker, "_eval_job", _eval_job),
    )
    with ExitStack() as stack:
        for owner, name, wrap in patches:
            stack.enter_context(mock.patch.object(owner, name, wrap(getattr(owner, name))))
        yield
