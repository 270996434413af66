"""Local mode only: who wrote each request, as S3 tells the promoter on the deployed stack.

A real S3 notification names the writer's role (``userIdentity.principalId``); moto's names
nobody, and local mode has no IAM. The promoter loop stamps its reporter on every event
(:func:`wheelgate.local.promoter_loop.stamp_identity`), so without this module an override or
import request could only come from the reporter, which the promoter ignores or refuses.

:func:`install` wraps moto's PutObject handler to note the access key that signed each write
under ``manifests/`` (requests are small: one PutObject each); :func:`principal_of` turns the
break-glass key (:data:`~wheelgate.local.names.LOCAL_BREAK_GLASS_KEY`) into the break-glass
role's principal, so that role's requests reach the promoter as that role's, and anyone
else's (the reporter's key) as the reporter's. It patches moto's class in this process, before
the server starts; nothing in the promoter's code path imports it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import wraps
from typing import Any

from wheelgate.core.layout import MANIFESTS_PREFIX
from wheelgate.local.names import LOCAL_BREAK_GLASS_KEY, LOCAL_BREAK_GLASS_PRINCIPAL

_guard = threading.Lock()
#: ``(bucket, key)`` of each write under ``manifests/`` to the access key that signed it.
_signed_by: dict[tuple[str, str], str] = {}
_INSTALLED = "_wheelgate_request_writers"


def install() -> None:
    """Note the access key of every PutObject under ``manifests/`` (idempotent)."""
    from moto.s3.responses import S3Response

    if getattr(S3Response, _INSTALLED, False):
        return
    put: Callable[..., Any] = S3Response._key_response_put

    @wraps(put)
    def noted_put(self: Any, query: dict[str, Any], key_name: str) -> Any:
        if key_name.startswith(MANIFESTS_PREFIX) and not query.get("uploadId"):
            # Before the write: moto sends its notification while it writes.
            with _guard:
                _signed_by[(self.bucket_name, key_name)] = self.get_access_key()
        return put(self, query, key_name)

    setattr(S3Response, "_key_response_put", noted_put)  # noqa: B010 (a method, patched)
    setattr(S3Response, _INSTALLED, True)


def principal_of(bucket: str, key: str) -> str | None:
    """The break-glass role's principal when its key signed the last write of ``key`` in
    ``bucket``; ``None`` otherwise (the loop then stamps whom it always does)."""
    with _guard:
        signed = _signed_by.get((bucket, key))
    return LOCAL_BREAK_GLASS_PRINCIPAL if signed == LOCAL_BREAK_GLASS_KEY else None
