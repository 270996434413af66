"""Staging a run's files, write-once, and then its index pages (what ``wheelgate stage`` does)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from wheelgate.core.layout import (
    CHECKSUM_SUFFIX,
    METADATA_SUFFIX,
    STAGING,
    check_ci_run_id,
    check_index,
)
from wheelgate.core.lifecycle import StageWindowClosed, check_stage_window
from wheelgate.core.objects import META_COMMIT, META_RUN_ID, ObjectInfo
from wheelgate.core.run_window import DEFAULT_RUN_STAGE_WINDOW_DAYS
from wheelgate.history.fold import first_staged
from wheelgate.index.pages import METADATA_CONTENT_TYPE, PageFormatError, ProjectPage, upload_time
from wheelgate.index.store import PageWrites
from wheelgate.staging.errors import StageError
from wheelgate.staging.history_entry import staged_entry, write_entry
from wheelgate.staging.local_artifacts import LocalArtifact
from wheelgate.staging.run_index import (
    nightly_root,
    offered_files,
    publish_run_index,
    run_closure,
    run_index_projects,
    unreadable_nightly,
)
from wheelgate.staging.unresolved import (
    Unresolved,
    UnresolvedRequirementsError,
    unresolved_requirements,
)
from wheelgate.storage.bucket import (
    ARTIFACT_CONTENT_TYPE,
    SINGLE_REQUEST_LIMIT,
    UPLOAD_PART_SIZE,
    Bucket,
    FileChangedError,
)
from wheelgate.storage.errors import PreconditionFailed
from wheelgate.storage.recorded_checksum import recorded_sha256

CHECKSUM_CONTENT_TYPE = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class StageResult:
    uploaded: list[str]
    unchanged: list[str]
    pages: PageWrites
    #: Projects the staged wheels require that neither the run nor nightly holds.
    unresolved: tuple[Unresolved, ...] = ()


def _checksum_line(sha256: str, filename: str) -> bytes:
    """A ``.sha256`` sidecar's content, as ``sha256sum`` prints it."""
    return f"{sha256}  {filename}\n".encode()


def _clashes(
    staging: Bucket,
    commit: str,
    artifacts: Sequence[LocalArtifact],
    heads: Mapping[str, ObjectInfo | None],
) -> list[str]:
    """Why each already-staged file of ``artifacts`` (hashed) cannot stand for it (other
    bytes, no recorded SHA-256 to compare, or another commit): a staged object is never
    replaced."""
    problems = []
    for a in artifacts:
        head = heads.get(a.filename)
        if head is None:
            continue
        staged_sha256 = recorded_sha256(staging, head)
        if staged_sha256 is None:
            problems.append(f"{a.filename} is staged without a SHA-256 checksum")
        elif staged_sha256 != a.sha256:
            problems.append(f"{a.filename} (staged sha256 {staged_sha256}, this file {a.sha256})")
        elif head.metadata.get(META_COMMIT) != commit:
            problems.append(
                f"{a.filename} (staged from commit {head.metadata.get(META_COMMIT) or '(none)'})"
            )
    return problems


def stage(
    *,
    staging: Bucket,
    nightly: Bucket,
    nightly_base_url: str,
    run_id: str,
    index: str,
    commit: str,
    artifacts: Sequence[LocalArtifact],
    progress: Callable[[str, int, int], None] | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    single_request_limit: int = SINGLE_REQUEST_LIMIT,
    part_size: int = UPLOAD_PART_SIZE,
    publish_pages: bool = True,
    window_days: int = DEFAULT_RUN_STAGE_WINDOW_DAYS,
    attempt: int = 1,
    commit_time: str | None = None,
    record_history: bool = True,
    strict: bool = False,
) -> StageResult:
    """Upload ``artifacts`` under ``runs/<run_id>/<index>/`` with their SHA-256 and commit,
    write each wheel's ``.metadata``, then write the run's index pages (the run's files over
    nightly's, :func:`publish_run_index`).

    Every write is ``If-None-Match: *``: a staged object is never replaced. Staging the same
    bytes again (a re-run of the job) uploads nothing and refreshes the run's pages.

    Once the files are staged, with ``record_history`` the call's entry in the run history is
    written once (:mod:`wheelgate.staging.history_entry`): ``attempt`` (the CI run's attempt),
    ``commit_time`` (``None``: unknown), its files, when the run was first staged, and (with
    ``publish_pages``) the nightly files the run's index offers beside them
    (:func:`~wheelgate.staging.run_index.offered_files`, from the same reads of nightly's
    pages that write the run's pages, read before the upload: the result names what the
    wheels require that nobody holds, :mod:`~wheelgate.staging.unresolved`; ``strict`` refuses).

    Raises :class:`StageError`, before anything is uploaded, when a file of the same name is
    already staged for this run with other bytes or from another commit, or (with
    ``publish_pages``) when the run's first object was staged more than ``window_days`` ago: its
    pages, written now, would outlive the files they list (:mod:`wheelgate.core.lifecycle`), or
    nightly's pages of ``index`` cannot be read (a directory nested in another). Also when
    another writer wins the race for a name with other bytes, and when the window closes
    while the files upload (then the files are staged but the pages are not written).
    """
    check_ci_run_id(run_id)
    check_index(index)
    started = clock()
    # When the run was first staged, listed once: a run this call starts (nothing staged yet)
    # counts from this call's start, which no object of it predates.
    first = first_staged(staging, run_id) if publish_pages or record_history else None
    to = _Destination(
        staging=staging,
        run_id=run_id,
        index=index,
        commit=commit,
        progress=progress,
        single_request_limit=single_request_limit,
        part_size=part_size,
    )
    if publish_pages:
        _check_window(run_id, first, started, window_days)
    closure, unresolved = (
        _read_nightly(to, nightly, artifacts, strict) if publish_pages else ({}, ())
    )
    hashed, heads = _checked_against_staged(to, artifacts)
    uploaded, unchanged = _upload_all(to, hashed, heads)
    if record_history:
        _record_entry(to, hashed, closure, first or started, attempt, commit_time)
    if not publish_pages:
        return StageResult(uploaded=uploaded, unchanged=unchanged, pages=PageWrites())
    pages = _publish_after_upload(
        to,
        nightly=nightly,
        nightly_base_url=nightly_base_url,
        artifacts=hashed,
        closure=closure,
        first=first or started,
        clock=clock,
        window_days=window_days,
    )
    return StageResult(uploaded=uploaded, unchanged=unchanged, pages=pages, unresolved=unresolved)


