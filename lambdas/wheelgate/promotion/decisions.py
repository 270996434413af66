"""What a route decides, for the service to act on, and the :class:`Decision` the service
comes to, for its projections.

A route (a tested run, an override, a yank, an import) returns :class:`Decided` (it wrote the
record itself) or :class:`Promote` (a manifest to promote through the service's flow, in one of
three modes), and raises :class:`~wheelgate.core.errors.PromotionRejected` for a request it
refuses (the service records the refusal). No route calls back into the service.

Whatever the route, the service (and a fan-out step that publishes or concludes) returns one
:class:`Decision`: the record stored, with what the flow held (the manifest, the plans, the
archive pages it read). It hands that value to its projections in order (metrics, run history,
status site: each a :class:`Projection`), which read nothing back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from wheelgate.core.manifest import Manifest
from wheelgate.core.planning import SetPlan
from wheelgate.core.records import PromotionRecord, RecordEntry, State
from wheelgate.index.pages import ProjectPage
from wheelgate.promotion.event import Request
from wheelgate.promotion.importing.imported import ImportedSet


@dataclass(frozen=True)
class Tested:
    """A run's promotion: its tests decide which sets are accepted."""


@dataclass(frozen=True)
class Override:
    """A break-glass promotion of a rejected run: ``by`` whom, why, and which ``request``
    (its run id). The tests do not decide; every integrity check still does."""

    by: str
    reason: str
    request: str

    def as_record(self) -> dict[str, str]:
        """The ``override`` field of both runs' records."""
        return {"by": self.by, "reason": self.reason, "request": self.request}


@dataclass(frozen=True)
class Imported:
    """An import's promotion of the set it ``gathered`` (no tests; every integrity check but
    the commit's)."""

    gathered: ImportedSet


Mode = Tested | Override | Imported


@dataclass(frozen=True)
class Promote:
    """Promote ``manifest`` (SHA-256 ``digest``; ``existing`` is its run's record so far)."""

    manifest: Manifest
    digest: str
    existing: PromotionRecord | None
    mode: Mode


@dataclass(frozen=True)
class Decided:
    """The route decided and wrote ``record`` itself."""

    record: PromotionRecord


Routed = Promote | Decided


class Route(Protocol):
    """A route: decides what to do with one kind of request (a run's manifest, a yank, an
    override or an import request)."""

    def decide(self, request: Request) -> Routed:
        """What to do with ``request``; raises
        :class:`~wheelgate.core.errors.PromotionRejected` to refuse it."""
        ...


@dataclass(frozen=True)
class DecisionStats:
    """What a decision did, beside its record.

    ``files_copied`` and ``bytes_copied`` count the files this decision copied into nightly
    (files nightly already held are not counted). ``manifest_written_at`` is when the manifest
    was written (its S3 event time; ``None`` when unknown), ``published_at`` when the decision's
    index pages were published, by the promoter's clock (``None`` when it published none).
    """

    files_copied: int = 0
    bytes_copied: int = 0
    manifest_written_at: datetime | None = None
    published_at: datetime | None = None

    def __post_init__(self) -> None:
        if self.files_copied < 0 or self.bytes_copied < 0:
            raise ValueError(
                f"copies cannot be negative: {self.files_copied} file(s), "
                f"{self.bytes_copied} byte(s)"
            )
        for name in ("manifest_written_at", "published_at"):
            moment = getattr(self, name)
            if moment is not None and moment.tzinfo is None:
                raise ValueError(f"{name} must be timezone-aware, not {moment!r}")

    @property
    def latency_seconds(self) -> float | None:
        """Seconds from the manifest's write to its pages being published, when both are
        known (never negative: clocks of S3 and the promoter can disagree a little)."""
        if self.manifest_written_at is None or self.published_at is None:
            return None
        return max(0.0, (self.published_at - self.manifest_written_at).total_seconds())


@dataclass(frozen=True)
class Decision:
    """What one manifest event (or a fan-out step that publishes or concludes) came to.

    ``record`` is the record stored; ``at`` the one time the promoter took for the decision.
    ``new`` is false for a redelivery of bytes decided (or a write noted) already: nothing new
    to tell. ``noted``: an untrusted write, noted as pending, which decides nothing. ``run`` is
    the run's record when it is not ``record`` (an override request decides its target run).
    What the flow held rides along: the ``manifest`` decided on, the verified ``plans``, and the
    nightly archive ``pages`` it read, by (index directory, project). ``written_at`` is when
    the manifest was written (its event's time; ``None`` when unknown).
    """

    record: PromotionRecord
    at: datetime
    new: bool = True
    noted: bool = False
    run: PromotionRecord | None = None
    manifest: Manifest | None = None
    plans: tuple[SetPlan, ...] = ()
    pages: Mapping[tuple[str, str], ProjectPage] = field(default_factory=dict)
    written_at: datetime | None = None

    @property
    def subject(self) -> PromotionRecord:
        """The record of the run decided: ``run``, else ``record``."""
        return self.run if self.run is not None else self.record

    def stats(self) -> DecisionStats:
        """The stats of the latest decision of :attr:`record`, read from what it did.

        Copies are the files the run's promoted sets show as ``copied`` or ``imported``,
        counted only for a promotion (a rejection copies nothing it keeps: a replay refused on
        a promoted run keeps that run's earlier sets). The publish time is the decision's time
        (:attr:`at`), and only for a promotion that published pages.
        """
        run = self.subject
        if latest_decision(run).state is not State.PROMOTED:
            return DecisionStats(manifest_written_at=self.written_at)
        copied = [
            f
            for s in run.sets
            if s.state is State.PROMOTED
            for f in s.files
            if f.action in ("copied", "imported")
        ]
        return DecisionStats(
            files_copied=len(copied),
            bytes_copied=sum(f.size for f in copied),
            manifest_written_at=self.written_at,
            published_at=self.at if run.pages else None,
        )


class Projection(Protocol):
    """Writes what a :class:`Decision` means somewhere else (metrics, the run history, the
    status site), from the value alone. The service runs each in order after the record is
    stored; one that raises is logged and the next still runs: the decision stands."""

    def project(self, decision: Decision) -> None: ...


def latest_decision(record: PromotionRecord) -> RecordEntry:
    """The latest decision ``record`` holds: its last history entry.

    Raises ``ValueError`` for a record with no history (no decision to tell of).
    """
    if not record.history:
        raise ValueError(f"record of run {record.run_id} has no decision in its history")
    return record.history[-1]
