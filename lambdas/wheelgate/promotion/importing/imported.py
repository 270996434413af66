"""What the service's flow is handed of an import, beyond its set (:class:`ImportedSet`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from wheelgate.core.manifest import ArtifactSet, Manifest
from wheelgate.core.planning import FileStep, Provenance
from wheelgate.core.records import RefusedFile
from wheelgate.core.wheelmeta import CoreMetadata
from wheelgate.promotion.recorder import ImportOutcome
from wheelgate.promotion.verification import SetVerifier, VerifiedSet


@dataclass(frozen=True)
class ImportedSet:
    """What the service's flow needs of an import beyond its set: each file's provenance, the
    METADATA screening read (by staged key and ETag: not read again), the staged copies whose
    SHA-256 the import computed by reading them (not read again either), and what it refused."""

    source: str
    provenance: Mapping[str, Provenance]
    metadata: Mapping[tuple[str, str], CoreMetadata]
    hashed: frozenset[tuple[str, str]]
    refused: tuple[RefusedFile, ...]

    def verified(
        self, verifier: SetVerifier, manifest: Manifest, artifact_set: ArtifactSet
    ) -> VerifiedSet:
        """The import's set verified as a run's (every check but the tests and the commit;
        the files it refused are staged but not part of it), each step with its provenance."""
        return self.annotate(
            verifier.verify(manifest, artifact_set, whole_run=False, known_metadata=self.metadata)
        )

    def annotate(self, verified: VerifiedSet) -> VerifiedSet:
        """``verified`` with each step's provenance, and without the hash reads the import
        already made."""

        def traced(step: FileStep) -> FileStep:
            return replace(step, provenance=self.provenance[step.file.filename])

        return replace(
            verified,
            plan=replace(verified.plan, steps=tuple(traced(s) for s in verified.plan.steps)),
            unhashed=tuple(
                traced(s)
                for s in verified.unhashed
                if (s.source_key, s.source_etag) not in self.hashed
            ),
        )

    @property
    def outcome(self) -> ImportOutcome:
        return ImportOutcome(source=self.source, refused=self.refused)