@dataclass(frozen=True)
class _Destination:
    """Where one call of :func:`stage` stages its files, and how it uploads them."""

    staging: Bucket
    run_id: str
    index: str
    commit: str
    progress: Callable[[str, int, int], None] | None
    single_request_limit: int
    part_size: int

    def key(self, filename: str) -> str:
        return STAGING.artifact(self.run_id, self.index, filename)

    @property
    def metadata(self) -> dict[str, str]:
        """The user metadata of each object staged: the commit and the run."""
        return {META_COMMIT: self.commit, META_RUN_ID: self.run_id}


def _checked_against_staged(
    to: _Destination, artifacts: Sequence[LocalArtifact]
) -> tuple[list[LocalArtifact], dict[str, ObjectInfo | None]]:
    """``artifacts`` (those sent in one request or already staged, hashed) and the staged
    object of each name (``None``: not staged). Raises :class:`StageError` when one is staged
    with other bytes or from another commit."""
    heads = {a.filename: to.staging.head(to.key(a.filename)) for a in artifacts}
    # Hashed now: a file sent in one request (S3 checks the hash it carries) and a file
    # already staged (compared with it). A larger new file is hashed as it uploads, so it is
    # read once.
    hashed = [
        a.hashed() if a.size <= to.single_request_limit or heads[a.filename] else a
        for a in artifacts
    ]
    clashes = _clashes(to.staging, to.commit, hashed, heads)
    if clashes:
        raise StageError(
            f"run {to.run_id} already has other files staged in {to.index}: "
            f"{'; '.join(clashes)}; staged files are never replaced, stage under a new run id"
        )
    return hashed, heads


def _read_nightly(
    to: _Destination, nightly: Bucket, artifacts: Sequence[LocalArtifact], strict: bool
) -> tuple[dict[str, ProjectPage], tuple[Unresolved, ...]]:
    """Nightly's pages of the closure of ``artifacts``, read once before any upload (the
    run's pages and its history entry's offer are made from them), and the projects the
    wheels require that neither the run nor nightly holds. Raises :class:`StageError` when
    nightly's pages cannot be read, and with ``strict``
    :class:`~wheelgate.staging.unresolved.UnresolvedRequirementsError` for such projects."""
    # The root page first: a directory nested in another is refused naming its root page.
    nightly_root(nightly, to.index)
    try:
        closure = run_closure(nightly, to.index, artifacts)
    except PageFormatError as exc:
        raise unreadable_nightly(to.index, exc, "nothing was staged") from exc
    unresolved = unresolved_requirements(artifacts, closure)
    if unresolved:
        # Read only then: an earlier call of the run may have staged them.
        held = run_index_projects(to.staging, to.run_id, to.index)
        unresolved = unresolved_requirements(artifacts, closure, held)
    if unresolved and strict:
        raise UnresolvedRequirementsError(to.index, unresolved)
    return closure, unresolved


