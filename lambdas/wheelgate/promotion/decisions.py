"""What a route decides, for the service to act on.

A route (a tested run, an override, a yank, an import) returns :class:`Decided` (it wrote the
record itself) or :class:`Promote` (a manifest to promote through the service's flow, in one of
three modes), and raises :class:`~wheelgate.core.errors.PromotionRejected` for a request it
refuses (the service records the refusal). No route calls back into the service.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from wheelgate.core.manifest import Manifest
from wheelgate.core.records import PromotionRecord
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


Decision = Promote | Decided


class Route(Protocol):
    """A route: decides what to do with one kind of request (a run's manifest, a yank, an
    override or an import request)."""

    def decide(self, request: Request) -> Decision:
        """What to do with ``request``; raises
        :class:`~wheelgate.core.errors.PromotionRejected` to refuse it."""
        ...
