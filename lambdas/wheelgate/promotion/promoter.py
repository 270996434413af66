"""Promotion of one manifest: verify, copy, publish, record.

The order is the product's promise. Everything is checked before the first copy; every copy
succeeds before any index page changes; the record is written last. Each step is idempotent
(a released file with the same bytes is skipped, a page that already lists a file is left
alone), so a redelivered or retried message converges on the same final state.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from wheelgate.core.acceptance import AcceptanceDecision, AcceptancePolicy, decide
from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.layout import (
    METADATA_SUFFIX,
    NIGHTLY,
    OVERRIDE_RUN_PREFIX,
    PAGES,
    STAGING,
    YANK_RUN_PREFIX,
    LayoutError,
    relative_href,
)
from wheelgate.core.manifest import (
    ArtifactSet,
    Manifest,
    parse_distribution_filename,
    parse_manifest,
)
from wheelgate.core.objects import ObjectInfo
from wheelgate.core.override import parse_override
from wheelgate.core.planning import FileStep, SetPlan, plan_set
from wheelgate.core.records import FileOutcome, PromotionRecord, SetOutcome, State
from wheelgate.core.settings import PromoterSettings
from wheelgate.core.wheelmeta import (
    CoreMetadata,
    WheelMetadataError,
    core_metadata,
    read_core_metadata,
)
from wheelgate.index.pages import (
    METADATA_CONTENT_TYPE,
    IndexEntry,
    ProjectPage,
    absolute,
    merge_entries,
    staging_view,
    upload_time,
)
from wheelgate.index.store import IndexStore, PageWrites
from wheelgate.index.yank import YankRequest, apply_yank, parse_yank
from wheelgate.promotion.recorder import (
    Decision,
    RecordStore,
    build_record,
    next_attempt,
    with_history,
)
from wheelgate.storage.bucket import (
    MULTIPART_PART_SIZE,
    SINGLE_REQUEST_LIMIT,
    Bucket,
    PreconditionFailed,
    S3RangeReader,
)


class Invalidator(Protocol):
    def invalidate(self, distribution_id: str, keys: Sequence[str]) -> list[str]: ...


@dataclass(frozen=True)
class ManifestEvent:
    """An S3 ObjectCreated event for a manifest key; ``principal_id`` is who wrote it."""

    key: str
    principal_id: str | None = None


def written_by(principal_id: str | None, role_id: str) -> bool:
    """Whether an S3 event's ``principalId`` is the role with unique id ``role_id`` (any of
    its sessions: ``AWS:<role id>:<session>``)."""
    return principal_id is not None and (
        principal_id == f"AWS:{role_id}" or principal_id.startswith(f"AWS:{role_id}:")
    )


def _now() -> datetime:
    return datetime.now(UTC)


def add_missing(
    entries: Iterable[IndexEntry],
) -> Callable[[tuple[IndexEntry, ...]], tuple[IndexEntry, ...]]:
    """Page transform that adds ``entries`` but keeps an entry the page already lists (its
    original upload time stays), so re-publishing a set is a no-op."""
    entries = tuple(entries)

    def transform(current: tuple[IndexEntry, ...]) -> tuple[IndexEntry, ...]:
        present = {e.filename for e in current}
        return merge_entries(current, [e for e in entries if e.filename not in present])

    return transform


@dataclass(frozen=True)
class _ProjectPages:
    """A project's nightly and staging pages (with ETags) as read while planning."""

    nightly: tuple[ProjectPage, str | None]
    staging: tuple[ProjectPage, str | None]

    def nightly_entry(self, filename: str) -> IndexEntry | None:
        return next((e for e in self.nightly[0].entries if e.filename == filename), None)

    def staging_entry(self, filename: str) -> IndexEntry | None:
        """The staging page's own (staged) entry for a file, not one borrowed from nightly."""
        return next(
            (e for e in self.staging[0].entries if e.filename == filename and not e.is_absolute),
            None,
        )


@dataclass(frozen=True)
class _SetWork:
    plan: SetPlan
    pages: dict[str, _ProjectPages]
    #: ETag and size of each staged ``.metadata`` file, by the name of the file it describes.
    sidecars: dict[str, tuple[str, int]]
    #: Keys of the set's projects' files that nightly already holds.
    nightly_keys: frozenset[str]


