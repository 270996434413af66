"""Local mode's fan-out executions: the state machine's order and retries, run in this process.

A deployed stack runs a fan-out promotion's steps on its Step Functions state machine, which
invokes the promoter function once per step. Local mode has no Step Functions, so
:class:`InProcessLauncher` takes the state machine's place: the hash items, then the copy items,
then publish, each step retried with the state machine's numbers, and the conclude step when
a map or publish failed. :func:`in_process_handler` is the promoter function's handler with
such a launcher in place of Step Functions; ``wheelgate local --fanout-min-files`` runs it. The
production modules know nothing of this: the handler takes a launcher factory
(:data:`~wheelgate.lambda_function.handler.LauncherFactory`) and this module passes its own.

Why not moto's Step Functions on the synthesized definition, as the tests run it: that needs
the CDK app synthesized (aws-cdk-lib and Node, which ``wheelgate[local]`` does not install) and
two more patches of moto's internals (its Lambda runs functions in Docker; its Distributed Map
lets an item fail). ``docs/architecture.md`` says it in full; the tests in
``tests/integration/test_state_machine.py`` hold this engine to the definition.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from functools import cache
from typing import Any, Literal

from wheelgate.core.errors import TransientError
from wheelgate.core.fanout_steps import FANOUT_REJECTED_ERROR, FANOUT_STEP_FIELD
from wheelgate.core.limits import (
    FANOUT_ITEM_RETRY_ATTEMPTS,
    FANOUT_ITEM_RETRY_BACKOFF,
    FANOUT_ITEM_RETRY_INTERVAL_SECONDS,
)
from wheelgate.core.settings import (
    DEFAULT_FANOUT_COPY_CONCURRENCY,
    DEFAULT_FANOUT_HASH_CONCURRENCY,
    PromoterSettings,
)
from wheelgate.lambda_function import handler
from wheelgate.storage.bucket import Bucket

logger = logging.getLogger(__name__)

#: The error a Distributed Map reports when an item failed (no failure is tolerated).
MAP_FAILED_ERROR = "States.ExceedToleratedFailureThreshold"


class StepFailed(Exception):
    """A task of an in-process execution failed after its retries: ``error`` is what Step
    Functions would pass to the Catch (``Error``, ``Cause``)."""

    def __init__(self, error: dict[str, str]) -> None:
        super().__init__(error["Error"])
        self.error = error


def step_error(exc: BaseException) -> dict[str, str]:
    """The Catch input Step Functions builds from a Lambda task's exception."""
    name = type(exc).__name__
    return {"Error": name, "Cause": json.dumps({"errorMessage": str(exc), "errorType": name})}


