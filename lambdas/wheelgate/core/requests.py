"""The one reading of a request document (an override, a yank, an import): JSON, its model,
and the run id its key names. Pure.

Each kind adds its own checks after this (an override's target, a yank's file name, an
import's id from its source, directory and date); what they share is here, so that every kind
refuses a malformed document with the same reasons and the same words.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.manifest import describe_errors

R = TypeVar("R", bound=BaseModel)


def read_request(
    raw: bytes,
    model: type[R],
    *,
    kind: str,
    expected_run_id: str,
    reason_for: Callable[[ValidationError], Reason] | None = None,
) -> R:
    """``raw`` as a ``kind`` request of ``model``, whose ``run_id`` must be ``expected_run_id``
    (its key's). Raises :class:`PromotionRejected`: ``invalid-manifest`` for a document that is
    not JSON or not the model (``reason_for`` may name another reason for a model error), and
    ``run-id-mismatch`` for another run id."""
    try:
        document = json.loads(raw)
    except ValueError as exc:
        raise PromotionRejected(
            Reason.INVALID_MANIFEST, f"{kind} request is not JSON: {exc}"
        ) from exc
    try:
        request = model.model_validate(document)
    except ValidationError as exc:
        raise PromotionRejected(
            reason_for(exc) if reason_for is not None else Reason.INVALID_MANIFEST,
            f"{kind} request is invalid: {describe_errors(exc)}",
        ) from exc
    run_id = getattr(request, "run_id", None)
    if run_id != expected_run_id:
        raise PromotionRejected(
            Reason.RUN_ID_MISMATCH,
            f"{kind} request key names {expected_run_id!r} but it says {run_id!r}",
        )
    return request
