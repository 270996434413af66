"""Staging a run's files and building its manifest (what ``wheelgate stage``/``report`` do)."""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from wheelgate.core.layout import (
    CHECKSUM_SUFFIX,
    METADATA_SUFFIX,
    PAGE_NAMES,
    PAGES,
    RUN_PAGE_TAG_KEY,
    RUN_PAGE_TAG_VALUE,
    SIDECAR_SUFFIXES,
    STAGING,
    check_ci_run_id,
    check_index,
    key_url,
    project_dir,
)
from wheelgate.core.lifecycle import StageWindowClosed, check_stage_window
from wheelgate.core.manifest import (
    SCHEMA_V2,
    ArtifactSetV2,
    EvidenceRefusal,
    InstalledFile,
    ManifestFile,
    ManifestTestV2,
    ManifestV2,
    Outcome,
    check_set_tests,
    check_test_name,
    check_test_url,
    describe_errors,
    parse_distribution_filename,
)
from wheelgate.core.objects import META_COMMIT, META_RUN_ID, ObjectInfo
from wheelgate.core.run_window import DEFAULT_RUN_STAGE_WINDOW_DAYS
from wheelgate.core.wheelmeta import (
    CoreMetadata,
    FileRangeReader,
    WheelMetadataError,
    read_core_metadata,
)
from wheelgate.index.pages import (
    METADATA_CONTENT_TYPE,
    IndexEntry,
    PageFormatError,
    absolute,
    staging_view,
    upload_time,
)
from wheelgate.index.store import IndexStore, PageWrites
from wheelgate.staging.closure import nightly_closure
from wheelgate.storage.bucket import (
    ARTIFACT_CONTENT_TYPE,
    SINGLE_REQUEST_LIMIT,
    UPLOAD_PART_SIZE,
    Bucket,
    FileChangedError,
)
from wheelgate.storage.errors import PreconditionFailed

CHECKSUM_CONTENT_TYPE = "text/plain; charset=utf-8"
_HASH_CHUNK = 8 * 1024 * 1024
_HEX_SHA256 = re.compile(r"[0-9a-f]{64}")


class StageError(ValueError):
    """Input that cannot be staged; nothing was uploaded."""


@dataclass(frozen=True)
class LocalArtifact:
    """A local file to stage. ``sha256`` is ``None`` until the file is hashed: :func:`stage`
    hashes a file sent in one request before it is sent, and a larger one as it uploads."""

    path: Path
    filename: str
    project: str
    size: int
    sha256: str | None
    metadata: CoreMetadata | None

    def hashed(self) -> LocalArtifact:
        """This file with its SHA-256 (read now if not known yet)."""
        return self if self.sha256 else replace(self, sha256=sha256_file(self.path))

    @property
    def digest(self) -> str:
        """The SHA-256 of a hashed file."""
        if self.sha256 is None:
            raise ValueError(f"{self.filename} has not been hashed")
        return self.sha256


def sha256_file(path: Path, progress: Callable[[int], None] | None = None) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
            if progress:
                progress(len(chunk))
    return digest.hexdigest()


def _expanded(paths: Sequence[Path], problems: list[str]) -> list[Path]:
    """``paths`` with each directory replaced by the entries directly in it, in name order
    (``dist/``: the build's wheels and sdists). An empty directory, or one entry of it that is
    itself a directory, is a problem added to ``problems``; any other entry is checked as a file
    given by its path would be (so a file that is not a distribution is refused by name)."""
    files: list[Path] = []
    for path in paths:
        if not path.is_dir():
            files.append(path)
            continue
        entries = sorted(path.iterdir())
        if not entries:
            problems.append(f"{path}: an empty directory; no wheels or sdists in it")
        for entry in entries:
            if entry.is_dir():
                problems.append(
                    f"{entry}: a directory in {path}; give it as an argument of its own"
                )
            else:
                files.append(entry)
    return files


