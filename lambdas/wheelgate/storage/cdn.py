"""CloudFront invalidation adapter. Errors are translated here (:mod:`wheelgate.storage.errors`):
an unreachable endpoint, a timeout or throttling is :class:`StorageUnavailable`, a refusal
:class:`AccessError`; either fails the promoter's message, which is retried."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from wheelgate.storage.errors import endpoint_of, translated

if TYPE_CHECKING:
    from mypy_boto3_cloudfront import CloudFrontClient

#: CloudFront accepts at most 3,000 paths per invalidation.
MAX_PATHS_PER_INVALIDATION = 3000


def paths_for_keys(keys: Sequence[str]) -> list[str]:
    """Viewer paths to invalidate for changed page keys.

    The CloudFront Function rewrites ``/dir/`` to ``/dir/index.html`` or ``/dir/index.json``
    before the cache lookup, so the cached objects are exactly the page keys.
    """
    return sorted({"/" + key.lstrip("/") for key in keys})


class CloudFrontInvalidator:
    def __init__(self, client: CloudFrontClient) -> None:
        self._client = client

    def invalidate(self, distribution_id: str, keys: Sequence[str]) -> list[str]:
        """Invalidate the pages at ``keys``; return the invalidation ids. Raises the storage
        errors of :mod:`wheelgate.storage.errors`."""
        paths = paths_for_keys(keys)
        ids = []
        for start in range(0, len(paths), MAX_PATHS_PER_INVALIDATION):
            chunk = paths[start : start + MAX_PATHS_PER_INVALIDATION]
            reference = hashlib.sha256(
                ("\n".join(chunk) + str(time.time_ns())).encode()
            ).hexdigest()[:32]
            target = f"distribution {distribution_id}"
            with translated("CreateInvalidation", target, endpoint_of(self._client)):
                response = self._client.create_invalidation(
                    DistributionId=distribution_id,
                    InvalidationBatch={
                        "Paths": {"Quantity": len(chunk), "Items": chunk},
                        "CallerReference": reference,
                    },
                )
            ids.append(str(response["Invalidation"]["Id"]))
        return ids
