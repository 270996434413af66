"""What a run staged, read back from the staging bucket: each file's recorded SHA-256, when the
run was first staged, and its files by index directory (what its manifest lists)."""

from __future__ import annotations

from collections import defaultdict

from pydantic import ValidationError

from wheelgate.core.layout import PAGE_NAMES, SIDECAR_SUFFIXES, STAGING
from wheelgate.core.manifest import ManifestFile, describe_errors
from wheelgate.staging.errors import StageError
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.recorded_checksum import recorded_sha256


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