def inspect_files(paths: Sequence[Path]) -> list[LocalArtifact]:
    """Check every file before anything is uploaded: it exists, has a valid distribution name,
    and (for a wheel) readable core metadata. A directory stands for the files directly in it
    (every one must be a wheel or an sdist). Reads a wheel's zip directory and METADATA, not
    its whole file (:func:`stage` hashes each file once). Raises :class:`StageError` listing
    all problems."""
    problems: list[str] = []
    artifacts: list[LocalArtifact] = []
    seen: set[str] = set()
    for path in _expanded(paths, problems):
        if not path.is_file():
            problems.append(f"{path}: no such file")
            continue
        try:
            dist = parse_distribution_filename(path.name)
        except ValueError as exc:
            problems.append(f"{path}: {exc}")
            continue
        if path.name in seen:
            problems.append(f"{path}: a file named {path.name} is already in this upload")
            continue
        seen.add(path.name)
        size = path.stat().st_size
        metadata = None
        if dist.kind == "wheel":
            try:
                with path.open("rb") as handle:
                    metadata = read_core_metadata(FileRangeReader(handle, size), path.name)
            except WheelMetadataError as exc:
                problems.append(f"{path}: {exc}")
                continue
        artifacts.append(LocalArtifact(path, path.name, dist.project, size, None, metadata))
    if problems:
        raise StageError("cannot stage:\n  " + "\n  ".join(problems))
    if not artifacts:
        raise StageError("cannot stage: no files given")
    return artifacts


@dataclass(frozen=True)
class StageResult:
    uploaded: list[str]
    unchanged: list[str]
    pages: PageWrites


def recorded_sha256(staging: Bucket, head: ObjectInfo) -> str | None:
    """The SHA-256 recorded for a staged file: S3's own (a file sent in one request), its user
    metadata's, or its ``.sha256`` sidecar's (a file hashed as it uploaded in parts, whose
    object cannot carry it); ``None`` if none is."""
    if head.sha256 is not None:
        return head.sha256
    found = staging.get(head.key + CHECKSUM_SUFFIX)
    if found is None:
        return None
    digest = found[0].decode("ascii", "replace").split(" ", 1)[0].strip().lower()
    return digest if _HEX_SHA256.fullmatch(digest) else None


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
) -> StageResult:
    """Upload ``artifacts`` under ``runs/<run_id>/<index>/`` with their SHA-256 and commit,
    write each wheel's ``.metadata``, then write the run's index pages (the run's files over
    nightly's, :func:`publish_run_index`).

    Every write is ``If-None-Match: *``: a staged object is never replaced. Staging the same
    bytes again (a re-run of the job) uploads nothing and refreshes the run's pages.

    Raises :class:`StageError`, before anything is uploaded, when a file of the same name is
    already staged for this run with other bytes or from another commit, or (with
    ``publish_pages``) when the run's first object was staged more than ``window_days`` ago: its
    pages, written now, would outlive the files they list (:mod:`wheelgate.core.lifecycle`), or
    nightly's pages of ``index`` cannot be read (a directory nested in another; when only a
    project's page shows it, after the upload).
    Also when another writer wins the race for a name with other bytes, and when the window
    closes while the files upload (then the files are staged but the pages are not written).
    """
    check_ci_run_id(run_id)
    check_index(index)
    started = clock()
    # When the run was first staged, listed once: a run this call starts (nothing staged yet)
    # counts from this call's start, which no object of it predates.
    first = first_staged(staging, run_id) if publish_pages else None
    if publish_pages:
        _check_window(run_id, first, started, window_days)
        # Read before any upload: a directory nested in another is refused with nothing staged.
        nightly_root(nightly, index)
    heads = {
        a.filename: staging.head(STAGING.artifact(run_id, index, a.filename)) for a in artifacts
    }
    # Hashed now: a file sent in one request (S3 checks the hash it carries) and a file
    # already staged (compared with it). A larger new file is hashed as it uploads, so it is
    # read once.
    artifacts = [
        a.hashed() if a.size <= single_request_limit or heads[a.filename] else a for a in artifacts
    ]
    clashes = _clashes(staging, commit, artifacts, heads)
    if clashes:
        raise StageError(
            f"run {run_id} already has other files staged in {index}: {'; '.join(clashes)}; "
            "staged files are never replaced, stage under a new run id"
        )
    uploaded, unchanged = [], []
    for i, artifact in enumerate(artifacts):
        key = STAGING.artifact(run_id, index, artifact.filename)
        if heads[artifact.filename] is not None:
            unchanged.append(artifact.filename)
        else:
            artifacts[i] = artifact = _upload_once(
                staging,
                artifact,
                key,
                run_id=run_id,
                index=index,
                commit=commit,
                progress=progress,
                single_request_limit=single_request_limit,
                part_size=part_size,
            )
            uploaded.append(artifact.filename)
        if artifact.metadata is not None:
            _put_once(
                staging,
                key + METADATA_SUFFIX,
                artifact.metadata.content,
                metadata={META_COMMIT: commit, META_RUN_ID: run_id},
            )
    if not publish_pages:
        return StageResult(uploaded=uploaded, unchanged=unchanged, pages=PageWrites())
    # Uploads of large files take long: the pages are written now, so the window must still
    # be open now.
    try:
        _check_window(run_id, first or started, clock(), window_days)
    except StageError as exc:
        raise StageError(
            f"{exc} (the files were uploaded, but the run's index pages were not updated)"
        ) from None
    try:
        pages = publish_run_index(
            staging=staging,
            nightly=nightly,
            nightly_base_url=nightly_base_url,
            run_id=run_id,
            index=index,
            artifacts=artifacts,
            now=upload_time(clock()),
        )
    except PageFormatError as exc:
        raise _nested(
            index, exc, "the files were uploaded, but the run's index pages were not written"
        ) from exc
    return StageResult(uploaded=uploaded, unchanged=unchanged, pages=pages)


