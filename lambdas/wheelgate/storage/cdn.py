"""CloudFront invalidation adapter."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from wheelgate.core.errors import TransientError

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
        """Invalidate the pages at ``keys``; return the invalidation ids."""
        paths = paths_for_keys(keys)
        ids = []
        for start in range(0, len(paths), MAX_PATHS_PER_INVALIDATION):
            chunk = paths[start : start + MAX_PATHS_PER_INVALIDATION]
            reference = hashlib.sha256(
                ("\n".join(chunk) + str(time.time_ns())).encode()
            ).hexdigest()[:32]
            try:
                response = self._client.create_invalidation(
                    DistributionId=distribution_id,
                    InvalidationBatch={
                        "Paths": {"Quantity": len(chunk), "Items": chunk},
                        "CallerReference": reference,
                    },
                )
            except ClientError as exc:
                raise TransientError(
                    f"CloudFront invalidation on {distribution_id} failed: {exc}"
                ) from exc
            ids.append(str(response["Invalidation"]["Id"]))
        return ids
