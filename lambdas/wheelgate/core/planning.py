"""Promotion planning: check a set against what is staged and released, decide each copy. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.layout import METADATA_SUFFIX, NIGHTLY, PAGE_NAMES, STAGING
from wheelgate.core.manifest import ArtifactSet, ManifestFile
from wheelgate.core.objects import META_COMMIT, ObjectInfo


@dataclass(frozen=True)
class FileStep:
    """One file of a set: copy it, or it is already released with the same bytes."""

    index: str
    file: ManifestFile
    source_key: str
    source_etag: str
    target_key: str
    copy: bool

    @property
    def is_wheel(self) -> bool:
        return self.file.filename.endswith(".whl")


@dataclass(frozen=True)
class SetPlan:
    index: str
    steps: tuple[FileStep, ...]

    @property
    def copies(self) -> tuple[FileStep, ...]:
        return tuple(s for s in self.steps if s.copy)


def plan_set(
    artifact_set: ArtifactSet,
    *,
    run_id: str,
    commit: str,
    staged: Mapping[str, ObjectInfo],
    released: Mapping[str, ObjectInfo | None],
) -> SetPlan:
    """Verify one accepted set and plan its copies.

    ``staged`` maps every file name found under ``runs/<run_id>/<index>/`` to its HEAD (the
    run index's own root pages are not files of the set);
    ``released`` maps each listed file name to the HEAD of its nightly key (``None`` if absent).

    Raises :class:`PromotionRejected` when a listed file is missing, an unlisted file is staged,
    a size or SHA-256 differs, the staged file's commit is not the manifest's, or a nightly file
    of the same name has other bytes.
    """
    index = artifact_set.index
    listed = {f.filename for f in artifact_set.files}
    sidecars = {name + METADATA_SUFFIX for name in listed}
    extra = sorted(
        name
        for name in staged
        if name not in listed and name not in sidecars and name not in PAGE_NAMES
    )
    if extra:
        raise PromotionRejected(
            Reason.FILE_NOT_LISTED,
            f"{len(extra)} file(s) staged for run {run_id} in {index!r} are not in the "
            f"manifest, e.g. {extra[0]!r}: the set would be incomplete",
            index=index,
        )
    steps = []
    for f in artifact_set.files:
        info = staged.get(f.filename)
        key = STAGING.artifact(run_id, index, f.filename)
        if info is None:
            raise PromotionRejected(
                Reason.FILE_MISSING, f"{f.filename} is not staged at {key}", index=index
            )
        if info.size != f.size:
            raise PromotionRejected(
                Reason.SIZE_MISMATCH,
                f"{f.filename}: manifest says {f.size} bytes, staged object has {info.size}",
                index=index,
            )
        if info.sha256 is None:
            raise PromotionRejected(
                Reason.CHECKSUM_UNAVAILABLE,
                f"{f.filename}: staged object has no SHA-256 (stage it with wheelgate stage)",
                index=index,
            )
        if info.sha256 != f.sha256 or (info.meta_sha256 not in (None, f.sha256)):
            raise PromotionRejected(
                Reason.CHECKSUM_MISMATCH,
                f"{f.filename}: manifest sha256 {f.sha256} but staged object has {info.sha256}",
                index=index,
            )
        staged_commit = info.metadata.get(META_COMMIT)
        if staged_commit != commit:
            raise PromotionRejected(
                Reason.COMMIT_MISMATCH,
                f"{f.filename} was staged from commit {staged_commit or '(none)'}, "
                f"the manifest is for {commit}",
                index=index,
            )
        target = NIGHTLY.artifact(index, f.filename)
        existing = released.get(f.filename)
        if existing is not None and (existing.sha256 != f.sha256 or existing.size != f.size):
            raise PromotionRejected(
                Reason.NIGHTLY_CONFLICT,
                f"{target} already exists in nightly with other bytes "
                f"(sha256 {existing.sha256}); released files are never overwritten",
                index=index,
            )
        steps.append(
            FileStep(
                index=index,
                file=f,
                source_key=key,
                source_etag=info.etag,
                target_key=target,
                copy=existing is None,
            )
        )
    return SetPlan(index=index, steps=tuple(steps))
