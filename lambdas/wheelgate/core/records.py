"""Promotion records: the decision about a run, with a reason, as the CLI and people read it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.manifest import ManifestFile, ManifestTest
from wheelgate.core.timestamps import upload_time


class State(StrEnum):
    PENDING = "pending"
    PROMOTED = "promoted"
    REJECTED = "rejected"


class FileOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)

    filename: str
    sha256: str
    size: int
    #: ``imported``: an import copied it from :attr:`source`, and no test vouches for it.
    action: Literal["copied", "already-released", "imported"]
    #: The passed tests that installed these bytes: what the file shipped on. Empty only for a
    #: file a break-glass override (which skips the tests) or an import released without it,
    #: and in records written before manifest v2.
    evidence: list[str] = []
    #: ``s3://bucket/key`` an imported file was read from (``None``: a run's staged file).
    source: str | None = None
    #: The nightly key of the file's signed verdict (docs/verdicts.md); ``None`` when the
    #: deployment signs none, and in records written before verdicts.
    verdict: str | None = None


class RefusedFile(BaseModel):
    """A file an import left out, with the reason code and a sentence."""

    model_config = ConfigDict(frozen=True)

    filename: str
    reason: str
    message: str
    #: ``s3://bucket/key`` of the source object.
    source: str | None = None


class StagedFile(BaseModel):
    """A file a rejected set's manifest listed: staged for the run, released by nobody."""

    model_config = ConfigDict(frozen=True)

    filename: str
    sha256: str
    size: int


def staged_files(files: Iterable[ManifestFile]) -> list[StagedFile]:
    """The manifest's ``files`` of a set as its rejected outcome lists them."""
    return [StagedFile(filename=f.filename, sha256=f.sha256, size=f.size) for f in files]


class SetOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)

    index: str
    state: State
    reason: str | None = None
    message: str = ""
    files: list[FileOutcome] = []
    tests: list[dict[str, str]] = []
    #: Files the promotion took off the directory's listing pages (listing retention): still
    #: in nightly and on its archive pages (``<index>/_archive/``).
    delisted: list[str] = []
    #: Files an import found at its source and did not import, each with its reason.
    refused: list[RefusedFile] = []
    #: Of a rejected set: nightly keys an earlier attempt wrote (files, their core metadata
    #: and any verdict) that no page lists, and no page will (see :class:`LeftInNightly`).
    left_in_nightly: list[str] = []
    #: Of a rejected set: the files its manifest listed, as staged for the run (none of them
    #: released); empty in records written before it was kept.
    staged: list[StagedFile] = []


def recorded_tests(tests: Sequence[ManifestTest]) -> list[dict[str, str]]:
    """The test results a record shows: name, result and URL. What each test installed is
    not repeated; each released file names its tests (:attr:`FileOutcome.evidence`)."""
    return [
        t.model_dump(mode="json", exclude_none=True, include={"name", "result", "url"})
        for t in tests
    ]


class RecordEntry(BaseModel):
    """One decision on a run, an entry of its record's log (the record's ``history`` field,
    named so in the stored JSON): the state, reason and message its record shows. ``at`` is an
    upload-time string; ``manifest_sha256`` names the bytes decided on."""

    model_config = ConfigDict(frozen=True)

    at: str
    state: State
    reason: str | None = None
    message: str = ""
    manifest_sha256: str | None = None
    actor: str | None = None

    @classmethod
    def rejected(
        cls, rejection: PromotionRejected, *, at: str, manifest_sha256: str, actor: str | None
    ) -> RecordEntry:
        """The decision a permanent rejection stands for: its reason code and message."""
        return cls(
            at=at,
            state=State.REJECTED,
            reason=rejection.reason.value,
            message=rejection.message,
            manifest_sha256=manifest_sha256,
            actor=actor,
        )


class Progress(BaseModel):
    """How far an undecided request has got (an import's gathering): ``done`` of ``total``
    files, ``read`` of them hashed by reading them (over 5 GiB, where S3 computes no SHA-256
    during a copy)."""

    model_config = ConfigDict(frozen=True)

    phase: Literal["gathering", "copying"]
    done: int
    total: int
    read: int = 0


class Published(Protocol):
    """What a publication wrote: the pages' keys, and by index directory the files listing
    retention took off its listing (``wheelgate.index.store.PageWrites``)."""

    @property
    def keys(self) -> Sequence[str]: ...

    @property
    def delisted(self) -> Mapping[str, Sequence[str]]: ...