class InProcessLauncher:
    """Runs fan-out executions in this process, as the state machine does: the hash items,
    then the copy items (at most ``hash_concurrency`` and ``copy_concurrency`` at a time, by
    default the state machine's maps' defaults; the second only once the first has
    succeeded), each step retried with the state machine's numbers (a ``PromotionRejected``
    never), then publish; conclude when a map or publish failed.

    ``run_step`` is the promoter function's step entry; ``sleep`` waits between retries.
    """

    def __init__(
        self,
        *,
        staging: Bucket,
        run_step: Callable[[dict[str, Any]], Any],
        hash_concurrency: int = DEFAULT_FANOUT_HASH_CONCURRENCY,
        copy_concurrency: int = DEFAULT_FANOUT_COPY_CONCURRENCY,
        retry_attempts: int = FANOUT_ITEM_RETRY_ATTEMPTS,
        retry_interval: float = FANOUT_ITEM_RETRY_INTERVAL_SECONDS,
        retry_backoff: float = FANOUT_ITEM_RETRY_BACKOFF,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.staging = staging
        self.run_step = run_step
        self.concurrency = {"hash": hash_concurrency, "copy": copy_concurrency}
        self.retry_attempts = retry_attempts
        self.retry_interval = retry_interval
        self.retry_backoff = retry_backoff
        self.sleep = sleep
        self._executions: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()

    def start(
        self, *, job_id: str, bucket: str, items_key: str, hash_items_key: str, hash_items: int
    ) -> str:
        """Start the execution in a thread (once per ``job_id``); return its id."""
        if bucket != self.staging.name:
            raise ValueError(f"items are in {bucket!r}, not in staging ({self.staging.name!r})")
        with self._lock:
            if job_id not in self._executions:
                thread = threading.Thread(
                    target=self._execute,
                    args=(job_id, items_key, hash_items_key if hash_items else None),
                    daemon=True,
                )
                self._executions[job_id] = thread
                thread.start()
        return f"in-process:{job_id}"

    def wait(self, job_id: str, timeout: float = 60) -> None:
        """Until execution ``job_id`` has ended. Raises ``TimeoutError`` if it has not."""
        with self._lock:
            thread = self._executions[job_id]
        thread.join(timeout)
        if thread.is_alive():
            raise TimeoutError(f"execution {job_id} still running after {timeout}s")

    def _execute(self, job_id: str, items_key: str, hash_items_key: str | None) -> None:
        try:
            try:
                # As the state machine's choice: no hash items, no hash map.
                if hash_items_key is not None:
                    self._map(job_id, "hash", self._items(hash_items_key))
                self._map(job_id, "copy", self._items(items_key))
                self._task({FANOUT_STEP_FIELD: "publish", "job_id": job_id})
            except StepFailed as failed:
                self._task({FANOUT_STEP_FIELD: "conclude", "job_id": job_id, "error": failed.error})
        except Exception:
            # Step Functions' Fail state: the execution ends failed.
            logger.exception("fan-out execution %s failed", job_id)

    def _items(self, key: str) -> list[int]:
        """A map's items (its item reader)."""
        found = self.staging.get(key)
        if found is None:
            raise TransientError(f"{key} not found")
        return [int(i["item"]) for i in json.loads(found[0])]

    def _map(self, job_id: str, step: Literal["hash", "copy"], items: Sequence[int]) -> None:
        def run(item: int) -> None:
            self._task({FANOUT_STEP_FIELD: step, "job_id": job_id, "item": item})

        with ThreadPoolExecutor(max_workers=self.concurrency[step]) as pool:
            futures = [pool.submit(run, item) for item in items]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = [exc for f in done if (exc := f.exception()) is not None]
            if failed:
                for future in futures:
                    future.cancel()
                first = failed[0]
                cause = first.error if isinstance(first, StepFailed) else step_error(first)
                raise StepFailed({"Error": MAP_FAILED_ERROR, "Cause": json.dumps(cause)})

    def _task(self, payload: dict[str, Any]) -> None:
        attempt = 0
        while True:
            try:
                self.run_step(payload)
                return
            except Exception as exc:
                rejected = type(exc).__name__ == FANOUT_REJECTED_ERROR
                if rejected or attempt >= self.retry_attempts:
                    raise StepFailed(step_error(exc)) from exc
                self.sleep(self.retry_interval * self.retry_backoff**attempt)
                attempt += 1


def in_process_parts(**options: Any) -> Callable[[], handler.Promoter]:
    """The promoter function's service, built on first call (then kept) from
    the environment as the function builds its own, but with fan-out executions run in this
    process by an :class:`InProcessLauncher` (built with ``options``) whose steps go to this
    same service. Without a state machine in the settings, no run fans out."""

    @cache
    def parts() -> handler.Promoter:
        return handler.build_promoter(launchers)

    def run_step(event: dict[str, Any]) -> dict[str, Any]:
        return handler.fanout_step(event, parts)

    def launchers(settings: PromoterSettings, staging: Bucket) -> InProcessLauncher | None:
        if not settings.fanout_state_machine_arn:
            return None
        return InProcessLauncher(staging=staging, run_step=run_step, **options)

    return parts


def in_process_handler(**options: Any) -> handler.LambdaHandler:
    """The promoter function's handler over :func:`in_process_parts` (``options``: the
    :class:`InProcessLauncher`'s): what ``wheelgate local --fanout-min-files`` runs."""
    return handler.entry_point(in_process_parts(**options))
