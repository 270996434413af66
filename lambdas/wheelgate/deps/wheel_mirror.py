"""Mirroring the ``python`` wheels of a validated deps.yml through the gate.

A wheel the nightly page of its index already lists with the same SHA-256 is skipped (other
bytes: fail). The others are downloaded and staged with :func:`wheelgate.staging.stage.stage`
under the mirror run (``deps-<hash>``); :func:`report_mirror` then writes the run's manifest,
with the review as its one test and the reviewed pins as that test's evidence, and the promoter
(the only writer of nightly) decides as for any run.
"""

from __future__ import annotations

import hashlib
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from wheelgate.core.layout import STAGING
from wheelgate.core.manifest import InstalledFile, Outcome
from wheelgate.deps.download import DownloadError, Fetcher, Progress
from wheelgate.deps.mirror_runs import REVIEW_TEST
from wheelgate.deps.rows import Action, Row
from wheelgate.deps.targets import WheelTarget
from wheelgate.index.pages import IndexEntry
from wheelgate.index.store import IndexStore
from wheelgate.staging.local_artifacts import inspect_files
from wheelgate.staging.manifest_building import TestSpec, build_manifest
from wheelgate.staging.stage import stage
from wheelgate.staging.staged_files import staged_sets
from wheelgate.storage.bucket import Bucket


@dataclass
class MirrorPlan:
    """Per (wheel, index directory): ``stage``, ``skip`` (in nightly with the same SHA-256) or
    ``conflict`` (in nightly with other bytes)."""

    rows: list[tuple[WheelTarget, str, Row]] = field(default_factory=list)

    @property
    def conflicts(self) -> list[Row]:
        return [r for _, _, r in self.rows if r.action == "conflict"]

    @property
    def to_stage(self) -> dict[str, list[WheelTarget]]:
        by_index: dict[str, list[WheelTarget]] = defaultdict(list)
        for wheel, index, row in self.rows:
            if row.action == "stage":
                by_index[index].append(wheel)
        return dict(by_index)


def plan_mirror(nightly: Bucket, wheels: Iterable[WheelTarget]) -> MirrorPlan:
    """Compare each wheel with the nightly archive (archive page) of each of its index
    directories: a file retention took off the listing is still released."""
    pages = IndexStore(nightly)
    listed: dict[tuple[str, str], dict[str, IndexEntry]] = {}
    plan = MirrorPlan()
    for wheel in wheels:
        for index in wheel.indexes:
            if (index, wheel.project) not in listed:
                page, _ = pages.read_archive(index, wheel.project)
                listed[(index, wheel.project)] = {e.filename: e for e in page.entries}
            found = listed[(index, wheel.project)].get(wheel.filename)
            where = f"{index}/{wheel.filename}"
            if found is None:
                row = Row(wheel.entry, where, "stage", wheel.size or 0)
            elif found.sha256 != wheel.sha256:
                row = Row(
                    wheel.entry,
                    where,
                    "conflict",
                    found.size,
                    detail=f"nightly has other bytes (sha256 {found.sha256}); not replaced",
                )
            else:
                row = Row(wheel.entry, where, "skip", found.size, detail="in nightly")
            plan.rows.append((wheel, index, row))
    return plan


def stage_mirror(
    *,
    plan: MirrorPlan,
    staging: Bucket,
    nightly: Bucket,
    nightly_base_url: str,
    run_id: str,
    commit: str,
    fetcher: Fetcher,
    workdir: Path,
    jobs: int = 4,
    progress: Progress | None = None,
) -> list[Row]:
    """Download the wheels ``plan`` stages and stage them under ``run_id``.

    The run is staged whole or not at all: on a conflict or a failed download nothing is
    staged (the others are ``held``), since the promoter promotes a set whole.
    """
    rows = {id(r): r for _, _, r in plan.rows}
    if plan.conflicts:
        return [_settle(r, "failed" if r.action == "conflict" else "held") for r in rows.values()]
    wanted = {w.filename: w for ws in plan.to_stage.values() for w in ws}
    downloads: dict[str, tuple[Path, float] | DownloadError] = {}

    def fetch(wheel: WheelTarget) -> None:
        started = time.monotonic()
        directory = workdir / wheel.sha256
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / wheel.filename
        try:
            fetcher.download(
                wheel.url,
                path,
                sha256=wheel.sha256,
                size=wheel.size,
                progress=(lambda d, t: progress(wheel.filename, d, t)) if progress else None,
            )
        except DownloadError as exc:
            downloads[wheel.filename] = exc
        else:
            downloads[wheel.filename] = (path, time.monotonic() - started)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(fetch, wanted.values()))
    failed = {name: e for name, e in downloads.items() if isinstance(e, DownloadError)}
    out: list[Row] = []
    if failed:
        for wheel, _index, row in plan.rows:
            if wheel.filename in failed:
                out.append(_settle(row, "failed", str(failed[wheel.filename])))
            else:
                out.append(_settle(row, "held" if row.action == "stage" else "skipped"))
        return out
    fetched = {n: d for n, d in downloads.items() if not isinstance(d, DownloadError)}
    for index, index_wheels in sorted(plan.to_stage.items()):
        artifacts = inspect_files([fetched[w.filename][0] for w in index_wheels])
        stage(
            staging=staging,
            nightly=nightly,
            nightly_base_url=nightly_base_url,
            run_id=run_id,
            index=index,
            commit=commit,
            artifacts=artifacts,
            # The mirror role may not write index pages; the promoter refreshes them.
            publish_pages=False,
            # Nor write history entries: the history gains the mirror run when it is decided.
            record_history=False,
        )
    for wheel, _index, row in plan.rows:
        if row.action == "stage":
            path, seconds = fetched[wheel.filename]
            out.append(_settle(row, "staged", seconds=seconds, size=path.stat().st_size))
        else:
            out.append(_settle(row, "skipped"))
    return out


def _settle(
    row: Row, action: Action, detail: str = "", *, seconds: float = 0.0, size: int | None = None
) -> Row:
    return Row(
        row.entry,
        row.target,
        action,
        row.bytes if size is None else size,
        seconds,
        detail or row.detail,
    )


def report_mirror(
    *,
    staging: Bucket,
    run_id: str,
    commit: str,
    review_url: str,
    wheels: Sequence[WheelTarget],
) -> str | None:
    """Write the mirror run's manifest: everything staged for ``run_id``, each set with the one
    test ``deps-review`` passed at ``review_url``. A mirror run installs nothing: the review's
    evidence is the reviewed pins, the SHA-256 of each of ``wheels`` bound for the set's index
    directory (the promoter releases only staged files of those bytes). Returns the manifest's
    SHA-256, whose decision to wait for (``None``: nothing staged, no manifest written). Raises
    ``ValueError`` for an invalid commit or URL."""
    staged = staged_sets(staging, run_id)
    if not staged:
        return None
    tests = [
        TestSpec(
            index,
            REVIEW_TEST,
            Outcome.PASSED,
            review_url,
            installed=tuple(
                {
                    w.sha256: InstalledFile(sha256=w.sha256, filename=w.filename)
                    for w in wheels
                    if index in w.indexes
                }.values()
            ),
        )
        for index in staged
    ]
    body = build_manifest(run_id=run_id, commit=commit, staged=staged, tests=tests).to_json()
    staging.put(STAGING.manifest(run_id), body.encode(), content_type="application/json")
    return hashlib.sha256(body.encode()).hexdigest()
