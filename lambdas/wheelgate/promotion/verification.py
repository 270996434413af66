"""Verifying a set before anything is copied: what is staged and what nightly already holds.

For each accepted set, all read before the first copy of the run:

- one listing of the run's staged files and a HEAD per file: S3's own SHA-256 of the bytes it
  stores and the commit it was staged from (user metadata is never taken as a hash). Where S3
  has no SHA-256 (a multipart object's checksum is composite), the file is planned against the
  manifest's SHA-256 provisionally and listed in :attr:`VerifiedSet.unhashed`: its bytes are
  read and hashed by :meth:`SetVerifier.check_hash`, one file per call, still before the first
  copy (by the promoter's own invocation, or by a fan-out execution's ``hash`` steps), so that
  verification itself reads no file in full;
- each wheel's METADATA and WHEEL, read from the staged wheel with bounded ranged reads: the
  wheel must be what its file name says, and a staged ``.metadata`` sidecar must be byte for
  byte the wheel's own METADATA (the sidecar is what nightly serves to resolvers);
- the nightly archive pages of the set's projects (every file ever released, not the listing
  that retention trims), the directory's root page (it must be one: a directory nested in
  another finds the other's project page there), and the nightly keys of their files: a file
  released under its own name must have the same bytes, and no file may re-release a released
  release under another name, nor give a public version a local label that would change what
  its ``==`` pin installs, nor join a released version as a wheel some interpreter would
  install instead of a released one (:func:`wheelgate.core.release_rules.check_release_conflicts`).

:func:`wheelgate.core.planning.plan_set` checks these against the manifest and decides each
copy. Nothing here writes.

A file's hash read is kept out of :meth:`SetVerifier.verify` because it is the one read whose
cost grows with the bytes (a 5 GiB file is tens of seconds): a fan-out promotion spreads those
reads over its execution's steps instead of one invocation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from wheelgate.core.errors import PromotionRejected, Reason, TransientError
from wheelgate.core.layout import (
    METADATA_SUFFIX,
    NIGHTLY,
    PAGE_NAMES,
    SIDECAR_SUFFIXES,
    STAGING,
    VERDICT_SUFFIX,
)
from wheelgate.core.manifest import ArtifactSet, Manifest, parse_distribution_filename
from wheelgate.core.objects import ObjectInfo
from wheelgate.core.planning import FileStep, SetPlan, checksum_mismatch, plan_set
from wheelgate.core.release_rules import check_release_conflicts
from wheelgate.core.setting_values import NewLocalLabels
from wheelgate.core.wheelmeta import (
    CoreMetadata,
    WheelIdentityError,
    WheelMetadataError,
    read_core_metadata,
)
from wheelgate.index.pages import IndexEntry, PageFormatError, ProjectPage
from wheelgate.index.store import IndexStore, pages_must_parse
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.errors import PreconditionFailed


def nightly_entry(page: tuple[ProjectPage, str | None], filename: str) -> IndexEntry | None:
    """The nightly archive's entry for a file: the file is released."""
    return next((e for e in page[0].entries if e.filename == filename), None)


def wheel_identity(
    bucket: Bucket, key: str, etag: str, size: int, filename: str, *, index: str
) -> CoreMetadata:
    """The METADATA of the wheel ``filename`` stored in ``bucket`` at ``key`` (the version
    ``etag`` pins, ``size`` bytes), read with bounded ranged reads, once its METADATA and WHEEL
    are found to be what its file name says.

    Raises :class:`~wheelgate.core.errors.PromotionRejected` (``wheel-name-mismatch``,
    ``metadata-unreadable``, naming ``index``) and
    :class:`~wheelgate.core.errors.TransientError` when the object changed while it was read.
    """
    reader = bucket.range_reader(key, size, etag)
    try:
        return read_core_metadata(reader, filename)
    except WheelIdentityError as exc:
        raise PromotionRejected(Reason.WHEEL_NAME_MISMATCH, str(exc), index=index) from exc
    except WheelMetadataError as exc:
        raise PromotionRejected(Reason.METADATA_UNREADABLE, str(exc), index=index) from exc
    except PreconditionFailed:
        raise TransientError(f"{key} changed while it was being read") from None