def nightly_root(nightly: Bucket, index: str) -> tuple[str, ...]:
    """The projects nightly's root page of ``index`` lists. Raises :class:`StageError` when the
    page is not a root page: ``index`` is inside another directory."""
    try:
        return IndexStore(nightly).read_root(index)[0]
    except PageFormatError as exc:
        raise _nested(index, exc, "nothing was staged") from exc


def _nested(index: str, exc: PageFormatError, then: str) -> StageError:
    return StageError(
        f"nightly's pages of {index!r} cannot be read ({exc}): is {index!r} inside another "
        f"index directory, or another inside it? Their pages would overwrite each other's; "
        f"stage into a directory of WHEELGATE_ALLOWED_INDEXES ({then})"
    )


def first_staged(staging: Bucket, run_id: str) -> datetime | None:
    """When the oldest object still under the run's prefix was written; ``None`` if none is."""
    times = [
        obj.last_modified
        for obj in staging.list(STAGING.run_prefix(run_id))
        if obj.last_modified is not None
    ]
    return min(times, default=None)


def _check_window(
    run_id: str, first_staged: datetime | None, now: datetime, window_days: int
) -> None:
    try:
        check_stage_window(run_id, first_staged, now, window_days)
    except StageWindowClosed as exc:
        raise StageError(str(exc)) from None