def _record_entry(
    to: _Destination,
    artifacts: Sequence[LocalArtifact],
    closure: Mapping[str, ProjectPage],
    staged_at: datetime,
    attempt: int,
    commit_time: str | None,
) -> None:
    """Write the call's entry in the run history: ``artifacts`` (hashed), the nightly files
    the pages of their ``closure`` offer, the run's first staged time, the CI run's
    ``attempt`` and the commit time."""
    entry = staged_entry(
        run_id=to.run_id,
        attempt=attempt,
        index=to.index,
        commit=to.commit,
        commit_time=commit_time,
        staged_at=upload_time(staged_at),
        artifacts=artifacts,
        offer=offered_files(closure),
    )
    write_entry(to.staging, entry)


def _upload_all(
    to: _Destination, artifacts: list[LocalArtifact], heads: Mapping[str, ObjectInfo | None]
) -> tuple[list[str], list[str]]:
    """Upload each of ``artifacts`` not staged yet (``heads``), replacing it in ``artifacts``
    with itself hashed, and write each wheel's ``.metadata``; the names uploaded and the names
    already staged."""
    uploaded, unchanged = [], []
    for i, artifact in enumerate(artifacts):
        key = to.key(artifact.filename)
        if heads[artifact.filename] is not None:
            unchanged.append(artifact.filename)
        else:
            artifacts[i] = artifact = _upload_once(to, artifact, key)
            uploaded.append(artifact.filename)
        if artifact.metadata is not None:
            _put_once(
                to.staging,
                key + METADATA_SUFFIX,
                artifact.metadata.content,
                metadata=to.metadata,
            )
    return uploaded, unchanged


def _publish_after_upload(
    to: _Destination,
    *,
    nightly: Bucket,
    nightly_base_url: str,
    artifacts: Sequence[LocalArtifact],
    closure: Mapping[str, ProjectPage],
    first: datetime,
    clock: Callable[[], datetime],
    window_days: int,
) -> PageWrites:
    """The run's index pages written once its files are staged (:func:`publish_run_index`),
    if the run's stage window, which opened at ``first``, is still open."""
    # Uploads of large files take long: the pages are written now, so the window must still
    # be open now.
    try:
        _check_window(to.run_id, first, clock(), window_days)
    except StageError as exc:
        raise StageError(
            f"{exc} (the files were uploaded, but the run's index pages were not updated)"
        ) from None
    try:
        return publish_run_index(
            staging=to.staging,
            nightly=nightly,
            nightly_base_url=nightly_base_url,
            run_id=to.run_id,
            index=to.index,
            artifacts=artifacts,
            now=upload_time(clock()),
            closure=closure,
        )
    except PageFormatError as exc:
        raise unreadable_nightly(
            to.index, exc, "the files were uploaded, but the run's index pages were not written"
        ) from exc


def _check_window(
    run_id: str, first_staged: datetime | None, now: datetime, window_days: int
) -> None:
    try:
        check_stage_window(run_id, first_staged, now, window_days)
    except StageWindowClosed as exc:
        raise StageError(str(exc)) from None


def _upload_once(to: _Destination, artifact: LocalArtifact, key: str) -> LocalArtifact:
    """Upload a file that was not staged a moment ago and return it hashed; if another writer
    got there first, its object must be these very bytes from this commit.

    A file hashed as it uploaded gets its ``.sha256`` sidecar once the upload is complete."""
    done = 0

    def report(n: int) -> None:
        nonlocal done
        done += n
        if to.progress:
            to.progress(artifact.filename, done, artifact.size)

    try:
        digest = to.staging.upload_file(
            artifact.path,
            key,
            sha256=artifact.sha256,
            content_type=ARTIFACT_CONTENT_TYPE,
            metadata=to.metadata,
            progress=report,
            single_request_limit=to.single_request_limit,
            part_size=to.part_size,
            if_none_match=True,
        )
    except FileChangedError as exc:
        raise StageError(str(exc)) from None
    except PreconditionFailed:
        artifact = artifact.hashed()
        clashes = _clashes(
            to.staging, to.commit, [artifact], {artifact.filename: to.staging.head(key)}
        )
        if clashes:
            raise StageError(
                f"another writer staged {clashes[0]} while this upload ran; staged files are "
                "never replaced"
            ) from None
        return artifact
    if artifact.sha256 is None:
        _put_once(
            to.staging,
            key + CHECKSUM_SUFFIX,
            _checksum_line(digest, artifact.filename),
            metadata=to.metadata,
            content_type=CHECKSUM_CONTENT_TYPE,
        )
    return replace(artifact, sha256=digest)


def _put_once(
    staging: Bucket,
    key: str,
    body: bytes,
    *,
    metadata: Mapping[str, str],
    content_type: str = METADATA_CONTENT_TYPE,
) -> None:
    """Write a small staged object once; an existing one must hold the same bytes."""
    try:
        staging.put(key, body, content_type=content_type, if_none_match=True, metadata=metadata)
    except PreconditionFailed:
        found = staging.get(key)
        if found is None or found[0] != body:
            raise StageError(
                f"{key} is already staged with other content; staged files are never replaced"
            ) from None