class Promotion(BaseModel):
    """What a promoted run's record will say, settled once every check passed: the sets with
    each file's outcome, and the message. One invocation records it right after publishing; a
    fan-out job keeps it in its plan until its publish step records it."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    commit: str | None
    manifest_sha256: str
    actor: str | None = None
    override: dict[str, str] | None = None
    #: An import's source (``s3://bucket/prefix/``).
    imported_from: str | None = None
    sets: list[SetOutcome]
    message: str


class PromotionRecord(BaseModel):
    """``records/<run_id>.json``. ``state`` and ``reason`` answer "was this run promoted, and
    if not, why"; ``history`` (the record's log, not the run history) keeps every
    decision taken on the run."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    schema_: Literal["wheelgate/record/v1"] = Field(default="wheelgate/record/v1", alias="schema")
    run_id: str
    state: State
    reason: str | None = None
    message: str = ""
    commit: str | None = None
    manifest_sha256: str | None = None
    decided_at: str | None = None
    actor: str | None = None
    attempts: int = 0
    sets: list[SetOutcome] = []
    pages: list[str] = []
    invalidations: list[str] = []
    #: Set when a break-glass override promoted the run: ``by`` (principal), ``reason``,
    #: ``request`` (the override request's id).
    override: dict[str, str] | None = None
    #: An import request's source (``s3://bucket/prefix/``).
    imported_from: str | None = None
    #: Set while an import is under way (``None`` once it is decided).
    progress: Progress | None = None
    history: list[RecordEntry] = []

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2) + "\n"

    def with_decision(
        self,
        *,
        at: str,
        state: State,
        reason: str | None,
        message: str,
        manifest_sha256: str | None,
        actor: str | None,
    ) -> PromotionRecord:
        """This record with a decision made of these fields appended to its log."""
        return self.with_entry(
            RecordEntry(
                at=at,
                state=state,
                reason=reason,
                message=message,
                manifest_sha256=manifest_sha256,
                actor=actor,
            )
        )

    def with_entry(self, entry: RecordEntry) -> PromotionRecord:
        """This record with ``entry`` appended to its log (the last 50 are kept)."""
        return self.model_copy(update={"history": [*self.history, entry][-50:]})

    # The record's transitions: each returns the record to save once a decision is taken
    # ``at`` (the one time its promoter took for it), counting one attempt more.

    @classmethod
    def of(cls, existing: PromotionRecord | None, run_id: str) -> PromotionRecord:
        """``existing``, or the record of ``run_id`` before any decision (no attempt, an
        empty log): every transition starts from it."""
        return existing if existing is not None else cls(run_id=run_id, state=State.PENDING)

    def following(
        self,
        entry: RecordEntry,
        *,
        commit: str | None = None,
        sets: Sequence[SetOutcome] = (),
        pages: Sequence[str] = (),
        invalidations: Sequence[str] = (),
        override: dict[str, str] | None = None,
        imported_from: str | None = None,
    ) -> PromotionRecord:
        """The record once ``entry`` is decided: it states the decision and what it did
        (``commit``, ``sets``, ``pages``, ``invalidations``, ``override``, ``imported_from``:
        an import's keeps its source), counts one attempt more and keeps its log with
        ``entry`` appended. A pending entry keeps the progress this record showed."""
        record = PromotionRecord(
            run_id=self.run_id,
            state=entry.state,
            reason=entry.reason,
            message=entry.message,
            commit=commit,
            manifest_sha256=entry.manifest_sha256,
            decided_at=entry.at,
            actor=entry.actor,
            attempts=self.attempts + 1,
            sets=list(sets),
            pages=list(pages),
            invalidations=list(invalidations),
            override=override,
            imported_from=imported_from or self.imported_from,
            progress=self.progress if entry.state is State.PENDING else None,
            history=self.history,
        )
        return record.with_entry(entry)

    def promoted(
        self,
        promotion: Promotion,
        published: Published,
        invalidations: Sequence[str],
        *,
        at: datetime,
    ) -> PromotionRecord:
        """The record of ``promotion`` once its pages are ``published`` (invalidated by
        ``invalidations``); each promoted set shows the files the publication took off its
        directory's listing (listing retention)."""
        sets = [
            s.model_copy(update={"delisted": list(published.delisted.get(s.index, ()))})
            if s.state is State.PROMOTED
            else s
            for s in promotion.sets
        ]
        entry = RecordEntry(
            at=upload_time(at),
            state=State.PROMOTED,
            message=promotion.message,
            manifest_sha256=promotion.manifest_sha256,
            actor=promotion.actor,
        )
        return self.following(
            entry,
            commit=promotion.commit,
            sets=sets,
            pages=published.keys,
            invalidations=invalidations,
            override=promotion.override,
            imported_from=promotion.imported_from,
        )

    def rejected(
        self,
        rejection: PromotionRejected,
        *,
        at: datetime,
        manifest_sha256: str,
        actor: str | None,
        commit: str | None = None,
        sets: Sequence[SetOutcome] = (),
    ) -> PromotionRecord:
        """The record of a permanent rejection (of a manifest stating ``commit``, ``None``
        when it could not be read); a promoted run stays promoted, with the refused replay in
        its log."""
        entry = RecordEntry.rejected(
            rejection, at=upload_time(at), manifest_sha256=manifest_sha256, actor=actor
        )
        if self.state is State.PROMOTED:
            return self.with_entry(entry)
        return self.following(entry, commit=commit or None, sets=sets)

    def failed(self, *, at: datetime, failure: str, then: str) -> PromotionRecord:
        """The record of a transient failure of an undecided run (``failure``: what failed;
        ``then``: what happens next): the run stays pending."""
        message = f"attempt {self.attempts + 1} failed: {failure}; {then}"
        return self.following(
            RecordEntry(
                at=upload_time(at), state=State.PENDING, reason="transient-error", message=message
            )
        )

    def noted(
        self,
        untrusted: PromotionRejected,
        *,
        at: datetime,
        manifest_sha256: str,
        actor: str | None,
    ) -> PromotionRecord:
        """The record once a manifest from a writer not trusted for it (``untrusted`` says
        why) is noted, as a pending entry that decides nothing: a decided run keeps its
        state."""
        entry = RecordEntry(
            at=upload_time(at),
            state=State.PENDING,
            reason=untrusted.reason.value,
            message=f"ignored: {untrusted.message}",
            manifest_sha256=manifest_sha256,
            actor=actor,
        )
        if self.state is not State.PENDING:
            return self.with_entry(entry)
        return self.following(entry)

    def overridden(
        self,
        target: PromotionRecord,
        *,
        override: Mapping[str, str],
        at: datetime,
        manifest_sha256: str,
        actor: str | None,
    ) -> PromotionRecord:
        """An override request's record once its ``target`` run's record was written: it
        takes the target's state, and its ``override`` names the target too."""
        outcome = f"override applied: run {target.run_id} {target.state.value}" + (
            f" ({target.reason}: {target.message})" if target.reason else ""
        )
        entry = RecordEntry(
            at=upload_time(at),
            state=target.state,
            reason=target.reason,
            message=outcome,
            manifest_sha256=manifest_sha256,
            actor=actor,
        )
        return self.following(
            entry, commit=target.commit, override={**override, "target": target.run_id}
        )

    def decision_about(self, manifest_sha256: str) -> RecordEntry | None:
        """The latest decision on the manifest whose bytes have SHA-256 ``manifest_sha256``:
        promoted or rejected, or else the note that its writer is not trusted for it (the
        promoter never decides those bytes from that writer, so nothing more will come);
        ``None`` while those bytes are undecided, however this run was decided before."""
        about = [h for h in self.history if h.manifest_sha256 == manifest_sha256]
        decided = [h for h in about if h.state is not State.PENDING]
        ignored = [h for h in about if h.reason == Reason.UNTRUSTED_WRITER.value]
        chosen = decided or ignored
        return chosen[-1] if chosen else None


class LeftInNightly(BaseModel):
    """``records/_left/<index>/<filename>.json``: a file an earlier attempt of ``run_id``
    copied into nightly (Object Lock: it stays) before the run was rejected (``reason``, at
    ``at``), with the nightly ``keys`` it left (the file, its core metadata, any verdict). No
    index page lists it, and ``wheelgate index rebuild`` does not list it either, unless a
    later promotion released those very bytes."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    index: str
    filename: str
    keys: list[str]
    reason: str
    at: str