def _upload_once(
    staging: Bucket,
    artifact: LocalArtifact,
    key: str,
    *,
    run_id: str,
    index: str,
    commit: str,
    progress: Callable[[str, int, int], None] | None,
    single_request_limit: int,
    part_size: int,
) -> LocalArtifact:
    """Upload a file that was not staged a moment ago and return it hashed; if another writer
    got there first, its object must be these very bytes from this commit.

    A file hashed as it uploaded gets its ``.sha256`` sidecar once the upload is complete."""
    done = 0

    def report(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(artifact.filename, done, artifact.size)

    try:
        digest = staging.upload_file(
            artifact.path,
            key,
            sha256=artifact.sha256,
            content_type=ARTIFACT_CONTENT_TYPE,
            metadata={META_COMMIT: commit, META_RUN_ID: run_id},
            progress=report,
            single_request_limit=single_request_limit,
            part_size=part_size,
            if_none_match=True,
        )
    except FileChangedError as exc:
        raise StageError(str(exc)) from None
    except PreconditionFailed:
        artifact = artifact.hashed()
        clashes = _clashes(staging, commit, [artifact], {artifact.filename: staging.head(key)})
        if clashes:
            raise StageError(
                f"another writer staged {clashes[0]} while this upload ran; staged files are "
                "never replaced"
            ) from None
        return artifact
    if artifact.sha256 is None:
        _put_once(
            staging,
            key + CHECKSUM_SUFFIX,
            _checksum_line(digest, artifact.filename),
            metadata={META_COMMIT: commit, META_RUN_ID: run_id},
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


def publish_run_index(
    *,
    staging: Bucket,
    nightly: Bucket,
    nightly_base_url: str,
    run_id: str,
    index: str,
    artifacts: Sequence[LocalArtifact],
    now: str,
    workers: int = 16,
) -> PageWrites:
    """Write the run's index for ``index``: a page for every project of ``artifacts`` and of
    their dependency closure in nightly (:mod:`wheelgate.staging.closure`: what their
    ``Requires-Dist``, and that of nightly's files of those projects, name, for any marker or
    extra), each listing the run's own staged files (relative links) over nightly's files as
    they stand now (absolute links), and the root page naming them.

    So the run's tests resolve dependencies that live only in nightly, and install no other
    run's bytes; the cost follows the run and its closure, not the nightly directory. Pages
    are updated with conditional writes and keep the run's files of earlier calls, and the
    root page only gains names, so several build jobs staging into one run's directory, at
    once or one after another, extend its index and lose no entry.
    """
    by_project: dict[str, list[LocalArtifact]] = defaultdict(list)
    for artifact in artifacts:
        by_project[project_dir(artifact.project)].append(artifact)
    # The tag selects the lifecycle rule that expires the pages before the files they list.
    run_pages = IndexStore(
        staging,
        prefix=STAGING.run_pages_prefix(run_id),
        tags={RUN_PAGE_TAG_KEY: RUN_PAGE_TAG_VALUE},
    )
    roots = {
        project: [a.metadata.content for a in own if a.metadata is not None]
        for project, own in by_project.items()
    }
    closure = nightly_closure(nightly, index, roots, workers=workers)
    projects = sorted(p for p, page in closure.items() if page.entries or p in by_project)

    def publish(project: str) -> PageWrites:
        page_dir = PAGES.project_dir(index, project)
        run_page_dir = run_pages.prefix + page_dir
        entries = [
            IndexEntry.for_file(
                a.filename,
                key=STAGING.artifact(run_id, index, a.filename),
                page_dir=run_page_dir,
                sha256=a.digest,
                size=a.size,
                uploaded=now,
                metadata=a.metadata,
            )
            for a in by_project.get(project, ())
        ]
        borrowed = absolute(closure[project].entries, key_url(nightly_base_url, page_dir))
        return run_pages.update_project(index, project, staging_view(borrowed, add=entries))

    writes = PageWrites()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for written in pool.map(publish, projects):
            writes.extend(written)
    writes.extend(run_pages.add_projects(index, projects))
    return writes


def staged_sets(staging: Bucket, run_id: str) -> dict[str, list[ManifestFile]]:
    """Every file staged for ``run_id``, by index directory, with its recorded SHA-256."""
    prefix = STAGING.run_prefix(run_id)
    found: dict[str, list[ManifestFile]] = defaultdict(list)
    for obj in staging.list(prefix):
        rest = obj.key[len(prefix) :]
        index, _, filename = rest.rpartition("/")
        if not index or filename.endswith(SIDECAR_SUFFIXES) or filename in PAGE_NAMES:
            continue
        head = staging.head(obj.key)
        sha256 = recorded_sha256(staging, head) if head is not None else None
        if head is None or sha256 is None:
            raise StageError(f"{obj.key} has no SHA-256; was it staged with wheelgate stage?")
        try:
            file = ManifestFile(filename=filename, sha256=sha256, size=head.size)
        except ValidationError as exc:
            raise StageError(f"{obj.key} cannot be in a manifest: {describe_errors(exc)}") from exc
        found[index].append(file)
    return dict(found)


@dataclass(frozen=True)
class TestSpec:
    index: str
    name: str
    result: Outcome
    url: str | None
    #: The files the test installed (``--installed``, :mod:`wheelgate.staging.installs`).
    installed: tuple[InstalledFile, ...] = ()
    #: What ``report`` refused of the test's evidence (:mod:`wheelgate.staging.evidence`).
    refused: tuple[EvidenceRefusal, ...] = ()


def parse_test_spec(spec: str) -> TestSpec:
    """``DIR:NAME=passed|failed|skipped[@URL]`` -> :class:`TestSpec`; ``ValueError`` if not,
    or if the directory, name or URL breaks the manifest's rules."""
    head, sep, result_part = spec.partition("=")
    index, colon, name = head.partition(":")
    if not sep or not colon or not index or not name:
        raise ValueError(f"test {spec!r} is not DIR:NAME=passed|failed|skipped[@URL]")
    result, _, url = result_part.partition("@")
    try:
        outcome = Outcome(result)
    except ValueError:
        raise ValueError(f"test {spec!r}: result must be passed, failed or skipped") from None
    return TestSpec(
        index=check_index(index),
        name=check_test_name(name),
        result=outcome,
        url=check_test_url(url) if url else None,
    )


def parse_test_specs(specs: Sequence[str]) -> list[TestSpec]:
    """Every spec parsed (:func:`parse_test_spec`), each directory's tests held to the
    manifest's rules for a set (no name twice, not too many); ``ValueError`` if not."""
    tests = [parse_test_spec(spec) for spec in specs]
    names: dict[str, list[str]] = defaultdict(list)
    for test in tests:
        names[test.index].append(test.name)
    for index, index_names in names.items():
        check_set_tests(index, index_names)
    return tests


def build_manifest(
    *, run_id: str, commit: str, staged: Mapping[str, list[ManifestFile]], tests: Sequence[TestSpec]
) -> ManifestV2:
    """The manifest for what is staged plus test results. Raises ``ValueError`` for a test
    naming an index directory with nothing staged, or (one line) for what breaks the
    manifest's rules."""
    unknown = sorted({t.index for t in tests} - set(staged))
    if unknown:
        raise ValueError(
            f"tests name index directories with nothing staged for run {run_id}: "
            + ", ".join(unknown)
        )
    sets = []
    for index, files in sorted(staged.items()):
        try:
            sets.append(
                ArtifactSetV2(
                    index=index,
                    files=sorted(files, key=lambda f: f.filename),
                    tests=tuple(
                        ManifestTestV2(
                            name=t.name,
                            result=t.result,
                            url=t.url,
                            installed=t.installed,
                            refused=t.refused,
                        )
                        for t in tests
                        if t.index == index
                    ),
                )
            )
        except ValidationError as exc:
            raise ValueError(f"set {index!r}: {describe_errors(exc)}") from exc
    try:
        return ManifestV2.model_validate(
            {
                "schema": SCHEMA_V2,
                "run_id": run_id,
                "commit": commit,
                "sets": [s.model_dump() for s in sets],
            }
        )
    except ValidationError as exc:
        raise ValueError(describe_errors(exc)) from exc
