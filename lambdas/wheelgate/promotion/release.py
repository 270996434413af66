"""Releasing verified sets: server-side copies from staging into nightly, each one verified.

Every planned file is copied to its nightly key and must end up holding the manifest's bytes;
a key nightly already holds is checked, never written. A wheel's PEP 658 core metadata is
released beside it. An imported file's page entry carries its source's upload time and yank
state. No index page changes here: the entries returned are published only once
every copy has succeeded.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.layout import NIGHTLY, PAGES
from wheelgate.core.planning import FileStep
from wheelgate.core.wheelmeta import CoreMetadata
from wheelgate.index.pages import METADATA_CONTENT_TYPE, IndexEntry, upload_time
from wheelgate.promotion.verification import VerifiedSet
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.errors import PreconditionFailed


class Releaser:
    """Copies verified files from staging into nightly, within nightly's limits (its
    ``workers`` files at a time, its copy limits: see
    :meth:`~wheelgate.storage.bucket.Bucket.copy_in`).
    """

    def __init__(
        self,
        *,
        staging: Bucket,
        nightly: Bucket,
    ) -> None:
        self.staging = staging
        self.nightly = nightly

    def release(self, sets: Sequence[VerifiedSet], *, at: datetime) -> list[IndexEntry]:
        """Copy every planned file of ``sets`` and its core metadata into nightly, each listed
        as uploaded ``at`` (the decision's time).

        Returns the nightly page entry of each file, in plan order (set by set, step by step).
        Raises :class:`~wheelgate.core.errors.PromotionRejected` when nightly holds other bytes
        under a file's key (written behind the promoter's back since verification), or a copy
        does not verify (S3 returned other bytes than the pinned source version's).
        """
        jobs = [(s, step) for s in sets for step in s.plan.steps]
        with ThreadPoolExecutor(max_workers=self.nightly.limits.workers) as pool:
            return list(pool.map(lambda job: self._release_one(job[0], job[1], at), jobs))

    def _release_one(self, verified: VerifiedSet, step: FileStep, at: datetime) -> IndexEntry:
        return self.release_file(
            step,
            metadata=verified.metadata[step.file.filename] if step.is_wheel else None,
            in_nightly=step.target_key in verified.nightly_keys,
            at=at,
        )

    def release_file(
        self, step: FileStep, *, metadata: CoreMetadata | None, in_nightly: bool, at: datetime
    ) -> IndexEntry:
        """Copy one planned file (a multipart copy in parallel parts when it is large) and
        release its core metadata; return its nightly page entry.

        ``metadata`` is the wheel's verified METADATA (``None`` for an sdist); ``in_nightly``
        says verification found the target key in nightly already (it is then checked, never
        written); the entry's upload time is ``at``, the time its step took. Raises
        :class:`~wheelgate.core.errors.PromotionRejected` as :meth:`release`.
        """
        if step.copy:
            self._copy(step, in_nightly=in_nightly)
        if metadata is not None:
            self._core_metadata(step, metadata)
        # An imported file is listed as its source index listed it: uploaded when it was
        # uploaded there, yanked if it was yanked there.
        source = step.provenance
        return IndexEntry.for_file(
            step.file.filename,
            key=step.target_key,
            page_dir=PAGES.project_dir(step.index, step.file.distribution.project),
            sha256=step.file.sha256,
            size=step.file.size,
            uploaded=source.upload_time if source else upload_time(at),
            metadata=metadata,
            yanked=source.yanked if source else False,
        )

    def _copy(self, step: FileStep, *, in_nightly: bool) -> None:
        """Server-side copy that must end with the target key holding the file's bytes; a key
        nightly already holds is checked, never written."""
        target, sha256, size = step.target_key, step.file.sha256, step.file.size
        try:
            if in_nightly:
                raise PreconditionFailed(target)
            copied_sha = self.nightly.copy_in(
                self.staging,
                step.source_key,
                step.source_etag,
                size,
                target,
                sha256=sha256,
            ).sha256
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

    def _core_metadata(self, step: FileStep, metadata: CoreMetadata) -> None:
        """Release the wheel's PEP 658 metadata beside it in nightly: the METADATA bytes that
        verification read from the staged wheel itself (and found equal to its staged
        sidecar), written once; an existing file must hold the same bytes."""
        key = NIGHTLY.metadata(step.index, step.file.filename)
        if not step.copy:
            # Already released: its metadata normally is too. Read rather than attempt a
            # write, so a released key never even sees a write request.
            found = self.nightly.get(key)
            if found is not None:
                self._check_same(key, found[0], metadata, step)
                return
        try:
            self.nightly.put(
                key, metadata.content, content_type=METADATA_CONTENT_TYPE, if_none_match=True
            )
        except PreconditionFailed:
            found = self.nightly.get(key)
            self._check_same(key, found[0] if found else None, metadata, step)

    @staticmethod
    def _check_same(key: str, held: bytes | None, metadata: CoreMetadata, step: FileStep) -> None:
        if held != metadata.content:
            raise PromotionRejected(
                Reason.NIGHTLY_CONFLICT,
                f"{key} exists in nightly with other content",
                index=step.index,
            )
