"""What fan-out promotion is handed from outside: a launcher of executions and a queue."""

from __future__ import annotations

from typing import Protocol


class Launcher(Protocol):
    """Starts a fan-out execution (:class:`~wheelgate.storage.workflow.StepFunctionsLauncher`)."""

    def start(
        self, *, job_id: str, bucket: str, items_key: str, hash_items_key: str, hash_items: int
    ) -> str:
        """Start the execution named ``job_id`` (starting it again is a no-op) over the items
        at ``items_key`` (copied) and the ``hash_items`` items at ``hash_items_key`` (hashed
        first, skipped when there are none); return its id.
        Raises :class:`~wheelgate.core.errors.TransientError` when it cannot start."""
        ...


class MessageSender(Protocol):
    """Sends a message body to a queue."""

    def send(self, queue_url: str, body: str) -> None: ...
