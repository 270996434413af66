"""Screening: each gathered file's wheel identity, then the import rules against nightly."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from wheelgate.core.import_rules import Candidate, ImportRequest, SourceFacts, SourceObject, screen
from wheelgate.core.manifest import ManifestFile
from wheelgate.core.planning import Provenance
from wheelgate.core.settings import PromoterSettings
from wheelgate.core.timestamps import upload_time
from wheelgate.index.store import IndexStore
from wheelgate.promotion.importing.gather import Gathered
from wheelgate.promotion.importing.imported import ImportedSet
from wheelgate.promotion.importing.sources import identities, released_files
from wheelgate.storage.bucket import Bucket


class Screener:
    """Decides each gathered file of an import (read from ``staging``, its ``limits.workers``
    at a time) against nightly's archive pages and the settings' release rules."""

    def __init__(
        self,
        *,
        settings: PromoterSettings,
        staging: Bucket,
        nightly_pages: IndexStore,
        clock: Callable[[], datetime],
    ) -> None:
        self.settings = settings
        self.staging = staging
        self.nightly_pages = nightly_pages
        self.clock = clock

    def screen(
        self, request: ImportRequest, gathered: Gathered
    ) -> tuple[list[ManifestFile], ImportedSet]:
        """Decide each gathered file: its wheel identity (ranged reads of the staged copy),
        then :func:`~wheelgate.core.import_rules.screen` against nightly's archive pages."""
        files = {f.source.filename: f for f in gathered.files}
        metadata, refused = identities(
            self.staging,
            [(f.source.filename, f.key, f.etag, f.source.size, f.uri) for f in gathered.files],
            index=request.index,
        )
        for refusal in refused:
            del files[refusal.filename]
        screened = screen(
            [
                Candidate(
                    filename=name,
                    size=f.source.size,
                    sha256=f.sha256,
                    source=f.uri,
                    facts=gathered.facts.get(name, SourceFacts()),
                )
                for name, f in files.items()
            ],
            released_files(self.nightly_pages, request.index, files),
            index=request.index,
            allow_build_tag_rereleases=self.settings.allow_build_tag_rereleases,
            allow_new_local_labels=self.settings.allow_new_local_labels.allowed_in(request.index),
        )
        kept = [files[c.filename] for c in screened.accepted]
        provenance = {
            f.source.filename: Provenance(
                source=f.uri,
                upload_time=self._listed_time(gathered.facts.get(f.source.filename), f.source),
                yanked=gathered.facts.get(f.source.filename, SourceFacts()).yanked,
            )
            for f in kept
        }
        imported = ImportedSet(
            source=request.source,
            provenance=provenance,
            metadata={
                (f.key, f.etag): metadata[f.source.filename]
                for f in kept
                if f.source.filename in metadata
            },
            hashed=frozenset((f.key, f.etag) for f in kept if f.read),
            refused=tuple(
                sorted([*gathered.refused, *refused, *screened.refused], key=lambda r: r.filename)
            ),
        )
        manifest_files = [
            ManifestFile(filename=f.source.filename, sha256=f.sha256, size=f.source.size)
            for f in kept
        ]
        return manifest_files, imported

    def _listed_time(self, facts: SourceFacts | None, source: SourceObject) -> str:
        """When an imported file is listed as uploaded: its source page's upload time, else its
        source object's date (else now: a listing without dates)."""
        if facts is not None and facts.upload_time is not None:
            return facts.upload_time
        return upload_time(source.last_modified or self.clock())
