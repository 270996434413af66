"""The status site's state: what was promoted where, and what was refused.

Pure functions. The state is one small JSON document (``status/state.json``) that
:func:`apply_record` folds each decision record into; :mod:`wheelgate.status.pages` renders
the pages from it. When the test URLs of a run are GitHub Actions run URLs, its entries keep
links to the CI run and to the commit (:func:`~wheelgate.status.links.ci_links`).

The state is bounded whatever happens: :data:`MAX_DECISIONS` decisions per directory,
:data:`MAX_REJECTIONS` rejections overall, :data:`MAX_DIRECTORIES` directories, and the first
:data:`MAX_FILES` files and :data:`MAX_TESTS` tests of a directory's latest promoted run, and
:data:`MAX_IMPORTS` imports of :data:`MAX_IMPORT_FILES` files each.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from wheelgate.core.layout import (
    ARCHIVE_DIR,
    HTML_PAGE,
    IMPORT_RUN_PREFIX,
    OVERRIDE_RUN_PREFIX,
    STATUS_PREFIX,
    YANK_RUN_PREFIX,
)
from wheelgate.core.records import PromotionRecord, SetOutcome, State
from wheelgate.status.links import CiLinks, ci_links

SCHEMA_STATUS_V1 = "wheelgate/status/v1"
STATE_KEY = f"{STATUS_PREFIX}state.json"
MAX_DECISIONS = 20
MAX_REJECTIONS = 50
#: Rejected manifests may name directories that are not configured; this caps what they add.
MAX_DIRECTORIES = 200
MAX_FILES = 500
MAX_TESTS = 100
#: Longer record messages are cut: they are shown in lists, and the state must stay small.
MAX_MESSAGE = 500

Kind = Literal["run", "yank", "override", "import"]
#: Imports a directory's page lists (newest first), and the files it shows of each: an import
#: may bring thousands, and the state is read and written on every decision.
MAX_IMPORTS = 5
MAX_IMPORT_FILES = 50


class TestLink(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    result: str
    url: str | None = None


class FileLine(BaseModel):
    model_config = ConfigDict(frozen=True)

    filename: str
    size: int
    sha256: str


class OverrideMark(BaseModel):
    """A break-glass override that promoted a run: who asked (the principal, masked as every
    output masks it), when it was applied, and why (the request's reason)."""

    model_config = ConfigDict(frozen=True)

    by: str
    at: str
    reason: str = ""


class PromotedRun(BaseModel):
    """The run a directory was last promoted from (never a yank, an override request or an
    import); ``override`` is set when a break-glass override promoted it, its tests not
    passed."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    commit: str | None = None
    decided_at: str
    file_count: int
    files: list[FileLine] = []
    tests: list[TestLink] = []
    links: CiLinks = CiLinks()
    override: OverrideMark | None = None


class ImportedFiles(BaseModel):
    """An import into a directory: files released with no test, apart from tested runs."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    source: str
    decided_at: str
    imported: int
    already: int = 0
    refused: int = 0
    files: list[FileLine] = []


class Decision(BaseModel):
    model_config = ConfigDict(frozen=True)

    run_id: str
    kind: Kind = "run"
    state: State
    reason: str | None = None
    message: str = ""
    at: str = ""
    commit: str | None = None
    links: CiLinks = CiLinks()


class Rejection(BaseModel):
    model_config = ConfigDict(frozen=True)

    run_id: str
    kind: Kind = "run"
    index: str | None = None
    reason: str | None = None
    message: str = ""
    at: str = ""
    links: CiLinks = CiLinks()
    #: Nightly keys an earlier attempt copied that stay there, listed on no index page.
    left_in_nightly: list[str] = []


class DirectoryStatus(BaseModel):
    model_config = ConfigDict(frozen=True)

    latest: PromotedRun | None = None
    #: Newest first.
    decisions: list[Decision] = []
    #: Imports into the directory, newest first: never its latest (tested) run.
    imports: list[ImportedFiles] = []


class StatusState(BaseModel):
    """``status/state.json``."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    schema_: Literal["wheelgate/status/v1"] = Field(default="wheelgate/status/v1", alias="schema")
    directories: dict[str, DirectoryStatus] = {}
    #: Newest first.
    rejections: list[Rejection] = []

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=1) + "\n"


def page_key(index: str | None = None) -> str:
    """Key of the overview page (``index`` None) or of a directory's page."""
    return f"{STATUS_PREFIX}{index}/{HTML_PAGE}" if index else f"{STATUS_PREFIX}{HTML_PAGE}"


def parse_state(raw: bytes | str) -> StatusState:
    """Read ``status/state.json``; raises ``pydantic.ValidationError`` if it is not one.
    Documents written before a field existed read with its default (no links)."""
    return StatusState.model_validate_json(raw)


def run_kind(run_id: str) -> Kind:
    if run_id.startswith(YANK_RUN_PREFIX):
        return "yank"
    if run_id.startswith(OVERRIDE_RUN_PREFIX):
        return "override"
    if run_id.startswith(IMPORT_RUN_PREFIX):
        return "import"
    return "run"


def index_directory(directory: str) -> str:
    """The index directory a directory of pages is of: a yank's pages include the directory's
    archive (``<DIR>/_archive/``), which is part of ``DIR``, never a directory of its own."""
    segments = directory.split("/")
    if ARCHIVE_DIR not in segments:
        return directory
    return "/".join(segments[: segments.index(ARCHIVE_DIR)])


def _cut(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 1] + "…"


def _page_directories(page_keys: Iterable[str]) -> list[str]:
    """Index directories of project page keys (``<index>/<project>/index.*``, an archive page
    ``<index>/_archive/<project>/index.*`` being of ``<index>``): where a yank, which records no
    set, took effect."""
    found: list[str] = []
    for key in page_keys:
        parts = key.split("/")
        if len(parts) >= 3:
            index = index_directory("/".join(parts[:-2]))
            if index not in found:
                found.append(index)
    return found


def _promoted_run(fold: _Fold, outcome: SetOutcome) -> PromotedRun:
    record, at = fold.record, fold.at
    files = sorted(outcome.files, key=lambda f: f.filename)
    override = record.override if fold.kind == "override" else None
    return PromotedRun(
        run_id=record.run_id,
        commit=record.commit,
        links=fold.links,
        decided_at=at,
        override=(
            OverrideMark(by=override.get("by", ""), at=at, reason=_cut(override.get("reason", "")))
            if override is not None
            else None
        ),
        file_count=len(files),
        files=[FileLine(filename=f.filename, size=f.size, sha256=f.sha256) for f in files][
            :MAX_FILES
        ],
        tests=[
            TestLink(name=t.get("name", ""), result=t.get("result", ""), url=t.get("url"))
            for t in outcome.tests[:MAX_TESTS]
        ],
    )


def _imported_files(record: PromotionRecord, outcome: SetOutcome, at: str) -> ImportedFiles:
    new = sorted((f for f in outcome.files if f.action == "imported"), key=lambda f: f.filename)
    return ImportedFiles(
        run_id=record.run_id,
        source=record.imported_from or "",
        decided_at=at,
        imported=len(new),
        already=len(outcome.files) - len(new),
        refused=len(outcome.refused),
        files=[FileLine(filename=f.filename, size=f.size, sha256=f.sha256) for f in new][
            :MAX_IMPORT_FILES
        ],
    )


@dataclass(frozen=True)
class _Fold:
    """The decision of a record being folded in: its run, its kind (``override`` for a run's
    break-glass promotion), when, and its CI links."""

    record: PromotionRecord
    kind: Kind
    at: str
    links: CiLinks

    @property
    def of_a_run(self) -> bool:
        """A run's own decision (not a yank, override or import request's)."""
        return run_kind(self.record.run_id) == "run"


@dataclass(frozen=True)
class _Part:
    """What a decision decided in one directory (``index`` None: the whole manifest).
    ``outcome`` is the set's, None where the record has no set (a yank, a run-level one)."""

    index: str | None
    state: State
    reason: str | None
    message: str
    outcome: SetOutcome | None = None


def _last_decision(record: PromotionRecord) -> tuple[str, _Part]:
    """When the record's last decision was taken, and what it decided for the whole run."""
    if record.history:
        last = record.history[-1]
        return last.at, _Part(None, last.state, last.reason, last.message)
    whole = _Part(None, record.state, record.reason, record.message)
    return record.decided_at or "", whole


def _directory_parts(fold: _Fold, whole: _Part) -> list[_Part]:
    """The directories the decision is shown in: its sets' when it is the record's own current
    decision, the index directories of its pages for a yank (which records no set), else none
    (a refused replay of a promoted run is shown as one run-level decision)."""
    record = fold.record
    if (record.decided_at or "") != fold.at or record.state is not whole.state:
        return []
    if record.sets:
        return [
            _Part(s.index, s.state, s.reason, s.message or whole.message, s) for s in record.sets
        ]
    if fold.kind == "yank":
        return [
            _Part(index, whole.state, whole.reason, whole.message)
            for index in _page_directories(record.pages)
        ]
    return []


def _folded_directory(current: DirectoryStatus, fold: _Fold, part: _Part) -> DirectoryStatus:
    """``current`` with the decision ``part`` listed (replacing itself), as the latest promoted
    run when it is a fresh promotion of a plain run not older than the one shown, and among the
    imports when it is an import's."""
    record, at, outcome = fold.record, fold.at, part.outcome
    decision = Decision(
        run_id=record.run_id,
        kind=fold.kind,
        state=part.state,
        reason=part.reason,
        message=_cut(part.message),
        at=at,
        commit=record.commit,
        links=fold.links,
    )
    decisions = [d for d in current.decisions if (d.run_id, d.at) != (record.run_id, at)]
    latest = current.latest
    imports = [i for i in current.imports if (i.run_id, i.decided_at) != (record.run_id, at)]
    if outcome is not None and part.state is State.PROMOTED:
        if fold.of_a_run and (latest is None or latest.decided_at <= at):
            latest = _promoted_run(fold, outcome)
        if fold.kind == "import":
            imports.append(_imported_files(record, outcome, at))
    return DirectoryStatus(
        latest=latest,
        decisions=sorted([decision, *decisions], key=lambda d: d.at, reverse=True)[:MAX_DECISIONS],
        imports=sorted(imports, key=lambda i: i.decided_at, reverse=True)[:MAX_IMPORTS],
    )


def _with_rejection(rejections: list[Rejection], fold: _Fold, part: _Part) -> list[Rejection]:
    """``rejections`` with ``part`` listed, replacing itself (same run, time and directory)."""
    entry = Rejection(
        run_id=fold.record.run_id,
        kind=fold.kind,
        index=part.index,
        reason=part.reason,
        message=_cut(part.message),
        at=fold.at,
        links=fold.links,
        left_in_nightly=part.outcome.left_in_nightly[:MAX_FILES] if part.outcome else [],
    )
    same = (entry.run_id, entry.at, entry.index)
    return [*(r for r in rejections if (r.run_id, r.at, r.index) != same), entry]


def apply_record(state: StatusState, record: PromotionRecord) -> StatusState:
    """The state with the latest decision of ``record`` folded in.

    Idempotent: a decision already in the state (same run and time) replaces itself. The
    decision is the record's last log entry; when it is the record's own current decision
    its per-directory outcomes are used, otherwise (a refused replay of a promoted run) it is
    listed as one run-level decision. Only a fresh promotion of a run (not a yank, an override
    or an import request) can become a directory's latest promoted run, and only if it is not
    older than the one shown: a run a break-glass override promoted does, its decision listed
    as an ``override``. An import's files are listed apart, under the directory's imports.
    """
    kind = run_kind(record.run_id)
    at, whole = _last_decision(record)
    links = (
        ci_links((t.get("url") for s in record.sets for t in s.tests), record.commit)
        if kind == "run"
        else CiLinks()
    )
    if kind == "run" and record.override is not None and whole.state is State.PROMOTED:
        kind = "override"
    fold = _Fold(record, kind, at, links)
    # A state written before archives were told apart may list one as a directory of its own.
    directories = {d: s for d, s in state.directories.items() if index_directory(d) == d}
    rejections = list(state.rejections)
    parts = _directory_parts(fold, whole)
    for part in parts:
        assert part.index is not None  # every directory part names its directory
        directories[part.index] = _folded_directory(
            directories.get(part.index, DirectoryStatus()), fold, part
        )
        if part.state is State.REJECTED:
            rejections = _with_rejection(rejections, fold, part)
    if not parts and whole.state is State.REJECTED:
        rejections = _with_rejection(rejections, fold, whole)
    return state.model_copy(
        update={
            "directories": _bounded_directories(directories),
            "rejections": sorted(rejections, key=lambda r: r.at, reverse=True)[:MAX_REJECTIONS],
        }
    )


def _bounded_directories(directories: dict[str, DirectoryStatus]) -> dict[str, DirectoryStatus]:
    """At most :data:`MAX_DIRECTORIES`, dropping first those never promoted, then the ones
    whose newest decision is oldest."""
    if len(directories) <= MAX_DIRECTORIES:
        return directories

    def weight(item: tuple[str, DirectoryStatus]) -> tuple[bool, str]:
        status = item[1]
        newest = status.decisions[0].at if status.decisions else ""
        return (status.latest is not None, newest)

    kept = sorted(directories.items(), key=weight, reverse=True)[:MAX_DIRECTORIES]
    return dict(sorted(kept))
