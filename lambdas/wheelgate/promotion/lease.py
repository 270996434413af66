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
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from wheelgate.core.errors import TransientError
from wheelgate.core.layout import STAGING
from wheelgate.core.settings import LEASE_SECONDS
from wheelgate.storage.bucket import Bucket, PreconditionFailed

_CONTENT_TYPE = "application/json"


class LeaseBusy(TransientError):
    """Another promotion holds an index directory's lease; retry later."""


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
    def hold(self, indexes: Iterable[str], *, run_id: str) -> Iterator[None]:
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
            yield
        finally:
            for index in reversed(taken):
                self._give_back(index, token)

    def _take(self, index: str, token: str, run_id: str) -> None:
        key = STAGING.lease(index)
        body = json.dumps(
            {"holder": token, "run_id": run_id, "expires": self.clock() + self.seconds}
        ).encode()
        found = self.bucket.get(key)
        try:
            if found is None:
                self.bucket.put(key, body, content_type=_CONTENT_TYPE, if_none_match=True)
                return
            current = json.loads(found[0])
            if current.get("holder") and float(current.get("expires", 0)) > self.clock():
                raise LeaseBusy(
                    f"{index} is being promoted by run {current.get('run_id')}; will retry"
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
        released = json.dumps({"holder": None, "run_id": None, "expires": 0}).encode()
        try:
            found = self.bucket.get(key)
            if found is None or json.loads(found[0]).get("holder") != token:
                return
            self.bucket.put(key, released, content_type=_CONTENT_TYPE, if_match=found[1])
        except (PreconditionFailed, TransientError):
            # Lost to a writer that took the expired lease (it is theirs now), or S3 refused
            # for the moment: the lease expires after LEASE_SECONDS.
            return
