"""Yank requests: mark a released file as yanked (PEP 592) or not, without deleting anything.

A yank request travels the same way a manifest does (an object under ``manifests/`` written by
the reporter role), so the promoter stays the only writer of nightly and the same provenance
check applies. Its run id starts with ``yank-``.
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.layout import YANK_RUN_PREFIX
from wheelgate.core.manifest import IndexDir, RunId, parse_distribution_filename
from wheelgate.core.requests import read_request
from wheelgate.index.pages import IndexEntry

SCHEMA_YANK_V1 = "wheelgate/yank/v1"


class YankRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    schema_: Literal["wheelgate/yank/v1"] = Field(alias="schema")
    run_id: RunId
    index: IndexDir
    filename: Annotated[str, Field(min_length=1, max_length=255)]
    yanked: bool
    reason: Annotated[str, Field(max_length=500)] = ""

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2) + "\n"


def new_request_id(moment: datetime | None = None) -> str:
    """A unique, sortable run id for a yank request."""
    stamp = (moment or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return f"{YANK_RUN_PREFIX}{stamp}-{secrets.token_hex(4)}"


def parse_yank(raw: bytes, *, expected_run_id: str) -> YankRequest:
    """Validate a yank request (:func:`~wheelgate.core.requests.read_request`), whose file name
    must be a distribution's; :class:`PromotionRejected` (``invalid-manifest``) if bad."""
    request = read_request(raw, YankRequest, kind="yank", expected_run_id=expected_run_id)
    try:
        parse_distribution_filename(request.filename)
    except ValueError as exc:
        raise PromotionRejected(Reason.INVALID_MANIFEST, f"yank request is invalid: {exc}") from exc
    return request


def apply_yank(
    entries: tuple[IndexEntry, ...], filename: str, yanked: str | bool
) -> tuple[IndexEntry, ...]:
    """Entries with ``filename``'s yank state set; :class:`PromotionRejected` if not listed."""
    if filename not in {e.filename for e in entries}:
        raise PromotionRejected(
            Reason.FILE_MISSING, f"{filename} is not listed in nightly; nothing to yank"
        )
    return tuple(replace(e, yanked=yanked) if e.filename == filename else e for e in entries)