@dataclass(frozen=True)
class VerifiedSet:
    """A set that passed verification: its plan, and what was read that release and
    publication reuse instead of reading again."""

    plan: SetPlan
    #: The nightly archive (archive page and its ETag, see
    #: :meth:`~wheelgate.index.store.IndexStore.read_archive`) of each of the set's projects.
    pages: dict[str, tuple[ProjectPage, str | None]]
    #: Each wheel's own METADATA, read from the staged wheel and checked against its sidecar.
    metadata: dict[str, CoreMetadata]
    #: Keys of the set's projects' files that nightly already holds.
    nightly_keys: frozenset[str]
    #: The steps whose staged bytes S3 has no SHA-256 of, planned against the manifest's: each
    #: must pass :meth:`SetVerifier.check_hash` (pinned by its ``source_etag``) before any copy.
    unhashed: tuple[FileStep, ...] = ()


class SetVerifier:
    """Reads what verifying a set needs from both buckets, ``workers`` requests at a time.

    ``allow_build_tag_rereleases`` and ``allow_new_local_labels`` are the deployment's
    settings (see :func:`~wheelgate.core.release_rules.check_release_conflicts`).
    """

    def __init__(
        self,
        *,
        staging: Bucket,
        nightly: Bucket,
        nightly_pages: IndexStore,
        workers: int,
        allow_build_tag_rereleases: bool,
        allow_new_local_labels: NewLocalLabels,
    ) -> None:
        self.staging = staging
        self.nightly = nightly
        self.nightly_pages = nightly_pages
        self.workers = workers
        self.allow_build_tag_rereleases = allow_build_tag_rereleases
        self.allow_new_local_labels = allow_new_local_labels

    def verify(
        self,
        manifest: Manifest,
        artifact_set: ArtifactSet,
        *,
        whole_run: bool = True,
        known_metadata: Mapping[tuple[str, str], CoreMetadata] | None = None,
    ) -> VerifiedSet:
        """Verify one set of ``manifest`` and plan its copies.

        ``whole_run`` (a run's set): every file staged for the run's directory must be in the
        set. An import's set is what it chose of what it gathered (``whole_run=False``): the
        files it refused stay staged and are not planned. ``known_metadata`` is METADATA a
        caller read with :meth:`wheel_metadata` already, by (staged key, ETag): a wheel whose
        pinned version is one of those is not read again.

        Whether a file is already released is read from the nightly archive page, which lists
        every released file of the project with its SHA-256; a file in nightly but not listed
        (an interrupted promotion, or an out-of-band write) is found by listing the project's
        own nightly files, before any copy, and checked by a HEAD. A staged file S3 has no
        SHA-256 of is not read here: it is planned on the manifest's SHA-256 and listed in
        :attr:`VerifiedSet.unhashed`, and the plan stands only once :meth:`check_hash` has
        passed it (the caller's duty, before any copy).

        Raises :class:`~wheelgate.core.errors.PromotionRejected` when the staged files do not
        match the set (see :func:`~wheelgate.core.planning.plan_set`), a wheel is not what its
        name says (``wheel-name-mismatch``) or unreadable (``metadata-unreadable``), a sidecar
        differs from its wheel's METADATA (``metadata-mismatch``), the set would re-release a
        release with other bytes (``release-conflict``) or change what a public version's
        ``==`` installs (``local-label-conflict``) or what a version's ``==`` installs on some
        interpreter (``tag-shadowing``), or a page of the directory is not the page its key
        says (``page-unreadable``: one directory inside another).
        """
        index = artifact_set.index
        staged, unhashed_names = self._staged(manifest.run_id, artifact_set, whole_run)
        with pages_must_parse(index):
            pages = self._read_pages(artifact_set)
            # The root page is written after the copies: one that is not a root page (another
            # directory's project page, this directory being inside it) must refuse now.
            self.nightly_pages.read_root(index)
        check_release_conflicts(
            artifact_set,
            [(e.filename, e.sha256) for page, _ in pages.values() for e in page.entries],
            allow_build_tag_rereleases=self.allow_build_tag_rereleases,
            allow_new_local_labels=self.allow_new_local_labels.allowed_in(index),
        )
        released, copied_before, nightly_keys = self._released(artifact_set, pages, staged)
        plan = plan_set(
            artifact_set,
            run_id=manifest.run_id,
            commit=manifest.commit,
            staged=staged,
            released=released,
            copied_before=copied_before,
        )
        wheels = [step for step in plan.steps if step.is_wheel]
        known = known_metadata or {}

        def read(step: FileStep) -> CoreMetadata:
            found = known.get((step.source_key, step.source_etag))
            return found if found is not None else self.wheel_metadata(step)

        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            metadata = list(pool.map(read, wheels))
        return VerifiedSet(
            plan=plan,
            pages=pages,
            metadata={s.file.filename: m for s, m in zip(wheels, metadata, strict=True)},
            nightly_keys=frozenset(nightly_keys),
            unhashed=tuple(s for s in plan.steps if s.file.filename in unhashed_names),
        )

    def _staged(
        self, run_id: str, artifact_set: ArtifactSet, whole_run: bool
    ) -> tuple[dict[str, ObjectInfo], set[str]]:
        """The run directory's staged files by name, and the names of those S3 has no SHA-256
        of (planned on the manifest's, see :meth:`verify`)."""
        prefix = STAGING.run_index_prefix(run_id, artifact_set.index)
        # Only the run directory's own files: its project pages sit in subfolders, one per
        # project of the nightly directory, and must not make this listing grow with them.
        set_names = {f.filename for f in artifact_set.files}
        listing = {
            obj.key[len(prefix) :]: obj
            for obj in self.staging.list(prefix, direct=True)
            if obj.key[len(prefix) :] not in PAGE_NAMES
            and (whole_run or obj.key[len(prefix) :].removesuffix(METADATA_SUFFIX) in set_names)
        }
        files = [n for n in listing if not n.endswith(SIDECAR_SUFFIXES)]
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            heads = list(pool.map(self.staging.head, [prefix + name for name in files]))
        staged: dict[str, ObjectInfo] = {
            name: ObjectInfo(key=obj.key, size=obj.size, etag=obj.etag)
            for name, obj in listing.items()
            if name.endswith(SIDECAR_SUFFIXES)
        }
        staged.update({name: head for name, head in zip(files, heads, strict=True) if head})
        # A file S3 has no SHA-256 of is planned as if its bytes were the manifest's; the plan
        # stands only once check_hash has read them (before any copy).
        manifest_sha256 = {f.filename: f.sha256 for f in artifact_set.files}
        unhashed_names = {
            name
            for name, info in staged.items()
            if info.s3_sha256 is None and name in manifest_sha256
        }
        for name in unhashed_names:
            staged[name] = replace(staged[name], s3_sha256=manifest_sha256[name])
        return staged, unhashed_names

    def _released(
        self,
        artifact_set: ArtifactSet,
        pages: Mapping[str, tuple[ProjectPage, str | None]],
        staged: Mapping[str, ObjectInfo],
    ) -> tuple[dict[str, ObjectInfo | None], dict[str, ObjectInfo], set[str]]:
        """What nightly holds of the set's files: each one released (or ``None``), the copies
        an earlier attempt left of files gone from staging, and every nightly key of the
        set's projects."""
        index = artifact_set.index
        # Every nightly key of these projects' files (one listing per file-name prefix, so the
        # cost follows the project's own files, not the directory's): catches a file that an
        # interrupted promotion copied but never listed.
        prefixes = sorted({f.filename.split("-", 1)[0] + "-" for f in artifact_set.files})
        nightly_keys = {
            obj.key
            for prefix in prefixes
            for obj in self.nightly.list(NIGHTLY.artifact(index, prefix))
        }
        released: dict[str, ObjectInfo | None] = {}
        copied_before: dict[str, ObjectInfo] = {}
        for f in artifact_set.files:
            key = NIGHTLY.artifact(index, f.filename)
            listed = nightly_entry(pages[f.distribution.project], f.filename)
            if listed is not None:
                released[f.filename] = ObjectInfo(
                    key=key, size=listed.size, etag="", s3_sha256=listed.sha256
                )
            elif key in nightly_keys:
                released[f.filename] = self.nightly.head(key)
            else:
                released[f.filename] = None
            if f.filename not in staged and (listed is not None or key in nightly_keys):
                # Staged once, copied by an earlier attempt, then gone from staging (expired,
                # removed): the copy stands for it when S3's own SHA-256 of it is the
                # manifest's, so the promotion completes instead of leaving it unlisted.
                copy = self.nightly.head(key)
                if copy is not None and copy.s3_sha256 == f.sha256:
                    copied_before[f.filename] = copy
        return released, copied_before, nightly_keys

    def check_hashes(self, steps: Sequence[FileStep]) -> None:
        """:meth:`check_hash` of each of ``steps``, ``workers`` at a time; raises the first
        step's error (in ``steps`` order) once every read has ended."""
        if not steps:
            return
        with ThreadPoolExecutor(max_workers=min(self.workers, len(steps))) as pool:
            list(pool.map(self.check_hash, steps))

    def check_hash(self, step: FileStep) -> None:
        """Read the staged file of ``step`` once (the version its ``source_etag`` pins) and
        check its SHA-256 against the manifest's: the check :meth:`verify` left to this call
        for a file S3 has no SHA-256 of (see :attr:`VerifiedSet.unhashed`).

        Raises :class:`~wheelgate.core.errors.PromotionRejected` (``checksum-mismatch``, the
        plan's own refusal) when the bytes differ, and
        :class:`~wheelgate.core.errors.TransientError` when the staged object changed since
        verification (its ETag is not the pinned one) or is gone.
        """
        try:
            digest = self.staging.sha256_of(step.source_key, step.source_etag)
        except PreconditionFailed:
            raise TransientError(
                f"{step.source_key} changed since it was verified; verify the run again"
            ) from None
        if digest != step.file.sha256:
            raise checksum_mismatch(step.file, digest, index=step.index)

    def wheel_metadata(self, step: FileStep) -> CoreMetadata:
        """The staged wheel's own METADATA (bounded ranged reads of the exact version whose
        SHA-256 was checked), which its staged ``.metadata`` sidecar, if any, must equal. For a
        step :attr:`~wheelgate.core.planning.FileStep.from_nightly`, the nightly copy's (the
        released ``.metadata`` beside it is then checked against it on release)."""
        metadata = wheel_identity(
            self.nightly if step.from_nightly else self.staging,
            step.source_key,
            step.source_etag,
            step.file.size,
            step.file.filename,
            index=step.index,
        )
        sidecar = None if step.from_nightly else self.staging.get(step.source_key + METADATA_SUFFIX)
        if sidecar is not None and sidecar[0] != metadata.content:
            raise PromotionRejected(
                Reason.METADATA_MISMATCH,
                f"{step.file.filename}{METADATA_SUFFIX} is not the wheel's own METADATA "
                f"(sha256 {metadata.sha256}); nightly would serve resolvers other "
                "dependencies than the wheel declares",
                index=step.index,
            )
        return metadata

    def unlisted_copies(self, index: str, filenames: Iterable[str]) -> list[str]:
        """Nightly keys of ``filenames`` in ``index`` (the files, their core metadata and
        their verdicts) that nightly holds but no archive page lists: what an interrupted
        attempt wrote, which a rejection leaves behind (Object Lock keeps them). A page that
        cannot be read lists nothing."""
        names = sorted(set(filenames))
        projects = {parse_distribution_filename(n).project for n in names}
        listed: set[str] = set()
        for project in projects:
            try:
                page, _ = self.nightly_pages.read_archive(index, project)
            except PageFormatError:
                continue
            listed.update(e.filename for e in page.entries)
        prefixes = sorted({n.split("-", 1)[0] + "-" for n in names})
        held = {
            obj.key
            for prefix in prefixes
            for obj in self.nightly.list(NIGHTLY.artifact(index, prefix))
        }
        left = []
        for name in names:
            if name in listed:
                continue
            key = NIGHTLY.artifact(index, name)
            left += [k for k in (key, key + METADATA_SUFFIX, key + VERDICT_SUFFIX) if k in held]
        return left

    def _read_pages(self, artifact_set: ArtifactSet) -> dict[str, tuple[ProjectPage, str | None]]:
        """The nightly archive of each project of a set (one request a project; two for a
        project whose archive page is not written yet)."""
        projects = sorted(artifact_set.projects)
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            nightly = list(
                pool.map(lambda p: self.nightly_pages.read_archive(artifact_set.index, p), projects)
            )
        return dict(zip(projects, nightly, strict=True))
