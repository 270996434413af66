"""What an operator reads on a terminal: one run's decision in a few lines
(``wheelgate status``), and the recent decisions the status site keeps (``wheelgate runs``).

Pure functions. A run's summary is rendered from its record (the same one ``--json`` prints);
the recent decisions come from the status site's state (``status/state.json``,
:mod:`wheelgate.status.state`), which keeps the last :data:`~wheelgate.status.state.MAX_DECISIONS`
decisions of each index directory and the last :data:`~wheelgate.status.state.MAX_REJECTIONS`
rejections: no record is listed or read to answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from wheelgate.core.display import human_size, shown_time
from wheelgate.core.records import PromotionRecord, SetOutcome, State
from wheelgate.status.state import Kind, StatusState, index_directory, run_kind

#: Files listed per set on a terminal; ``--json`` has them all.
MAX_FILES_SHOWN = 20
#: Characters of a decision's message in a listing row.
MAX_MESSAGE_SHOWN = 100
#: Characters of a commit in a listing row (``--json`` has it whole).
COMMIT_SHOWN = 12
#: The state ``status`` gives a run id under which nothing is staged, reported or decided.
UNKNOWN_RUN = "unknown"
#: What a directory without a promoted run says.
NO_RUN_PROMOTED = "No run promoted yet"


class RecentDecision(BaseModel):
    """One row of ``wheelgate runs``: a decision on a run in one index directory (``index``
    ``None``: a rejection of the whole manifest, which names no directory)."""

    model_config = ConfigDict(frozen=True)

    at: str
    run_id: str
    kind: Kind
    index: str | None
    state: State
    reason: str | None = None
    message: str = ""
    commit: str | None = None


def recent_decisions(
    state: StatusState,
    *,
    index: str | None = None,
    decided: State | None = None,
    limit: int = 20,
) -> list[RecentDecision]:
    """The status site's decisions, newest first: those of directory ``index`` (default:
    every directory, and rejections that name none), in state ``decided`` (default: any), at
    most ``limit``."""
    rows: dict[tuple[str, str, str | None], RecentDecision] = {}
    for directory, status in state.directories.items():
        for d in status.decisions:
            listed = index_directory(directory)
            rows.setdefault(
                (d.run_id, d.at, listed),
                RecentDecision(index=listed, **d.model_dump(exclude={"links"})),
            )
    for rejection in state.rejections:
        named = index_directory(rejection.index) if rejection.index else None
        rows.setdefault(
            (rejection.run_id, rejection.at, named),
            RecentDecision(
                state=State.REJECTED,
                **rejection.model_dump(exclude={"links", "index"}),
                index=named,
            ),
        )
    chosen = [
        row
        for row in rows.values()
        if (index is None or row.index == index) and (decided is None or row.state is decided)
    ]
    chosen.sort(key=lambda row: (row.at, row.run_id, row.index or ""), reverse=True)
    return chosen[:limit]


def render_directories(state: StatusState, indexes: Iterable[str]) -> str:
    """Each directory of ``indexes`` (the configured ones) and each the state knows of, with
    the run it was last promoted from, or :data:`NO_RUN_PROMOTED`."""
    known = {index_directory(d) for d in state.directories}
    lines = []
    for index in sorted(set(indexes) | set(known)):
        status = state.directories.get(index)
        latest = status.latest if status is not None else None
        if latest is None:
            lines.append(f"{index}: {NO_RUN_PROMOTED}")
            continue
        commit = f", commit {latest.commit[:COMMIT_SHOWN]}" if latest.commit else ""
        override = f", by override of {latest.override.by}" if latest.override else ""
        lines.append(
            f"{index}: run {latest.run_id} promoted {_when(latest.decided_at)}{commit}, "
            f"{_files(latest.file_count)}{override}"
        )
    return "\n".join(lines)


def _files(count: int) -> str:
    return f"{count} file" if count == 1 else f"{count} files"


def _when(at: str | None) -> str:
    shown = shown_time(at or "")
    return shown[0] if shown else (at or "unknown time")


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def render_decisions(rows: Sequence[RecentDecision]) -> str:
    """``rows`` as an aligned table, newest first as given."""
    if not rows:
        return "no decisions recorded (yet) that match"
    table = [("decided", "state", "run", "index", "commit", "reason: message")]
    for row in rows:
        said = ": ".join(x for x in (row.reason, _cut(row.message, MAX_MESSAGE_SHOWN)) if x)
        run = row.run_id if row.kind == "run" else f"{row.run_id} ({row.kind})"
        commit = row.commit[:COMMIT_SHOWN] if row.commit else "-"
        table.append((_when(row.at), row.state.value, run, row.index or "-", commit, said))
    widths = [max(len(line[i]) for line in table) for i in range(5)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line[:5], widths, strict=True))
        + "  "
        + line[5]
        for line in table
    )


def _set_lines(outcome: SetOutcome) -> list[str]:
    headline = outcome.state.value + (f" ({outcome.reason})" if outcome.reason else "")
    lines = [f"{outcome.index}: {headline}"]
    if outcome.message and outcome.state is not State.PROMOTED:
        lines.append(f"  {outcome.message}")
    if not outcome.tests:
        lines.append("  tests: none reported")
    for test in outcome.tests:
        url = f"  {test['url']}" if test.get("url") else ""
        lines.append(f"  test {test.get('name', '?')}: {test.get('result', '?')}{url}")
    if not outcome.files:
        lines.append("  files: none released")
    for kept in outcome.staged[:MAX_FILES_SHOWN]:
        lines.append(f"  staged {kept.filename}  {human_size(kept.size)}  sha256 {kept.sha256}")
    if len(outcome.staged) > MAX_FILES_SHOWN:
        lines.append(f"  ... and {len(outcome.staged) - MAX_FILES_SHOWN} more staged (--json)")
    for file in outcome.files[:MAX_FILES_SHOWN]:
        shipped_on = f", shipped on {', '.join(file.evidence)}" if file.evidence else ""
        lines.append(f"  file {file.filename}  {human_size(file.size)}  {file.action}{shipped_on}")
    if len(outcome.files) > MAX_FILES_SHOWN:
        lines.append(f"  ... and {len(outcome.files) - MAX_FILES_SHOWN} more files (--json)")
    if outcome.delisted:
        lines.append(f"  taken off the listing (still released): {', '.join(outcome.delisted)}")
    return lines


def _staged_lines(staged: Mapping[str, Any]) -> list[str]:
    files = staged.get("files", [])
    lines = [
        "",
        f"{staged.get('index')}: staged, {_files(len(files))}, commit {staged.get('commit')}",
        f"  index: {staged.get('index_url') or staged.get('index_key')}",
    ]
    for file in files[:MAX_FILES_SHOWN]:
        lines.append(
            f"  file {file['filename']}  {human_size(file['size'])}  sha256 {file['sha256']}"
        )
    if len(files) > MAX_FILES_SHOWN:
        lines.append(f"  ... and {len(files) - MAX_FILES_SHOWN} more files (--json)")
    return lines


def render_run(
    run_id: str,
    record: PromotionRecord | None,
    *,
    record_url: str,
    pending_message: str = "",
    pending_state: str = State.PENDING.value,
    staged: Sequence[Mapping[str, Any]] = (),
    manifest_decision: Mapping[str, Any] | None = None,
) -> str:
    """A run's decision for people: its state and reason, when and from what it was decided,
    each set with its tests and files, and where its record is (``record_url``). A promoted
    yank or unyank request leads with what it did to which file (its record's message). Without
    a record, the run is in ``pending_state`` with ``pending_message``, and what is ``staged``
    for it (each directory's ``index``, ``index_url``, ``index_key``, ``commit`` and
    ``files``), when it was staged and never reported; the summary then says there is no
    record, never where one would be. ``manifest_decision`` is what became of the manifest
    ``status`` was asked about (``--manifest-sha256``), when it was."""
    if record is None:
        lines = [f"run {run_id}: {pending_state}", f"  {pending_message}"]
        lines += [line for found in staged for line in _staged_lines(found)]
    else:
        lines = _decision_lines(record)
    if manifest_decision is not None:
        sha256 = str(manifest_decision.get("manifest_sha256", ""))[:16]
        said = [str(manifest_decision.get("state"))]
        said += [str(v) for k in ("reason", "message") if (v := manifest_decision.get(k))]
        lines.append(f"  manifest {sha256} (asked about): {': '.join(said)}")
    for outcome in record.sets if record is not None else []:
        lines += ["", *_set_lines(outcome)]
    lines += ["", f"record: {record_url}" if record is not None else _no_record(pending_state)]
    return "\n".join(lines)


def _no_record(state: str) -> str:
    """What the summary of a run without a record ends with, in place of the record's URL."""
    if state == UNKNOWN_RUN:
        return "record: none (no such run)"
    return "record: none yet (not decided yet)"


def _decision_lines(record: PromotionRecord) -> list[str]:
    """A record's headline (a promoted yank request's: what it did, to which file), its
    message, and when and from what it was decided."""
    headline = record.state.value + (f" ({record.reason})" if record.reason else "")
    if run_kind(record.run_id) == "yank" and record.state is State.PROMOTED and record.message:
        lines = [record.message, f"  request {record.run_id}: {headline}"]
    else:
        lines = [f"run {record.run_id}: {headline}"]
        if record.message:
            lines.append(f"  {record.message}")
    facts = [f"decided {_when(record.decided_at)}" if record.decided_at else "not decided"]
    if record.commit:
        facts.append(f"commit {record.commit}")
    if record.manifest_sha256:
        facts.append(f"manifest sha256 {record.manifest_sha256[:16]}")
    if record.override:
        facts.append(f"overridden by {record.override.get('by')}: {record.override.get('reason')}")
    lines.append("  " + "; ".join(facts))
    return lines
