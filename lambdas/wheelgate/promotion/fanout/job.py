"""A fan-out job: its name, when one is wanted, and what it writes (the plan and its items)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from wheelgate.core.errors import Reason, TransientError
from wheelgate.core.manifest import ManifestFile
from wheelgate.core.planning import FileStep, Provenance, SetPlan
from wheelgate.core.records import Promotion

#: Step Functions execution names: at most 80 characters of these.
_EXECUTION_NAME_MAX = 80
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class FanoutIncomplete(TransientError):
    """Publish was asked for while some items have no done marker."""


class StepError(ValueError):
    """A step event that is not one of the contract's (names the wrong field)."""


def fanout_job_id(run_id: str, manifest_sha256: str, attempt: int) -> str:
    """The job (and execution name) of ``attempt`` (1, 2, ...) at promoting ``run_id`` from the
    manifest with SHA-256 ``manifest_sha256``: the same every time for the same three, unique
    across them, at most 80 characters of ``[A-Za-z0-9_-]`` (a run id may hold ``.``)."""
    tag = hashlib.sha256(f"{run_id}\n{manifest_sha256}".encode()).hexdigest()[:16]
    suffix = f"-{tag}-{attempt}"
    readable = _UNSAFE.sub("-", run_id)[: _EXECUTION_NAME_MAX - len(suffix)].strip("-_")
    return (readable or "run") + suffix


def fanout_wanted(plans: Sequence[SetPlan], *, min_files: int, min_bytes: int) -> bool:
    """Whether the copies of ``plans`` reach either threshold: ``min_files`` files to copy, or
    ``min_bytes`` bytes. Plans with nothing to copy never need an execution."""
    copies = [step for plan in plans for step in plan.copies]
    if not copies:
        return False
    return len(copies) >= min_files or sum(s.file.size for s in copies) >= min_bytes


class JobItem(BaseModel):
    """One planned file of a job: a Map item."""

    model_config = ConfigDict(frozen=True)

    index: str
    file: ManifestFile
    source_key: str
    source_etag: str
    target_key: str
    copies: bool
    #: Verification found the target key in nightly (checked, never written).
    in_nightly: bool
    #: SHA-256 of the wheel's METADATA that verification read (``None``: an sdist).
    metadata_sha256: str | None = None
    #: S3 has no SHA-256 of the staged bytes: a ``hash`` step reads them before any copy.
    hash_read: bool = False
    #: Where an imported file came from (``None``: a run's staged file).
    provenance: Provenance | None = None
    #: The staged file is gone; its bytes are an earlier attempt's nightly copy (``source_key``).
    from_nightly: bool = False

    def step(self) -> FileStep:
        return FileStep(
            index=self.index,
            file=self.file,
            source_key=self.source_key,
            source_etag=self.source_etag,
            target_key=self.target_key,
            copy=self.copies,
            provenance=self.provenance,
            from_nightly=self.from_nightly,
        )


class FanoutJob(BaseModel):
    """``records/_jobs/<job_id>/plan.json``: a verified promotion handed to an execution."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    schema_: Literal["wheelgate/fanout-job/v1"] = Field(
        default="wheelgate/fanout-job/v1", alias="schema"
    )
    job_id: str
    attempt: int
    #: When the job was written (an upload-time string) and the epoch second its leases and
    #: execution cannot outlive.
    created_at: str
    expires: float
    promotion: Promotion
    #: Index directories whose leases the job holds.
    indexes: list[str]
    items: list[JobItem]
    #: The SQS message body that carried the manifest's event, sent back after a failure.
    message_body: str | None = None
    #: When S3 says the manifest was written (the promotion latency metric starts there).
    event_time: datetime | None = None

    @property
    def run_id(self) -> str:
        return self.promotion.run_id

    def pending_message(self) -> str:
        copies = sum(1 for i in self.items if i.copies)
        return (
            f"copying {copies} of {len(self.items)} file(s) through execution {self.job_id} "
            f"(attempt {self.attempt})"
        )


class Rejection(BaseModel):
    """``records/_jobs/<job_id>/rejection.json``: the permanent refusal of a step."""

    reason: Reason
    message: str
    index: str | None = None
