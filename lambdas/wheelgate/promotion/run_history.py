"""The run history projection: each decision on a run recorded in the run history of its
sets' directories (:class:`RunHistory`).

The service hands every :class:`~.decisions.Decision` to its projections once, whatever flow
made it (one invocation or a fan-out's steps), so the history hears of each the same way. An
override request's decision is its target run's promotion; yanks and imports are not runs.
Each set's tests come from the decided manifest the decision carries, with the files each
installed, and each installed file that is not one of the run's is looked up on nightly's
archive page of its project in that directory: the page the flow read, when it read it, so
``wheelgate bisect`` can fetch it from there.

The manifest is the reporter's word on its run: the files each set names become the run's
files in its directory's history, and the commit time and attempt it states (``commit_time``,
``attempt``) replace what a build job's stage entry said. A stated time without a zone is
left out (the history keeps UTC times alone).

Recording must not turn a decision into a retry: the service logs a failure, and the next
decision of the run, or its stage entry, brings the history up to date.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace

from pydantic import TypeAdapter, ValidationError

from wheelgate.core.layout import IMPORT_RUN_PREFIX, NIGHTLY, YANK_RUN_PREFIX
from wheelgate.core.manifest import ArtifactSetV2, Manifest, ManifestV2
from wheelgate.core.records import PromotionRecord, SetOutcome, State
from wheelgate.core.timestamps import upload_time
from wheelgate.history.decision import DecidedFile, RunDecision, decided_run
from wheelgate.history.fold import first_staged
from wheelgate.history.model import (
    HistoryRun,
    Moment,
    RunState,
    TestRecord,
    project_and_version,
)
from wheelgate.history.store import HistoryStore
from wheelgate.index.pages import ProjectPage
from wheelgate.index.store import IndexStore
from wheelgate.promotion.decisions import Decision, latest_decision
from wheelgate.storage.bucket import Bucket

logger = logging.getLogger(__name__)

_MOMENT: TypeAdapter[str] = TypeAdapter(Moment)
_STATES = {State.PROMOTED: RunState.PROMOTED, State.REJECTED: RunState.REJECTED}


class RunHistory:
    """Writes each new decision on a run into the run history of ``store``. ``staging`` holds
    the runs' staged objects, ``nightly_pages`` nightly's index pages (read only for a page the
    flow did not hold); ``run_expiry_days`` dates a staged file the history did not know
    yet."""

    def __init__(
        self,
        *,
        store: HistoryStore,
        staging: Bucket,
        nightly_pages: IndexStore,
        run_expiry_days: int | None,
    ) -> None:
        self.store = store
        self.staging = staging
        self.nightly_pages = nightly_pages
        self.run_expiry_days = run_expiry_days

    def project(self, decision: Decision) -> None:
        """Record ``decision`` when it is new and decides a run (see :meth:`record`)."""
        if decision.new and not decision.noted:
            self.record(decision)

    def record(self, decision: Decision) -> list[HistoryRun]:
        """Put ``decision`` on its run in the history of each of its sets' directories; the
        runs kept. An override request's decision goes on its target run, once promoted; a
        yank's and an import's on none. Raises what storage raises."""
        record = decision.subject
        if record.run_id.startswith((YANK_RUN_PREFIX, IMPORT_RUN_PREFIX)):
            return []
        if decision.run is not None and record.state is not State.PROMOTED:
            return []
        if record.state not in _STATES:
            return []
        manifest = decision.manifest
        reported = decision.written_at
        commit = record.commit or (manifest.commit if manifest else None)
        if commit is None or not record.sets:
            return []  # refused before its sets were read: no directory to record it in
        listed = manifest.sets if manifest else ()
        sets = {s.index: s for s in listed if isinstance(s, ArtifactSetV2)}
        first = first_staged(self.staging, record.run_id)
        staged_at = None if first is None else upload_time(first)
        commit_time, attempt = _stated(manifest)
        kept = []
        for outcome in record.sets:
            run_decision = self._decision(record, outcome, sets.get(outcome.index), decision.pages)
            run_decision = replace(
                run_decision,
                commit=commit,
                reported_at=upload_time(reported) if reported else None,
                commit_time=commit_time,
                attempt=attempt,
            )
            kept.append(self._apply(run_decision, staged_at))
        return kept

    def _apply(self, decision: RunDecision, staged_at: str | None) -> HistoryRun:
        at = staged_at or decision.decided_at
        # The run's entry is in the month of its first staged time, no later than ``at``'s;
        # without staged objects (expired), every month is searched.
        month = self.store.find_month(
            decision.index, decision.run_id, since=_month_before(at) if staged_at else None
        )
        return self.store.change_run(
            decision.index,
            month or at[:7],
            decision.run_id,
            lambda run: decided_run(
                run, decision, staged_at=at, run_expiry_days=self.run_expiry_days
            ),
        )

    def _decision(
        self,
        record: PromotionRecord,
        outcome: SetOutcome,
        manifest_set: ArtifactSetV2 | None,
        held: Mapping[tuple[str, str], ProjectPage],
    ) -> RunDecision:
        state = _STATES.get(outcome.state, _STATES[record.state])
        own = {f.sha256 for f in outcome.files} | {f.sha256 for f in outcome.staged}
        if manifest_set is not None:
            own |= {f.sha256 for f in manifest_set.files}
        files = [
            DecidedFile(f.filename, f.sha256, f.size, NIGHTLY.artifact(outcome.index, f.filename))
            for f in outcome.files
            if f.action in ("copied", "already-released")
        ]
        if manifest_set is not None:
            files += [DecidedFile(f.filename, f.sha256, f.size) for f in manifest_set.files]
        files += [DecidedFile(f.filename, f.sha256, f.size) for f in outcome.staged]
        reason = outcome.reason or (record.reason if state is RunState.REJECTED else None)
        return RunDecision(
            run_id=record.run_id,
            index=outcome.index,
            commit=record.commit or "",
            state=state,
            decided_at=record.decided_at or latest_decision(record).at,
            reasons=(reason,) if reason else (),
            message=outcome.message or record.message,
            tests=self._tests(outcome, manifest_set, own, held),
            files=_first_per_name(files),
        )

    def _tests(
        self,
        outcome: SetOutcome,
        manifest_set: ArtifactSetV2 | None,
        own: set[str],
        held: Mapping[tuple[str, str], ProjectPage],
    ) -> tuple[TestRecord, ...]:
        if manifest_set is None:
            return tuple(
                TestRecord(name=t.get("name", ""), result=t.get("result", ""))
                for t in outcome.tests
            )
        pages: dict[str, dict[str, str]] = {}
        tests = []
        for t in manifest_set.tests:
            keys = {}
            for f in t.installed:
                if f.sha256 in own or f.filename is None:
                    continue
                key = self._nightly_key(outcome.index, f.filename, f.sha256, pages, held)
                if key is not None:
                    keys[f.sha256] = key
            tests.append(
                TestRecord(
                    name=t.name, result=t.result.value, installed=t.installed, nightly_keys=keys
                )
            )
        return tuple(tests)

    def _nightly_key(
        self,
        index: str,
        filename: str,
        sha256: str,
        pages: dict[str, dict[str, str]],
        held: Mapping[tuple[str, str], ProjectPage],
    ) -> str | None:
        """The nightly key of ``filename`` in ``index`` if nightly released these bytes under
        that name (its project's archive page: the one the flow held, else read once)."""
        try:
            project, _ = project_and_version(filename)
        except ValueError:
            return None
        if project not in pages:
            page = held.get((index, project))
            if page is None:
                page, _etag = self.nightly_pages.read_archive(index, project)
            pages[project] = {e.filename: e.sha256 for e in page.entries}
        if pages[project].get(filename) != sha256:
            return None
        return NIGHTLY.artifact(index, filename)


def _stated(manifest: Manifest | None) -> tuple[str | None, int | None]:
    """The commit time (in UTC) and attempt ``manifest`` states: the reporter's word."""
    if not isinstance(manifest, ManifestV2):
        return None, None
    commit_time = None
    if manifest.commit_time is not None:
        try:
            commit_time = _MOMENT.validate_python(manifest.commit_time)
        except ValidationError:
            logger.warning(
                "manifest's commit time left out: not a time with a zone",
                extra={"run_id": manifest.run_id, "commit_time": manifest.commit_time},
            )
    return commit_time, manifest.attempt


def _first_per_name(files: Sequence[DecidedFile]) -> tuple[DecidedFile, ...]:
    seen: dict[str, DecidedFile] = {}
    for f in files:
        seen.setdefault(f.filename, f)
    return tuple(seen.values())


def _month_before(at: str) -> str:
    """The month before ``at``'s (an entry stamped at a month's end may precede the first
    object's write by a moment)."""
    year, month = int(at[:4]), int(at[5:7])
    return f"{year - 1}-12" if month == 1 else f"{year:04d}-{month - 1:02d}"
