"""Promotion planning: check a set against what is staged and released, decide each copy. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.layout import NIGHTLY, PAGE_NAMES, SIDECAR_SUFFIXES, STAGING
from wheelgate.core.manifest import ArtifactSet, ManifestFile
from wheelgate.core.objects import META_COMMIT, ObjectInfo


class Provenance(BaseModel):
    """Where an imported file came from, and what its source index said of it: it is released
    as ``imported`` from ``source`` (no test vouches for it), listed with the source's upload
    time and yank state."""

    model_config = ConfigDict(frozen=True)

    #: ``s3://bucket/key`` of the file the import read.
    source: str
    #: PEP 700 upload time to list it with (the source page's, else the object's date).
    upload_time: str
    #: PEP 592 yank state on the source's pages: ``False`` or the reason (maybe empty).
    yanked: str | bool = False


@dataclass(frozen=True)
class FileStep:
    """One file of a set: copy it, or it is already released with the same bytes.
    ``provenance`` is set for a file an import brings in.

    ``from_nightly``: the staged file is gone, and its bytes are the copy an earlier attempt
    made in nightly (S3's SHA-256 of that copy is the manifest's): ``source_key`` is then the
    nightly key, which is read instead of staging's (see :func:`plan_set`).
    """

    index: str
    file: ManifestFile
    source_key: str
    source_etag: str
    target_key: str
    copy: bool
    provenance: Provenance | None = None
    from_nightly: bool = False

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


def checksum_mismatch(f: ManifestFile, staged_sha256: str, *, index: str) -> PromotionRejected:
    """The refusal of a staged file whose SHA-256 is not the manifest's: one wording, whether
    the hash came from S3's HEAD (planning) or from reading the bytes (a deferred hash read)."""
    return PromotionRejected(
        Reason.CHECKSUM_MISMATCH,
        f"{f.filename}: manifest sha256 {f.sha256} but staged object has {staged_sha256}",
        index=index,
    )


#: The commit of an import's files: none (they were built elsewhere, from no manifest's commit),
#: so planning checks no commit for them.
NO_COMMIT = ""


def plan_set(
    artifact_set: ArtifactSet,
    *,
    run_id: str,
    commit: str,
    staged: Mapping[str, ObjectInfo],
    released: Mapping[str, ObjectInfo | None],
    copied_before: Mapping[str, ObjectInfo] | None = None,
) -> SetPlan:
    """Verify one accepted set and plan its copies.

    ``staged`` maps every file name found under ``runs/<run_id>/<index>/`` to its HEAD (the
    run index's own root pages are not files of the set);
    ``released`` maps each listed file name to the HEAD of its nightly key (``None`` if absent).
    ``copied_before`` maps a listed file that is no longer staged to the HEAD of its nightly
    copy, made by an earlier attempt: it stands for the staged file (same checks: size, S3's
    SHA-256, commit) and the step reads it there (:attr:`FileStep.from_nightly`).

    Raises :class:`PromotionRejected` when a listed file is missing, an unlisted file is staged,
    a size or SHA-256 differs, the staged file's commit is not the manifest's (an import's,
    :data:`NO_COMMIT`, has none to check), or a nightly file of the same name has other bytes.
    """
    index = artifact_set.index
    _check_nothing_unlisted(artifact_set, run_id, staged)
    steps = []
    copied_before = copied_before or {}
    for f in artifact_set.files:
        from_nightly = f.filename not in staged and f.filename in copied_before
        info = copied_before[f.filename] if from_nightly else staged.get(f.filename)
        key = STAGING.artifact(run_id, index, f.filename)
        if info is None:
            raise PromotionRejected(
                Reason.FILE_MISSING, f"{f.filename} is not staged at {key}", index=index
            )
        _check_staged(f, info, commit, index=index)
        target = NIGHTLY.artifact(index, f.filename)
        existing = released.get(f.filename)
        _check_released(f, existing, target, index=index)
        steps.append(
            FileStep(
                index=index,
                file=f,
                source_key=target if from_nightly else key,
                source_etag=info.etag,
                target_key=target,
                copy=existing is None,
                from_nightly=from_nightly,
            )
        )
    return SetPlan(index=index, steps=tuple(steps))


def _check_nothing_unlisted(
    artifact_set: ArtifactSet, run_id: str, staged: Mapping[str, ObjectInfo]
) -> None:
    """``file-not-listed`` for a file staged in the set's directory that the manifest omits
    (its own sidecars and the run index's pages are not files of the set)."""
    listed = {f.filename for f in artifact_set.files}
    sidecars = {name + suffix for name in listed for suffix in SIDECAR_SUFFIXES}
    extra = sorted(
        name
        for name in staged
        if name not in listed and name not in sidecars and name not in PAGE_NAMES
    )
    if extra:
        raise PromotionRejected(
            Reason.FILE_NOT_LISTED,
            f"{len(extra)} file(s) staged for run {run_id} in {artifact_set.index!r} are not in "
            f"the manifest, e.g. {extra[0]!r}: the set would be incomplete",
            index=artifact_set.index,
        )


def _check_staged(f: ManifestFile, info: ObjectInfo, commit: str, *, index: str) -> None:
    """The staged object's size, S3's SHA-256 and commit against the manifest's file."""
    if info.size != f.size:
        raise PromotionRejected(
            Reason.SIZE_MISMATCH,
            f"{f.filename}: manifest says {f.size} bytes, staged object has {info.size}",
            index=index,
        )
    # S3's own checksum of the bytes it stores, never user metadata (any writer of the
    # object can set that to anything).
    if info.s3_sha256 is None:
        raise PromotionRejected(
            Reason.CHECKSUM_UNAVAILABLE,
            f"{f.filename}: S3 has no SHA-256 of the staged object (stage it with wheelgate stage)",
            index=index,
        )
    if info.s3_sha256 != f.sha256:
        raise checksum_mismatch(f, info.s3_sha256, index=index)
    staged_commit = info.metadata.get(META_COMMIT)
    if commit != NO_COMMIT and staged_commit != commit:
        raise PromotionRejected(
            Reason.COMMIT_MISMATCH,
            f"{f.filename} was staged from commit {staged_commit or '(none)'}, "
            f"the manifest is for {commit}",
            index=index,
        )


def _check_released(
    f: ManifestFile, existing: ObjectInfo | None, target: str, *, index: str
) -> None:
    """``nightly-conflict`` when nightly holds the file's name with other bytes."""
    if existing is not None and (existing.sha256 != f.sha256 or existing.size != f.size):
        raise PromotionRejected(
            Reason.NIGHTLY_CONFLICT,
            f"{target} already exists in nightly with other bytes "
            f"(sha256 {existing.sha256}); released files are never overwritten",
            index=index,
        )
