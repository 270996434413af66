"""Verifying a set before anything is copied: what is staged and what nightly already holds.

For each accepted set: one listing of its staged files, a HEAD per file (S3's SHA-256 and the
commit it was staged from), the nightly and staging pages of its projects, and the nightly keys
of its projects' files. :func:`wheelgate.core.planning.plan_set` checks these against the
manifest and decides each copy. Nothing here writes.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from wheelgate.core.layout import METADATA_SUFFIX, NIGHTLY, STAGING
from wheelgate.core.manifest import ArtifactSet, Manifest
from wheelgate.core.objects import ObjectInfo
from wheelgate.core.planning import SetPlan, plan_set
from wheelgate.index.pages import IndexEntry, ProjectPage
from wheelgate.index.store import IndexStore
from wheelgate.storage.bucket import Bucket


@dataclass(frozen=True)
class ProjectPages:
    """A project's nightly and staging pages (each with its ETag) as read while verifying."""

    nightly: tuple[ProjectPage, str | None]
    staging: tuple[ProjectPage, str | None]

    def nightly_entry(self, filename: str) -> IndexEntry | None:
        """The nightly page's entry for a file: the file is released."""
        return next((e for e in self.nightly[0].entries if e.filename == filename), None)

    def staging_entry(self, filename: str) -> IndexEntry | None:
        """The staging page's own (staged) entry for a file, not one borrowed from nightly."""
        return next(
            (e for e in self.staging[0].entries if e.filename == filename and not e.is_absolute),
            None,
        )


@dataclass(frozen=True)
class VerifiedSet:
    """A set that passed verification: its plan, and what was read that release and
    publication reuse instead of reading again."""

    plan: SetPlan
    #: The pages of each of the set's projects, by project name.
    pages: dict[str, ProjectPages]
    #: ETag and size of each staged ``.metadata`` file, by the name of the file it describes.
    sidecars: dict[str, tuple[str, int]]
    #: Keys of the set's projects' files that nightly already holds.
    nightly_keys: frozenset[str]


class SetVerifier:
    """Reads what verifying a set needs from both buckets, ``workers`` requests at a time."""

    def __init__(
        self,
        *,
        staging: Bucket,
        nightly: Bucket,
        staging_pages: IndexStore,
        nightly_pages: IndexStore,
        workers: int,
    ) -> None:
        self.staging = staging
        self.nightly = nightly
        self.staging_pages = staging_pages
        self.nightly_pages = nightly_pages
        self.workers = workers

    def verify(self, manifest: Manifest, artifact_set: ArtifactSet) -> VerifiedSet:
        """Verify one set of ``manifest`` and plan its copies.

        Whether a file is already released is read from the nightly project page, which lists
        every released file of the project with its SHA-256; a file in nightly but not listed
        (an interrupted promotion, or an out-of-band write) is found by listing the project's
        own nightly files, before any copy, and checked by a HEAD.

        Raises :class:`~wheelgate.core.errors.PromotionRejected` when the staged files do not
        match the set (see :func:`~wheelgate.core.planning.plan_set`).
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
        return VerifiedSet(
            plan=plan,
            pages=pages,
            nightly_keys=frozenset(nightly_keys),
            sidecars={
                name[: -len(METADATA_SUFFIX)]: (obj.etag, obj.size)
                for name, obj in listing.items()
                if name.endswith(METADATA_SUFFIX)
            },
        )

    def _read_pages(self, artifact_set: ArtifactSet) -> dict[str, ProjectPages]:
        """The nightly and staging pages of each project of a set (two requests a project)."""
        projects = sorted(artifact_set.projects)
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            nightly = list(
                pool.map(lambda p: self.nightly_pages.read_project(artifact_set.index, p), projects)
            )
            staging = list(
                pool.map(lambda p: self.staging_pages.read_project(artifact_set.index, p), projects)
            )
        return {p: ProjectPages(n, s) for p, n, s in zip(projects, nightly, staging, strict=True)}
