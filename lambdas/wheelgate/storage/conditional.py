"""The one conditional read-modify-write loop: every page writer and the status site use it.

An object that several writers change (an index page, ``status/state.json``) holds a state.
A writer reads it with its ETag, decides the new state from the state it read (a pure
decision, never from anything it read earlier), writes the objects rendered from the new
state (the HTML page of a JSON page, the status pages), then writes the state itself with
``If-Match`` on the ETag it read (``If-None-Match: *`` when there was none): the commit point.
Losing the condition means another writer committed first; the writer backs off, reads again
and decides again, so no writer's change is lost.

The rendered objects are written before the commit, so every committed state was preceded by
its own rendered objects. A writer that lost a commit has written rendered objects from a state
that lost; its next attempt therefore writes again even when it finds its change already in the
state (another writer may have committed that same state while its objects were being
overwritten by the loser's), so the last rendered objects always match the last commit.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from wheelgate.core.errors import TransientError
from wheelgate.storage.bucket import Bucket, ObjectLock

S = TypeVar("S")
T = TypeVar("T")

#: Attempts before a writer whose state keeps changing under it gives up (a transient error):
#: with :func:`retry_delay`'s backoff, about 40 s of contention.
MAX_ATTEMPTS = 25


def retry_delay(attempt: int) -> float:
    """Seconds to wait before retrying after losing a conditional write for the ``attempt``-th
    time: exponential, capped at 2 s, with jitter so that racing writers spread out."""
    return float(min(2.0, 0.02 * 2**attempt) * random.uniform(0.5, 1.0))  # noqa: S311


@dataclass(frozen=True)
class Put:
    """One object to write: its key, body and the headers it is written with. ``lock`` is the
    version's own Object Lock; ``tags`` its object tags."""

    key: str
    body: bytes
    content_type: str
    cache_control: str | None = None
    lock: ObjectLock | None = None
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Rendered:
    """What an updated state is written as: ``state`` (its key is the commit point, written
    conditionally) and ``derived``, objects rendered from the same state and written before it,
    in order."""

    state: Put
    derived: Sequence[Put] = ()


@dataclass(frozen=True)
class StateUpdate(Generic[T]):
    """The update a writer makes of the state it read: ``result`` (what the update returns),
    ``changed`` (the new state differs from the one read) and ``render``, called only when the
    state is written."""

    result: T
    changed: bool
    render: Callable[[], Rendered]


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """The update that held (its ``result``), and whether this writer wrote its objects."""

    result: T
    written: bool


def read_modify_write(
    bucket: Bucket,
    read: Callable[[], tuple[S, str | None]],
    decide: Callable[[S], StateUpdate[T]],
    *,
    known: tuple[S, str | None] | None = None,
    max_attempts: int = MAX_ATTEMPTS,
    sleep: Callable[[float], None] = time.sleep,
) -> Outcome[T]:
    """Change one state object of ``bucket`` so that no concurrent writer's change is lost.

    ``read`` returns the current state and the ETag of its object (``None``: no object yet);
    ``decide`` maps a state to a :class:`StateUpdate`, and is called again with the state as it
    then stands every time the commit loses. ``known`` is a state and ETag the caller read
    already (saves the first read; a stale one only costs a lost condition). Nothing is written
    when the state is unchanged and its object exists, unless an earlier attempt of this call
    wrote rendered objects and lost.

    Returns the update that held and whether it was written. Raises
    :class:`~wheelgate.core.errors.TransientError` after ``max_attempts`` lost commits, and
    whatever ``read``, ``decide`` and the bucket raise.
    """
    lost = False
    key = ""
    for attempt in range(max_attempts):
        state, etag = known if known is not None else read()
        known = None
        update = decide(state)
        if not update.changed and etag is not None and not lost:
            return Outcome(update.result, written=False)
        rendered = update.render()
        key = rendered.state.key
        for derived in rendered.derived:
            bucket.put(
                derived.key,
                derived.body,
                content_type=derived.content_type,
                cache_control=derived.cache_control,
                lock=derived.lock,
                tags=derived.tags,
            )
        written = rendered.state
        if bucket.commit(
            written.key,
            written.body,
            etag=etag,
            content_type=written.content_type,
            cache_control=written.cache_control,
            lock=written.lock,
            tags=written.tags,
        ):
            return Outcome(update.result, written=True)
        lost = True
        sleep(retry_delay(attempt))
    raise TransientError(f"{key} kept changing; gave up after {max_attempts} tries")
