"""The run history of an index directory: what a stage call records, and what the promoter
keeps of every run (the contract ``wheelgate bisect`` and the history page read).

A stage call writes one :class:`StagedEntry`, once (``If-None-Match: *``), under
``history/_entries/<index>/<run_id>/`` (:meth:`~wheelgate.core.layout.StagingLayout.history_entry`).
The promoter alone folds entries into the month shards (:class:`HistoryShard`, one per month a
run was first staged in) after checking each file against the staged object's recorded SHA-256
and commit, and records each decision on its run. The head (:class:`HistoryHead`) names the
months, so reading the history of N runs costs one GET plus one per month: no LIST, no wheel.

Pure: no I/O. Times are :func:`~wheelgate.core.timestamps.upload_time` strings (UTC, ``Z``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from wheelgate.core.manifest import (
    CommitSha,
    IndexDir,
    InstalledFile,
    RunId,
    Sha256Hex,
    parse_distribution_filename,
)
from wheelgate.core.timestamps import parse_upload_time, upload_time

ENTRY_SCHEMA: Final = "wheelgate/history-entry/v1"
SHARD_SCHEMA: Final = "wheelgate/history-shard/v1"
HEAD_SCHEMA: Final = "wheelgate/history/v1"

#: A month a shard holds: ``YYYY-MM``.
Month = Annotated[str, Field(pattern=r"^[0-9]{4}-(0[1-9]|1[0-2])$")]


def _utc_moment(value: str) -> str:
    """A time the history keeps: ISO 8601 with a zone, kept in UTC with ``Z``
    (:func:`~wheelgate.core.timestamps.upload_time`). A time without a zone is refused: it
    would compare with no other."""
    try:
        moment = parse_upload_time(value)
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{value!r} has no time zone: give it in UTC (with Z)")
    return upload_time(moment)


#: An upload time (:func:`~wheelgate.core.timestamps.upload_time`): UTC, with a zone.
Moment = Annotated[str, Field(min_length=20, max_length=40), AfterValidator(_utc_moment)]
#: At most this many nightly files a stage entry's offer lists (a run's dependency closure).
MAX_OFFER_FILES = 4000


class RunState(StrEnum):
    """Where a run stands. ``staged``: files staged, never reported; ``pending``: reported,
    not decided yet; ``promoted`` and ``rejected``: the promoter's decision."""

    STAGED = "staged"
    PENDING = "pending"
    PROMOTED = "promoted"
    REJECTED = "rejected"


class EntryFile(BaseModel):
    """A file a stage call staged: its name, SHA-256 and size."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    filename: Annotated[str, Field(min_length=1, max_length=255)]
    sha256: Sha256Hex
    size: Annotated[int, Field(gt=0)]


class OfferFile(BaseModel):
    """A nightly file a run's own index offered when the run was staged (a dependency of the
    run's closure that lives in nightly): its name and SHA-256, as nightly's page listed it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    filename: Annotated[str, Field(min_length=1, max_length=255)]
    sha256: Sha256Hex


class StagedEntry(BaseModel):
    """What one ``wheelgate stage`` call staged, as it writes it to the history (once)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    schema_: Literal["wheelgate/history-entry/v1"] = Field(default=ENTRY_SCHEMA, alias="schema")
    run_id: RunId
    #: The CI run's attempt (``GITHUB_RUN_ATTEMPT``); 1 for a first attempt.
    attempt: Annotated[int, Field(ge=1)] = 1
    index: IndexDir
    commit: CommitSha
    #: When the commit was made (``git show -s --format=%cI``), when it was known.
    commit_time: Moment | None = None
    staged_at: Moment
    files: Annotated[tuple[EntryFile, ...], Field(min_length=1)]
    #: The nightly files the run's index offered beside ``files`` when they were staged: what
    #: a resolver could pick for a run that is never reported.
    offer: Annotated[tuple[OfferFile, ...], Field(max_length=MAX_OFFER_FILES)] = ()

    @property
    def entry_id(self) -> str:
        """The entry's name: its attempt and a digest of its content, so a re-run that stages
        the same files writes the same entry, and nothing else can claim its key."""
        body = json.dumps(self.model_dump(mode="json", by_alias=True), sort_keys=True)
        return f"{self.attempt}-{hashlib.sha256(body.encode()).hexdigest()[:32]}"

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True)


class HistoryFile(BaseModel):
    """A file of a run, as the history keeps it after the promoter checked it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    filename: str
    project: str
    version: str
    sha256: Sha256Hex
    size: int
    #: Its key in staging (``runs/<run_id>/<index>/<filename>``).
    staging_key: str
    #: Its key in nightly once a promotion released these bytes (permanent).
    nightly_key: str | None = None
    #: When the staged copy expires (the staging lifecycle); ``None`` when unknown.
    expires_at: Moment | None = None

    def expired(self, now: datetime) -> bool:
        """Whether the staged copy is gone by ``now`` (a nightly copy never expires)."""
        return self.expires_at is not None and parse_upload_time(self.expires_at) <= now

    def available(self, now: datetime) -> bool:
        """Whether the file can still be installed at ``now``: from nightly, or from staging
        before it expires."""
        return self.nightly_key is not None or not self.expired(now)


