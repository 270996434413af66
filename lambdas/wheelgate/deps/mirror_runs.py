"""The runs a ``deps.yml``'s wheels are mirrored under: the reviewed python section's id
(``deps-<12 hex>``) and each sync's fresh, unguessable run of it."""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Sequence

from wheelgate.core.acceptance import MIRROR_REVIEW_TEST
from wheelgate.core.layout import MIRROR_RUN_PREFIX
from wheelgate.deps.deps_file import PythonEntry

#: Run ids of dependency-mirror runs start with this (the promoter's acceptance policy knows it).
RUN_PREFIX = MIRROR_RUN_PREFIX
#: The one test a mirror run's sets carry: the review of deps.yml (its pull request).
REVIEW_TEST = MIRROR_REVIEW_TEST


def new_mirror_run_id(review_id: str) -> str:
    """A fresh mirror run id of the reviewed section ``review_id``: ``<review_id>-<16 hex>``.

    The random part keeps the run unpredictable, so no other writer can stage files under it
    before the sync does (the bucket policy refuses them ``runs/deps-*`` as well).
    """
    return f"{review_id}-{secrets.token_hex(8)}"


def check_mirror_run_id(review_id: str, run_id: str) -> str:
    """``run_id`` if it is a mirror run of ``review_id`` (as ``new_mirror_run_id`` makes them);
    else ``ValueError`` naming both."""
    prefix, _, nonce = run_id.rpartition("-")
    if prefix != review_id or len(nonce) != 16 or not all(c in "0123456789abcdef" for c in nonce):
        raise ValueError(
            f"{run_id!r} is not a mirror run of this deps.yml "
            f"(expected {review_id}-<16 hex>, as `--step upload` printed it)"
        )
    return run_id


def python_run_id(entries: Sequence[PythonEntry], all_indexes: Sequence[str]) -> str:
    """``deps-`` and the first 12 hex digits of the SHA-256 of the canonical JSON of the
    python section, with ``indexes: all`` replaced by ``all_indexes``."""
    resolved = [
        {**e.model_dump(mode="json"), "indexes": list(all_indexes)}
        if e.indexes == "all"
        else e.model_dump(mode="json")
        for e in entries
    ]
    canonical = json.dumps(resolved, sort_keys=True, separators=(",", ":"))
    return RUN_PREFIX + hashlib.sha256(canonical.encode()).hexdigest()[:12]
