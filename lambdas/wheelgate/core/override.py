"""Break-glass override requests: promote a rejected run despite its tests.

Only the break-glass role may write one (``manifests/override-<run>-<stamp>.json``; the bucket
policy and the promoter both check the writer). An override skips the test rules and nothing
else: completeness, sizes, SHA-256, commit and nightly conflicts are checked as always, and the
run's record says who overrode it and why.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.layout import OVERRIDE_RUN_PREFIX, REQUEST_RUN_PREFIXES, check_run_id
from wheelgate.core.manifest import RunId
from wheelgate.core.requests import read_request

SCHEMA_OVERRIDE_V1 = "wheelgate/override/v1"


class OverrideRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    schema_: Literal["wheelgate/override/v1"] = Field(alias="schema")
    run_id: RunId
    target_run_id: RunId
    reason: Annotated[str, Field(min_length=10, max_length=1000)]

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2) + "\n"


def check_override_target(run_id: str) -> str:
    """Return ``run_id`` if an override may name it: a valid run id that is not a request's
    (yank, override or import). Raises ``ValueError`` (:class:`LayoutError` for an invalid
    id)."""
    check_run_id(run_id)
    if run_id.startswith(REQUEST_RUN_PREFIXES):
        raise ValueError(f"{run_id!r} is a request, not a run: it cannot be overridden")
    return run_id


def new_request_id(target_run_id: str, moment: datetime | None = None) -> str:
    stamp = (moment or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    request = f"{OVERRIDE_RUN_PREFIX}{target_run_id}-{stamp}-{secrets.token_hex(3)}"
    return request[:128]


def parse_override(raw: bytes, *, expected_run_id: str) -> OverrideRequest:
    """Validate an override request (:func:`~wheelgate.core.requests.read_request`), whose
    target must be a run an override may name; :class:`PromotionRejected` if bad."""
    request = read_request(raw, OverrideRequest, kind="override", expected_run_id=expected_run_id)
    try:
        check_override_target(request.target_run_id)
    except ValueError as exc:
        raise PromotionRejected(Reason.OVERRIDE_NOT_APPLICABLE, str(exc)) from exc
    return request