class Promoter:
    """Promotes manifests from the staging bucket into the nightly bucket."""

    def __init__(
        self,
        *,
        settings: PromoterSettings,
        staging: Bucket,
        nightly: Bucket,
        invalidator: Invalidator | None = None,
        clock: Callable[[], datetime] = _now,
        workers: int = 16,
        single_request_limit: int = SINGLE_REQUEST_LIMIT,
        part_size: int = MULTIPART_PART_SIZE,
    ) -> None:
        self.settings = settings
        self.staging = staging
        self.nightly = nightly
        self.invalidator = invalidator
        self.clock = clock
        self.workers = workers
        # S3 limits, lowered only by tests that exercise multipart copies with small files.
        self.single_request_limit = single_request_limit
        self.part_size = part_size
        self.policy = AcceptancePolicy(
            required_tests=settings.required_tests,
            allowed_indexes=settings.allowed_indexes,
            block_all_on_failure=settings.block_all_on_failure,
        )
        self.records = RecordStore(staging)
        self.staging_pages = IndexStore(staging)
        self.nightly_pages = IndexStore(nightly)

    # -- records -------------------------------------------------------------------------

    def load_record(self, run_id: str) -> PromotionRecord | None:
        """The record of ``run_id``, or ``None`` when no decision was recorded yet."""
        return self.records.load(run_id)

    def record_failure(self, key: str, error: BaseException) -> None:
        """Note a transient failure on the run's record (the message will be retried)."""
        try:
            run_id = STAGING.run_id_from_manifest_key(key)
        except LayoutError:
            return
        existing = self.load_record(run_id)
        if existing is not None and existing.state is not State.PENDING:
            return
        at = upload_time(self.clock())
        message = (
            f"attempt {next_attempt(existing)} failed: {type(error).__name__}: {error}; "
            "it will be retried"
        )
        decision = Decision(at=at, state=State.PENDING, reason="transient-error", message=message)
        self.records.save(build_record(existing, decision, run_id=run_id))

    # -- the flow ------------------------------------------------------------------------

    def handle(self, event: ManifestEvent) -> PromotionRecord | None:
        """Decide on the manifest at ``event.key`` and act on it.

        Returns the record written (or the existing one when this manifest was already
        decided), ``None`` when the key is not a manifest or the manifest is gone. Permanent
        rejections are recorded and returned, never raised; transient errors raise.
        """
        try:
            run_id = STAGING.run_id_from_manifest_key(event.key)
        except LayoutError:
            return None
        found = self.staging.get(event.key)
        if found is None:
            return None
        raw, _etag = found
        digest = hashlib.sha256(raw).hexdigest()
        existing = self.load_record(run_id)
        if existing is not None and digest in {
            h.manifest_sha256 for h in existing.history if h.state is not State.PENDING
        }:
            # These exact bytes were decided already (at-least-once delivery): no-op.
            return existing
        actor = event.principal_id
        if run_id.startswith(OVERRIDE_RUN_PREFIX):
            return self._override(run_id, raw, digest, actor, existing)
        try:
            self._check_writer(actor, run_id)
            if run_id.startswith(YANK_RUN_PREFIX):
                request = parse_yank(raw, expected_run_id=run_id)
                return self._yank(request, digest, actor, existing)
            manifest = parse_manifest(raw, expected_run_id=run_id)
            if existing is not None and existing.state is State.PROMOTED:
                raise PromotionRejected(
                    Reason.REPLAY_CONFLICT,
                    f"run {run_id} was already promoted from another manifest "
                    f"(sha256 {existing.manifest_sha256}); a promoted run is never changed",
                )
            return self._promote(manifest, digest, actor, existing)
        except PromotionRejected as rejection:
            return self._reject(run_id, rejection, digest, actor, existing)

    def _yank(
        self,
        request: YankRequest,
        digest: str,
        actor: str | None,
        existing: PromotionRecord | None,
    ) -> PromotionRecord:
        """Set a released file's yank state on its nightly and staging pages."""
        yanked: str | bool = (request.reason or True) if request.yanked else False
        project = parse_distribution_filename(request.filename).project
        nightly = self.nightly_pages.update_project(
            request.index, project, lambda current: apply_yank(current, request.filename, yanked)
        )
        assert nightly.page is not None
        staging = self._refresh_staging_page(request.index, nightly.page, drop=())
        invalidations = self._invalidate(nightly, staging)
        verb = "yanked" if request.yanked else "unyanked"
        message = f"{verb} {request.index}/{request.filename}" + (
            f": {request.reason}" if request.reason else ""
        )
        decision = Decision(
            at=upload_time(self.clock()),
            state=State.PROMOTED,
            message=message,
            manifest_sha256=digest,
            actor=actor,
        )
        return self.records.save(
            build_record(
                existing,
                decision,
                run_id=request.run_id,
                pages=nightly.keys,
                invalidations=invalidations,
            )
        )

    def _refresh_staging_page(
        self,
        index: str,
        nightly_page: ProjectPage,
        *,
        drop: Iterable[str],
        known: tuple[ProjectPage, str | None] | None = None,
    ) -> PageWrites:
        """Re-merge a project's staging page over its nightly page as it now stands, dropping
        the staged entries in ``drop`` (now released)."""
        borrowed = absolute(
            nightly_page.entries,
            self.settings.nightly_base_url + PAGES.project_dir(index, nightly_page.name),
        )
        return self.staging_pages.update_project(
            index, nightly_page.name, staging_view(borrowed, drop=drop), known=known
        )

    def _check_writer(self, principal_id: str | None, run_id: str) -> None:
        """The reporter writes run manifests; a dependency-mirror run (``deps-*``), which the
        promoter accepts on its review instead of tests, only from the mirror's own role."""
        mirror = run_id.startswith(self.policy.review_run_prefix)
        trusted = self.settings.trusted_deps_id if mirror else self.settings.trusted_reporter_id
        if trusted is None and mirror and self.settings.trusted_reporter_id is not None:
            raise PromotionRejected(
                Reason.UNTRUSTED_WRITER,
                "dependency-mirror runs are accepted only from the deps role, and none is "
                "configured",
            )
        if trusted is not None and not written_by(principal_id, trusted):
            raise PromotionRejected(
                Reason.UNTRUSTED_WRITER,
                f"manifest was written by {principal_id or 'an unknown principal'}, "
                f"not by the {'deps' if mirror else 'reporter'} role",
            )

    def _reject(
        self,
        run_id: str,
        rejection: PromotionRejected,
        digest: str,
        actor: str | None,
        existing: PromotionRecord | None,
        sets: Sequence[SetOutcome] = (),
    ) -> PromotionRecord:
        decision = Decision.rejected(
            rejection, at=upload_time(self.clock()), manifest_sha256=digest, actor=actor
        )
        if existing is not None and existing.state is State.PROMOTED:
            # A promoted run stays promoted; the refused replay goes into its history.
            return self.records.save(with_history(existing, decision))
        return self.records.save(build_record(existing, decision, run_id=run_id, sets=sets))

    def _override(
        self,
        run_id: str,
        raw: bytes,
        digest: str,
        actor: str | None,
        existing: PromotionRecord | None,
    ) -> PromotionRecord:
        """Apply a break-glass override request to its target run; record both."""
        try:
            trusted = self.settings.break_glass_id
            if trusted is None or not written_by(actor, trusted):
                raise PromotionRejected(
                    Reason.UNTRUSTED_WRITER,
                    f"override requested by {actor or 'an unknown principal'}, which is not the "
                    "break-glass role" + ("" if trusted else " (no break-glass role configured)"),
                )
            request = parse_override(raw, expected_run_id=run_id)
            target = request.target_run_id
            found = self.staging.get(STAGING.manifest(target))
            target_record = self.load_record(target)
            if found is None or target_record is None:
                raise PromotionRejected(
                    Reason.OVERRIDE_NOT_APPLICABLE,
                    f"run {target} has no manifest or no decision yet; nothing to override",
                )
            if target_record.state is not State.REJECTED:
                raise PromotionRejected(
                    Reason.OVERRIDE_NOT_APPLICABLE,
                    f"run {target} is {target_record.state.value}; only a rejected run can be "
                    "overridden",
                )
            target_raw = found[0]
            manifest = parse_manifest(target_raw, expected_run_id=target)
        except PromotionRejected as rejection:
            return self._reject(run_id, rejection, digest, actor, existing)
        override = {"by": actor or "", "reason": request.reason, "request": run_id}
        result = self._promote(
            manifest,
            hashlib.sha256(target_raw).hexdigest(),
            actor,
            target_record,
            override=override,
        )
        at = upload_time(self.clock())
        outcome = f"override applied: run {target} {result.state.value}" + (
            f" ({result.reason}: {result.message})" if result.reason else ""
        )
        decision = Decision(
            at=at,
            state=result.state,
            reason=result.reason,
            message=outcome,
            manifest_sha256=digest,
            actor=actor,
        )
        return self.records.save(build_record(existing, decision, run_id=run_id, override=override))

    def _promote(
        self,
        manifest: Manifest,
        digest: str,
        actor: str | None,
        existing: PromotionRecord | None,
        *,
        override: dict[str, str] | None = None,
    ) -> PromotionRecord:
        acceptance = decide(manifest, self.policy)
        if override is not None:
            # Break-glass: the tests do not decide; every integrity check below still does.
            acceptance = AcceptanceDecision(accepted=tuple(manifest.sets), rejected=())
        rejected_sets = [
            SetOutcome(
                index=s.index,
                state=State.REJECTED,
                reason=err.reason.value,
                message=err.message,
                tests=[t.model_dump(mode="json", exclude_none=True) for t in s.tests],
            )
            for s, err in acceptance.rejected
        ]
        if not acceptance.accepted:
            first = acceptance.rejected[0][1]
            return self._reject(manifest.run_id, first, digest, actor, existing, rejected_sets)
        # Verify every accepted set before copying anything.
        try:
            work = [self._plan(manifest, s) for s in acceptance.accepted]
        except PromotionRejected as rejection:
            sets = [
                SetOutcome(
                    index=s.index,
                    state=State.REJECTED,
                    reason=(
                        rejection.reason.value
                        if rejection.index in (None, s.index)
                        else Reason.BLOCKED_BY_OTHER_SET.value
                    ),
                    message=rejection.message,
                )
                for s in acceptance.accepted
            ]
            return self._reject(
                manifest.run_id, rejection, digest, actor, existing, sets + rejected_sets
            )
        entries = self._release(work)
        pages_nightly, pages_staging = self._publish(work, entries)
        plans = [w.plan for w in work]
        invalidations = self._invalidate(pages_nightly, pages_staging)
        at = upload_time(self.clock())
        sets = [
            SetOutcome(
                index=plan.index,
                state=State.PROMOTED,
                files=[
                    FileOutcome(
                        filename=step.file.filename,
                        sha256=step.file.sha256,
                        size=step.file.size,
                        action="copied" if step.copy else "already-released",
                    )
                    for step in plan.steps
                ],
                tests=[
                    t.model_dump(mode="json", exclude_none=True)
                    for s in acceptance.accepted
                    if s.index == plan.index
                    for t in s.tests
                ],
            )
            for plan in plans
        ]
        copied = sum(len(p.copies) for p in plans)
        total = sum(len(p.steps) for p in plans)
        message = f"promoted {total} file(s) in {len(plans)} set(s) ({copied} copied)"
        if override is not None:
            message += f"; tests overridden by {override['by']}: {override['reason']}"
        if rejected_sets:
            message += f"; {len(rejected_sets)} set(s) rejected"
        decision = Decision(
            at=at, state=State.PROMOTED, message=message, manifest_sha256=digest, actor=actor
        )
        return self.records.save(
            build_record(
                existing,
                decision,
                run_id=manifest.run_id,
                commit=manifest.commit,
                sets=sets + rejected_sets,
                pages=pages_nightly.keys,
                invalidations=invalidations,
                override=override,
            )
        )

    def _read_pages(self, artifact_set: ArtifactSet) -> dict[str, _ProjectPages]:
        """The nightly and staging pages of each project of a set (two requests a project)."""
        projects = sorted(artifact_set.projects)
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            nightly = list(
                pool.map(lambda p: self.nightly_pages.read_project(artifact_set.index, p), projects)
            )
            staging = list(
                pool.map(lambda p: self.staging_pages.read_project(artifact_set.index, p), projects)
            )
        return {p: _ProjectPages(n, s) for p, n, s in zip(projects, nightly, staging, strict=True)}

    def _plan(self, manifest: Manifest, artifact_set: ArtifactSet) -> _SetWork:
        """Verify a set: one listing, a HEAD per staged file (S3's SHA-256), the project pages.

        Whether a file is already released is read from the nightly project page, which lists
        every released file of the project with its SHA-256; a file in nightly but not listed
        (an interrupted promotion, or an out-of-band write) is found by listing the project's
        own nightly files, before any copy, and checked by a HEAD.
        """
        prefix = STAGING.run_index_prefix(manifest.run_id, artifact_set.index)
        listing = {
            obj.key[len(prefix) :]: obj
            for obj in self.staging.list(prefix)
            if "/" not in obj.key[len(prefix) :]
        }
        files = [n for n in listing if not n.endswith(METADATA_SUFFIX)]
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            heads = list(pool.map(lambda name: self.staging.head(prefix + name), files))
        staged: dict[str, ObjectInfo] = {
            name: ObjectInfo(key=obj.key, size=obj.size, etag=obj.etag)
            for name, obj in listing.items()
            if name.endswith(METADATA_SUFFIX)
        }
        staged.update({name: head for name, head in zip(files, heads, strict=True) if head})
        pages = self._read_pages(artifact_set)
        # Every nightly key of these projects' files (one listing per file-name prefix, so the
        # cost follows the project's own files, not the directory's): catches a file that an
        # interrupted promotion copied but never listed.
        prefixes = sorted({f.filename.split("-", 1)[0] + "-" for f in artifact_set.files})
        nightly_keys = {
            obj.key
            for prefix in prefixes
            for obj in self.nightly.list(NIGHTLY.artifact(artifact_set.index, prefix))
        }
        released: dict[str, ObjectInfo | None] = {}
        for f in artifact_set.files:
            key = NIGHTLY.artifact(artifact_set.index, f.filename)
            listed = pages[f.distribution.project].nightly_entry(f.filename)
            if listed is not None:
                released[f.filename] = ObjectInfo(
                    key=key, size=listed.size, etag="", s3_sha256=listed.sha256
                )
            elif key in nightly_keys:
                released[f.filename] = self.nightly.head(key)
            else:
                released[f.filename] = None
        plan = plan_set(
            artifact_set,
            run_id=manifest.run_id,
            commit=manifest.commit,
            staged=staged,
            released=released,
        )
        return _SetWork(
            plan=plan,
            pages=pages,
            nightly_keys=frozenset(nightly_keys),
            sidecars={
                name[: -len(METADATA_SUFFIX)]: (obj.etag, obj.size)
                for name, obj in listing.items()
                if name.endswith(METADATA_SUFFIX)
            },
        )

    def _release(self, work: Sequence[_SetWork]) -> list[IndexEntry]:
        """Copy every planned file and its core metadata; return the nightly entries."""
        jobs = [(w, step) for w in work for step in w.plan.steps]
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(lambda job: self._release_one(*job), jobs))

    def _release_one(self, work: _SetWork, step: FileStep) -> IndexEntry:
        if step.copy:
            self._copy(
                work,
                step,
                step.source_key,
                step.source_etag,
                step.file.size,
                step.target_key,
                step.file.sha256,
            )
        metadata = self._core_metadata(work, step) if step.is_wheel else None
        page_dir = PAGES.project_dir(step.index, step.file.distribution.project)
        return IndexEntry(
            filename=step.file.filename,
            url=relative_href(page_dir, step.target_key),
            sha256=step.file.sha256,
            size=step.file.size,
            upload_time=upload_time(self.clock()),
            requires_python=metadata.requires_python if metadata else None,
            metadata_sha256=metadata.sha256 if metadata else None,
        )

    def _copy(
        self,
        work: _SetWork,
        step: FileStep,
        source: str,
        etag: str,
        size: int,
        target: str,
        sha256: str,
    ) -> None:
        """Server-side copy that must end with ``target`` holding bytes of ``sha256``; a key
        nightly already holds is checked, never written."""
        try:
            if target in work.nightly_keys:
                raise PreconditionFailed(target)
            copied_sha = self.nightly.copy_in(
                self.staging,
                source,
                etag,
                size,
                target,
                part_size=self.part_size,
                single_request_limit=self.single_request_limit,
            )
        except PreconditionFailed:
            # Already there (an interrupted earlier attempt, or a twin): same bytes or refuse.
            head = self.nightly.head(target)
            if head is None or head.sha256 != sha256:
                raise PromotionRejected(
                    Reason.NIGHTLY_CONFLICT,
                    f"{target} exists in nightly with other bytes (sha256 "
                    f"{head.sha256 if head else 'unknown'}); released files are never overwritten",
                    index=step.index,
                ) from None
            return
        if copied_sha is None:
            # A multipart copy has no full-object checksum from S3: check that the copy
            # carries the recorded SHA-256 and the right size.
            copied = self.nightly.head(target)
            if copied is not None and copied.size == size:
                copied_sha = copied.meta_sha256
        if copied_sha != sha256:
            raise PromotionRejected(
                Reason.COPY_VERIFICATION_FAILED,
                f"{target}: the copy has sha256 {copied_sha}, expected {sha256}",
                index=step.index,
            )

    def _core_metadata(self, work: _SetWork, step: FileStep) -> CoreMetadata:
        """The wheel's PEP 658 metadata, released beside it in nightly.

        Usually a server-side copy of the ``.metadata`` file staged with the wheel, whose hash
        and ``Requires-Python`` the staging page already lists for exactly these wheel bytes
        (S3 checksums the copy, so the listed hash is the released file's). Otherwise it is
        read from the staged wheel with ranged reads and written.
        """
        key = NIGHTLY.metadata(step.index, step.file.filename)
        staged = work.pages[step.file.distribution.project].staging_entry(step.file.filename)
        sidecar = work.sidecars.get(step.file.filename)
        if (
            staged is not None
            and staged.sha256 == step.file.sha256
            and staged.metadata_sha256
            and sidecar is not None
        ):
            etag, size = sidecar
            self._copy(
                work,
                step,
                step.source_key + METADATA_SUFFIX,
                etag,
                size,
                key,
                staged.metadata_sha256,
            )
            return CoreMetadata(
                content=b"", sha256=staged.metadata_sha256, requires_python=staged.requires_python
            )
        found = self.nightly.get(key)
        if found is not None:
            return core_metadata(found[0])
        reader = S3RangeReader(
            self.staging.client,
            self.staging.name,
            step.source_key,
            step.file.size,
            step.source_etag,
        )
        try:
            metadata = read_core_metadata(reader, step.file.filename)
        except WheelMetadataError as exc:
            raise PromotionRejected(Reason.METADATA_UNREADABLE, str(exc), index=step.index) from exc
        try:
            self.nightly.put(
                key, metadata.content, content_type=METADATA_CONTENT_TYPE, if_none_match=True
            )
        except PreconditionFailed:
            found = self.nightly.get(key)
            if found is None or core_metadata(found[0]).sha256 != metadata.sha256:
                raise PromotionRejected(
                    Reason.NIGHTLY_CONFLICT,
                    f"{key} exists in nightly with other content",
                    index=step.index,
                ) from None
        return metadata

    def _publish(
        self, work: Sequence[_SetWork], entries: Sequence[IndexEntry]
    ) -> tuple[PageWrites, PageWrites]:
        """Update nightly pages of the touched projects, then the staging pages over them.

        Pages read while planning are reused, so a page costs two writes when nobody else wrote
        it meanwhile (and a re-read when somebody did).
        """
        by_page: dict[tuple[str, str], list[IndexEntry]] = defaultdict(list)
        known: dict[tuple[str, str], _ProjectPages] = {}
        jobs = [(w, step) for w in work for step in w.plan.steps]
        for (w, step), entry in zip(jobs, entries, strict=True):
            page_key = (step.index, step.file.distribution.project)
            by_page[page_key].append(entry)
            known[page_key] = w.pages[step.file.distribution.project]
        nightly_writes, staging_writes = PageWrites(), PageWrites()
        for (index, project), page_entries in sorted(by_page.items()):
            pages = known[(index, project)]
            written = self.nightly_pages.update_project(
                index, project, add_missing(page_entries), known=pages.nightly
            )
            # Invalidate the project's pages even when this attempt found them written already:
            # an earlier attempt may have failed between writing them and invalidating.
            touched = [PAGES.project_page(index, project, json=j) for j in (True, False)]
            nightly_writes.extend(PageWrites(touched))
            assert written.page is not None
            self._refresh_staging_page(
                index,
                written.page,
                drop=[e.filename for e in page_entries],
                known=pages.staging,
            )
            staging_writes.extend(PageWrites(touched))
        projects_by_index: dict[str, set[str]] = defaultdict(set)
        for index, project in by_page:
            projects_by_index[index].add(project)
        for index, projects in sorted(projects_by_index.items()):
            nightly_writes.extend(self.nightly_pages.add_projects(index, projects))
            staging_writes.extend(self.staging_pages.add_projects(index, projects))
        return nightly_writes, staging_writes

    def _invalidate(self, nightly: PageWrites, staging: PageWrites) -> list[str]:
        if self.invalidator is None:
            return []
        ids: list[str] = []
        for distribution, writes in (
            (self.settings.nightly_distribution_id, nightly),
            (self.settings.staging_distribution_id, staging),
        ):
            if distribution and writes.keys:
                ids += self.invalidator.invalidate(distribution, writes.keys)
        return ids
