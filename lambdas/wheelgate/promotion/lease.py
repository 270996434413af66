"""The promoter's lease on an index directory: one promotion into a directory at a time.

Conditional copies keep two promotions from writing one file name, but not from releasing
two spellings of one release (``alias-1.0`` and ``alias-1.0.0``, or two build tags) that each
checked nightly before the other copied. So a promotion holds the lease of every directory it
touches from its first check to its last page write.

A lease is a small object in staging (``records/_leases/<index>.json``, where only the promoter
may write) taken with a conditional write: ``If-None-Match: *`` when there is none, ``If-Match``
on the ETag of a released or expired one. It expires on its own after the promoter's timeout
and a margin, so a killed invocation blocks the directory for at most that long; a promotion
that finds a directory leased raises :class:`LeaseBusy` (transient: the message is retried).

A fan-out promotion (:mod:`~wheelgate.promotion.fanout`) outlives the invocation that verified
it: that invocation hands its leases over to the job (:meth:`HeldLeases.hand_over`), for
``FANOUT_LEASE_SECONDS``, and the job's publish or conclude step gives them back
(:meth:`IndexLeases.give_back`).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from wheelgate.core.errors import TransientError
from wheelgate.core.layout import STAGING
from wheelgate.core.limits import LEASE_SECONDS
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.errors import PreconditionFailed

_CONTENT_TYPE = "application/json"


def _lease_body(holder: str | None, run_id: str | None, expires: float, *, fanout: bool) -> bytes:
    """A lease object: who holds it, for which run, until when (epoch seconds), and whether the
    holder is a fan-out job."""
    return json.dumps(
        {"holder": holder, "run_id": run_id, "expires": expires, "fanout": fanout}
    ).encode()


class LeaseBusy(TransientError):
    """Another promotion holds an index directory's lease; retry later. ``fanout`` says the
    holder is a fan-out job, which may hold it for hours (``FANOUT_LEASE_SECONDS``)."""

    def __init__(self, message: str, *, fanout: bool = False) -> None:
        super().__init__(message)
        self.fanout = fanout


class HeldLeases:
    """The leases a ``with`` block of :meth:`IndexLeases.hold` holds."""

    def __init__(self, leases: IndexLeases, indexes: list[str], token: str, run_id: str) -> None:
        self._leases = leases
        self.indexes = indexes
        self._token = token
        self._run_id = run_id

    def hand_over(self, holder: str, seconds: float) -> None:
        """Give the held leases to ``holder`` (a fan-out job) for ``seconds``: the block then
        ends without giving them back; ``holder`` does, with :meth:`IndexLeases.give_back`.

        Raises :class:`LeaseBusy` when a lease is no longer ours (it expired and was taken).
        """
        for index in self.indexes:
            self._leases._replace(index, self._token, holder, self._run_id, seconds)


class IndexLeases:
    """Takes and gives back the leases of index directories in ``bucket`` (staging)."""

    def __init__(
        self,
        bucket: Bucket,
        *,
        clock: Callable[[], float] = time.time,
        seconds: float = LEASE_SECONDS,
    ) -> None:
        self.bucket = bucket
        self.clock = clock
        self.seconds = seconds

    @contextmanager
    def hold(self, indexes: Iterable[str], *, run_id: str) -> Iterator[HeldLeases]:
        """Hold the leases of ``indexes`` (taken in sorted order) for the ``with`` block.

        Raises :class:`LeaseBusy` naming the run that holds one; leases taken before that
        are given back first.
        """
        token = uuid.uuid4().hex
        taken: list[str] = []
        try:
            for index in sorted(set(indexes)):
                self._take(index, token, run_id)
                taken.append(index)
            yield HeldLeases(self, taken, token, run_id)
        finally:
            for index in reversed(taken):
                self._give_back(index, token)

    def give_back(self, indexes: Iterable[str], *, holder: str) -> None:
        """Give back the leases of ``indexes`` that ``holder`` holds (best effort, as at the
        end of :meth:`hold`); a lease someone else holds is left alone."""
        for index in sorted(set(indexes), reverse=True):
            self._give_back(index, holder)

    def holder(self, index: str) -> str | None:
        """Who holds the lease of ``index`` now (``None``: nobody, or it expired)."""
        found = self.bucket.get(STAGING.lease(index))
        if found is None:
            return None
        current = json.loads(found[0])
        if float(current.get("expires", 0)) <= self.clock():
            return None
        holder = current.get("holder")
        return str(holder) if holder else None

    def _replace(self, index: str, token: str, holder: str, run_id: str, seconds: float) -> None:
        key = STAGING.lease(index)
        body = _lease_body(holder, run_id, self.clock() + seconds, fanout=True)
        found = self.bucket.get(key)
        if found is None or json.loads(found[0]).get("holder") != token:
            raise LeaseBusy(f"{index}: the lease was lost before it could be handed over")
        try:
            self.bucket.put(key, body, content_type=_CONTENT_TYPE, if_match=found[1])
        except PreconditionFailed:
            raise LeaseBusy(f"{index}: the lease was lost before it could be handed over") from None

    def take(self, indexes: Iterable[str], *, holder: str, run_id: str, until: float) -> None:
        """Make sure ``holder`` (a fan-out job) holds the leases of ``indexes`` until epoch
        second ``until``: a lease it holds already is renewed. Raises :class:`LeaseBusy` when
        another promotion holds one (leases taken before that stay the holder's)."""
        for index in sorted(set(indexes)):
            self._take(index, holder, run_id, until=until)

    def _take(self, index: str, token: str, run_id: str, *, until: float | None = None) -> None:
        key = STAGING.lease(index)
        expires = self.clock() + self.seconds if until is None else until
        body = _lease_body(token, run_id, expires, fanout=until is not None)
        found = self.bucket.get(key)
        try:
            if found is None:
                self.bucket.put(key, body, content_type=_CONTENT_TYPE, if_none_match=True)
                return
            current = json.loads(found[0])
            ours = current.get("holder") == token
            if (
                not ours
                and current.get("holder")
                and float(current.get("expires", 0)) > self.clock()
            ):
                fanout = bool(current.get("fanout"))
                raise LeaseBusy(
                    f"{index} is being promoted by run {current.get('run_id')}"
                    f"{' (a fan-out execution)' if fanout else ''}; will retry",
                    fanout=fanout,
                )
            self.bucket.put(key, body, content_type=_CONTENT_TYPE, if_match=found[1])
        except PreconditionFailed:
            raise LeaseBusy(
                f"{index}: another promotion took the lease first; will retry"
            ) from None

    def _give_back(self, index: str, token: str) -> None:
        """Release a lease we hold. Best effort: what the lease guarded is done (or failed)
        either way, and a lease that could not be given back expires on its own."""
        key = STAGING.lease(index)
        released = _lease_body(None, None, 0, fanout=False)
        try:
            found = self.bucket.get(key)
            if found is None or json.loads(found[0]).get("holder") != token:
                return
            self.bucket.put(key, released, content_type=_CONTENT_TYPE, if_match=found[1])
        except (PreconditionFailed, TransientError):
            # Lost to a writer that took the expired lease (it is theirs now), or S3 refused
            # for the moment: the lease expires after LEASE_SECONDS.
            return