class OfferedFile(BaseModel):
    """A nightly file of a run's offer, as the history keeps it after the promoter checked it
    against nightly: its name, project, SHA-256 and nightly key (permanent)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    filename: str
    project: str
    sha256: Sha256Hex
    nightly_key: str


class InstallRoute(StrEnum):
    """How ``wheelgate bisect`` installs a run: ``evidence``, the files one of its tests
    installed (a passed test's first, else a failed one's); ``offer``, a run never reported,
    the files its own index offered when staged, resolved among those alone; ``none``, it
    cannot be installed exactly (:attr:`RunInstall.reason` says why)."""

    EVIDENCE = "evidence"
    OFFER = "offer"
    NONE = "none"


class RunInstall(BaseModel):
    """How a run installs, as the history and its page say: the route, the test whose
    evidence it is (``evidence``), and why not (``none``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    route: InstallRoute
    test: str | None = None
    reason: str = ""


class CommitTimeBy(StrEnum):
    """Who stated a run's commit time: a build job's stage call (shown, never used alone to
    order runs) or the reporter's manifest."""

    BUILD = "build"
    REPORTER = "reporter"


class TestRecord(BaseModel):
    """A test's outcome for the run's set, and the files it installed (its evidence)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    result: str
    installed: tuple[InstalledFile, ...] = ()
    #: Where each installed file that is not one of the run's can be fetched from, by SHA-256:
    #: a nightly key (a dependency that lives in nightly).
    nightly_keys: dict[str, str] = {}


class HistoryRun(BaseModel):
    """One run of one index directory, as its history shows it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: RunId
    attempt: int = 1
    index: IndexDir
    commit: CommitSha
    commit_time: Moment | None = None
    #: Who stated ``commit_time`` (``None`` with no commit time).
    commit_time_by: CommitTimeBy | None = None
    #: When it was first staged: the earliest LastModified of its staged objects, as the
    #: promoter read it (the month shard it lives in).
    staged_at: Moment
    reported_at: Moment | None = None
    decided_at: Moment | None = None
    state: RunState = RunState.STAGED
    #: The decision's reason codes (``tests-failed``, ...): empty when promoted or undecided.
    reasons: tuple[str, ...] = ()
    message: str = ""
    tests: tuple[TestRecord, ...] = ()
    files: tuple[HistoryFile, ...] = ()
    #: The nightly files its index offered beside ``files`` when staged (checked).
    offer: tuple[OfferedFile, ...] = ()
    #: How ``wheelgate bisect`` installs it (``None``: written before this was recorded).
    install: RunInstall | None = None

    @property
    def month(self) -> str:
        return self.staged_at[:7]

    def projects(self) -> set[str]:
        return {f.project for f in self.files}

    def expired(self, now: datetime) -> bool:
        """Whether none of its files can be installed any more."""
        return bool(self.files) and not any(f.available(now) for f in self.files)


class HistoryShard(BaseModel):
    """The runs of one index directory first staged in one month, oldest first."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    schema_: Literal["wheelgate/history-shard/v1"] = Field(default=SHARD_SCHEMA, alias="schema")
    index: IndexDir
    month: Month
    runs: tuple[HistoryRun, ...] = ()

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True)


class MonthRef(BaseModel):
    """A month the history holds, and how many runs it has."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    month: Month
    runs: int


class CappedDay(BaseModel):
    """A day on which more never-reported runs were staged than the history lists: the cap,
    and the runs it dropped (their entries stay where the build jobs wrote them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    day: Annotated[str, Field(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")]
    cap: int
    dropped: tuple[RunId, ...] = ()


class HistoryHead(BaseModel):
    """An index directory's history: the months that hold its runs, newest first."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    schema_: Literal["wheelgate/history/v1"] = Field(default=HEAD_SCHEMA, alias="schema")
    index: IndexDir
    updated_at: Moment
    months: tuple[MonthRef, ...] = ()
    #: Days whose never-reported runs were capped, and what was dropped.
    capped: tuple[CappedDay, ...] = ()

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True)


def project_and_version(filename: str) -> tuple[str, str]:
    """A distribution file name's normalized project and version, as the history lists them.
    Raises ``ValueError`` for a name that is not a wheel or sdist."""
    dist = parse_distribution_filename(filename)
    return str(dist.project), str(dist.version)


def staging_order(run: HistoryRun) -> tuple[str, str]:
    """A run's place in the order runs were staged: when it was first staged, then its run id.
    S3 keeps a LastModified to the second, so runs staged in one second share a time: the run
    id tells them apart, the same way wherever runs are ordered by staging."""
    return (run.staged_at, run.run_id)


def newest_first(runs: Iterable[HistoryRun]) -> list[HistoryRun]:
    """``runs`` newest first by when they were staged (:func:`staging_order`)."""
    return sorted(runs, key=staging_order, reverse=True)
