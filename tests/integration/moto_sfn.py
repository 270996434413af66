"""moto's Step Functions running a state machine, its Lambda tasks run by a handler in this process.

moto 5.2.5 interprets ASL (Choice, Distributed Map with an S3 ItemReader, Retry, Catch, Fail)
when its configuration says ``execute_state_machine`` (:func:`executing_state_machines`). A
``lambda:invoke`` task then calls moto's Lambda API over HTTP (``localhost:$MOTO_PORT``: the
in-process moto server of the ``stack`` fixture), whose ``LambdaBackend.invoke`` would run the
function in Docker. :class:`LambdaRoute` replaces that one method: the invocation of one function
runs a Python handler in this process, and an exception is reported the way Lambda reports an
unhandled one (the ``X-Amz-Function-Error`` header, ``errorType`` = the exception's class name and
``errorMessage`` in the payload). moto's task then fails with ``errorType`` as its error name, as
on AWS, so the state machine's Retry and Catch match the names they match there.

A Retry's interval is recorded instead of slept (:class:`RetryWaits`): the tests assert the
intervals the definition asks for without waiting them out.
"""

from __future__ import annotations

import json
import os
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any
from unittest import mock

from moto.awslambda.models import LambdaBackend
from moto.core.config import default_user_config
from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

from tests.infra.resolve import Resolver

#: A handler as Lambda calls it: the event and a context.
Handler = Callable[[dict[str, Any], Any], Any]
#: Statuses of an execution that has not ended.
RUNNING = "RUNNING"


@contextmanager
def executing_state_machines(port: int) -> Iterator[None]:
    """moto's Step Functions (the server listening on ``port`` in this process) executes the state
    machines created meanwhile: its tasks call back into that server (``MOTO_PORT``)."""
    config = default_user_config.setdefault("stepfunctions", {})
    before = dict(config)
    with mock.patch.dict(os.environ, {"MOTO_PORT": str(port)}):
        config["execute_state_machine"] = True
        try:
            yield
        finally:
            config.clear()
            config.update(before)


@dataclass(frozen=True)
class StateMachineSpec:
    """A state machine of a synthesized template, its intrinsics resolved (``tests.infra.resolve``):
    what ``CreateStateMachine`` takes, and the ARN of the function its tasks invoke."""

    name: str
    definition: dict[str, Any]
    role_arn: str
    state_machine_type: str
    function_arn: str

    @classmethod
    def from_template(cls, template: dict[str, Any]) -> StateMachineSpec:
        """The template's one state machine. Raises ``ValueError`` unless it has exactly one,
        whose tasks invoke exactly one function."""
        resolver = Resolver(template)
        machines = list(resolver.of_type("AWS::StepFunctions::StateMachine").values())
        if len(machines) != 1:
            raise ValueError(f"the template has {len(machines)} state machines, not one")
        props = machines[0]["Properties"]
        definition: dict[str, Any] = json.loads(resolver.resolve(props["DefinitionString"]))
        functions = {
            state["Parameters"]["FunctionName"]
            for state in task_states(definition)
            if state["Resource"].endswith(":states:::lambda:invoke")
        }
        if len(functions) != 1:
            raise ValueError(f"the state machine invokes {sorted(functions)}, not one function")
        return cls(
            name=props["StateMachineName"],
            definition=definition,
            role_arn=resolver.resolve(props["RoleArn"]),
            state_machine_type=props["StateMachineType"],
            function_arn=functions.pop(),
        )

    def create(self, client: Any) -> str:
        """Create it with the ``stepfunctions`` ``client``; return its ARN."""
        created = client.create_state_machine(
            name=self.name,
            definition=json.dumps(self.definition),
            roleArn=self.role_arn,
            type=self.state_machine_type,
        )
        return str(created["stateMachineArn"])


def task_states(definition: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every Task state of ``definition``, those of Map item processors included."""
    for state in definition["States"].values():
        if state["Type"] == "Task":
            yield state
        processor = state.get("ItemProcessor") or state.get("Iterator")
        if processor is not None:
            yield from task_states(processor)


@dataclass(frozen=True)
class LambdaContext:
    """The attributes of a Lambda context the Powertools decorators read."""

    invoked_function_arn: str
    function_name: str
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def get_remaining_time_in_millis(self) -> int:
        # The promoter function's timeout (stacks/promoter.py).
        return 900_000


def unhandled_error(exc: BaseException, request_id: str) -> dict[str, Any]:
    """The payload Lambda's Python runtime returns for an exception the handler raised."""
    return {
        "errorMessage": str(exc),
        "errorType": type(exc).__name__,
        "requestId": request_id,
        "stackTrace": traceback.format_tb(exc.__traceback__),
    }


class LambdaRoute:
    """moto's invocations of ``function_arn`` run :attr:`handler` in this process while
    :meth:`installed`; other functions keep moto's own ``invoke``.

    A handler's exception is the invocation's function error, as Lambda reports it; its return
    value is the payload (JSON).
    """

    def __init__(self, function_arn: str) -> None:
        self.function_arn = function_arn
        self.handler: Handler | None = None

    @contextmanager
    def installed(self) -> Iterator[LambdaRoute]:
        original = LambdaBackend.invoke
        route = self

        def invoke(
            backend: LambdaBackend,
            function_name: str,
            qualifier: str | None,
            body: Any,
            headers: Any,
            response_headers: dict[str, str],
        ) -> bytes | None:
            if function_name not in (route.function_arn, route.function_name):
                return original(backend, function_name, qualifier, body, headers, response_headers)
            payload = route.invoke(body or "{}", response_headers)
            response_headers["Content-Length"] = str(len(payload))
            return payload

        with mock.patch.object(LambdaBackend, "invoke", invoke):
            yield self

    @property
    def function_name(self) -> str:
        return self.function_arn.rsplit(":", 1)[-1]

    def invoke(self, body: str | bytes, response_headers: dict[str, str]) -> bytes:
        """Run the handler on the JSON event ``body``: its result, or the error payload with the
        ``X-Amz-Function-Error`` header set."""
        if self.handler is None:
            raise RuntimeError(f"no handler routed for {self.function_arn}")
        context = LambdaContext(
            invoked_function_arn=self.function_arn, function_name=self.function_name
        )
        try:
            result = self.handler(json.loads(body), context)
        except Exception as exc:
            response_headers["X-Amz-Function-Error"] = "Unhandled"
            return json.dumps(unhandled_error(exc, context.aws_request_id)).encode()
        return json.dumps(result).encode()


class RetryWaits:
    """The waits moto's Retry asks for, recorded instead of slept while :meth:`recorded`."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self._lock = threading.Lock()

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.seconds.append(seconds)

    @contextmanager
    def recorded(self) -> Iterator[RetryWaits]:
        # retrier_decl calls time.sleep(interval) before each retry: its own `time`, replaced.
        with mock.patch.object(retrier_decl, "time", SimpleNamespace(sleep=self.sleep)):
            yield self


def ended_execution(client: Any, execution_arn: str, timeout: float = 120) -> dict[str, Any]:
    """``DescribeExecution`` of ``execution_arn`` once it is no longer running. Raises
    ``TimeoutError`` if it still runs after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        described: dict[str, Any] = client.describe_execution(executionArn=execution_arn)
        if described["status"] != RUNNING:
            return described
        if time.monotonic() > deadline:
            raise TimeoutError(f"execution {execution_arn} still running after {timeout}s")
        time.sleep(0.1)
