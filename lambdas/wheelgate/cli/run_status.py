"""A run's status as ``status``, ``report`` and the request commands show and wait for it:
the record (or what stands for it before there is one), the wait for a decision, and its
output for people and for scripts."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wheelgate.cli.common import (
    EXIT_OK,
    EXIT_PENDING,
    EXIT_REJECTED,
    EXIT_UNKNOWN_RUN,
    staged_sets,
)
from wheelgate.core.env_names import (
    ENV_STAGING_BASE_URL,
)
from wheelgate.core.errors import Reason
from wheelgate.core.layout import STAGING, key_url
from wheelgate.core.manifest import (
    check_commit,
)
from wheelgate.core.records import PromotionRecord, State
from wheelgate.core.redact import mask_principals
from wheelgate.status.summary import UNKNOWN_RUN
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.errors import AccessError


@dataclass(frozen=True)
class RunStatus:
    """A run's status as ``wheelgate status`` shows it.

    ``document`` is the JSON it prints (the record, or a pending document when there is none;
    with a manifest waited for, ``manifest_decision`` says what became of it), ``record`` the
    record itself, ``state`` what the exit code follows (the decision about the manifest
    waited for, when one was given), and ``settled`` whether waiting longer can change it.
    """

    document: dict[str, Any]
    record: PromotionRecord | None
    state: str
    settled: bool


def read_status(staging: Bucket, run_id: str, manifest_sha256: str | None = None) -> RunStatus:
    """The run's status now. With ``manifest_sha256``, it is the status of that manifest:
    pending until the record holds a decision about those bytes, whatever was decided before
    (:meth:`PromotionRecord.decision_about`)."""
    found = staging.get(STAGING.record(run_id))
    record = PromotionRecord.model_validate_json(found[0]) if found is not None else None
    if record is not None and record.commit is None:
        # A rejected run's record may lack the commit its manifest states.
        record = record.model_copy(update={"commit": manifest_commit(staging, run_id)})
    if record is not None:
        document = record.model_dump(mode="json", by_alias=True)
    else:
        document = _no_record_document(staging, run_id)
    if manifest_sha256 is None:
        state = document["state"]
        decided = state in (State.PROMOTED.value, State.REJECTED.value)
        return RunStatus(document, record, state, settled=decided)
    entry = record.decision_about(manifest_sha256) if record is not None else None
    state = entry.state.value if entry is not None else State.PENDING.value
    document["manifest_decision"] = {
        "manifest_sha256": manifest_sha256,
        "state": state,
        "reason": entry.reason if entry is not None else None,
        "message": entry.message if entry is not None else _NOT_DECIDED,
    }
    return RunStatus(document, record, state, settled=entry is not None)


def manifest_commit(staging: Bucket, run_id: str) -> str | None:
    """The commit ``run_id``'s manifest states; ``None`` when there is no manifest (a yank or
    an override request has none), it states none or is not one, or the caller may not read
    it."""
    try:
        found = staging.get(STAGING.manifest(run_id))
    except AccessError:
        return None
    if found is None:
        return None
    try:
        commit = json.loads(found[0]).get("commit")
        return check_commit(commit) if isinstance(commit, str) else None
    except (ValueError, AttributeError):
        return None


#: What ``manifest_decision`` says of a manifest the record holds no decision about yet.
_NOT_DECIDED = "no decision about this manifest yet; waiting for the promoter"


def _no_record_document(staging: Bucket, run_id: str) -> dict[str, Any]:
    """The document of a run without a record: pending, saying whether a manifest exists and,
    for a run staged but never reported, what is staged (each directory's files, commit and
    index URL); :data:`UNKNOWN_RUN` when nothing is staged under the id either."""
    try:
        has_manifest: bool | None = staging.head(STAGING.manifest(run_id)) is not None
    except AccessError:
        # The reporter role may write manifests without being allowed to read them back.
        has_manifest = None
    document: dict[str, Any] = {
        "run_id": run_id,
        "state": State.PENDING.value,
        "reason": None,
        "message": {
            True: "manifest written; waiting for the promoter",
            False: "no manifest for this run yet",
            None: "no decision recorded yet; waiting for the promoter",
        }[has_manifest],
        "sets": [],
    }
    if has_manifest is not False:
        return document
    staged = staged_run(staging, run_id)
    if staged is None:
        return document
    if not staged:
        return document | {
            "state": UNKNOWN_RUN,
            "message": "unknown run: nothing is staged, reported or decided under this run id",
        }
    commits = {s["commit"] for s in staged}
    return document | {
        "message": "staged, not reported yet: no manifest for this run yet (wheelgate report "
        "writes it once the tests ran)",
        "commit": commits.pop() if len(commits) == 1 else None,
        "staged": staged,
    }


def staged_run(staging: Bucket, run_id: str) -> list[dict[str, Any]] | None:
    """What is staged for ``run_id``: per index directory its files (name, sha256, size), the
    commit they were staged from (their objects' metadata), and the run's index there (its URL
    under ``$WHEELGATE_STAGING_BASE_URL`` when set, and its key). ``None`` when the caller may
    not list staging's ``runs/``."""
    from wheelgate.core.objects import META_COMMIT

    try:
        sets = staged_sets(staging, run_id)
    except AccessError:
        return None
    base = os.environ.get(ENV_STAGING_BASE_URL, "")
    found = []
    for index, files in sorted(sets.items()):
        prefix = STAGING.run_index_prefix(run_id, index)
        # ``wheelgate stage`` refuses a file staged again from another commit: one tells.
        head = staging.head(prefix + files[0].filename)
        found.append(
            {
                "index": index,
                "index_url": key_url(base, prefix) if base else None,
                "index_key": prefix,
                "commit": head.metadata.get(META_COMMIT) if head is not None else None,
                "files": [f.model_dump(mode="json") for f in files],
            }
        )
    return found


def wait_for_decision(
    staging: Bucket,
    run_id: str,
    wait: float,
    interval: float,
    manifest_sha256: str | None = None,
    pending: Callable[[dict[str, Any]], None] | None = None,
) -> RunStatus:
    """The run's status once it is settled (:func:`read_status`: decided, or with
    ``manifest_sha256``, decided about that manifest), or as it stands after ``wait``
    seconds; ``pending`` is shown each unsettled document (an import's progress)."""
    deadline = time.monotonic() + wait
    while True:
        status = read_status(staging, run_id, manifest_sha256)
        if status.settled or time.monotonic() >= deadline:
            return status
        if pending is not None:
            pending(status.document)
        time.sleep(min(interval, max(0.0, deadline - time.monotonic())))


def decision_exit_code(state: str) -> int:
    """The exit code of a run in ``state``: 0 promoted, 1 rejected, 3 still pending, 5 an
    unknown run (:data:`UNKNOWN_RUN`)."""
    return {
        State.PROMOTED.value: EXIT_OK,
        State.REJECTED.value: EXIT_REJECTED,
        UNKNOWN_RUN: EXIT_UNKNOWN_RUN,
    }.get(state, EXIT_PENDING)


def wait_for_record(
    staging: Bucket,
    run_id: str,
    wait: float,
    interval: float,
    manifest_sha256: str | None = None,
    pending: Callable[[dict[str, Any]], None] | None = None,
    *,
    people: bool = False,
    request: bool = False,
) -> int:
    """Wait for the run's decision (:func:`wait_for_decision`, showing ``pending`` each
    unsettled document), print it (:func:`print_status`: a summary when ``people``, else its
    document) and return its exit code.

    ``request``: ``run_id`` is a request's own key (an override, import or yank request),
    which no other writer will ever write again: the promoter's note that it ignored the
    request's writer (:func:`ignored_request`) is then final, exit 1 with its reason, where
    a run's manifest may still come from its trusted writer (exit 3)."""
    status = wait_for_decision(staging, run_id, wait, interval, manifest_sha256, pending)
    print_status(staging, run_id, status, people=people)
    ignored = ignored_request(status) if request else None
    if ignored is not None:
        print(
            f"wheelgate: the promoter will not act on {run_id}: {ignored} "
            "(nothing more will come of this request)",
            file=sys.stderr,
        )
        return EXIT_REJECTED
    return decision_exit_code(status.state)


def ignored_request(status: RunStatus) -> str | None:
    """The reason and message of the promoter's note that it ignored the manifest waited for
    because its writer may not write it (``untrusted-writer``, recorded as pending); ``None``
    when there is no such note."""
    decision = status.document.get("manifest_decision") or {}
    if decision.get("reason") != Reason.UNTRUSTED_WRITER.value:
        return None
    return f"{decision['reason']}: {decision.get('message') or ''}".rstrip(": ")


def for_people(args: argparse.Namespace) -> bool:
    """Whether to print a summary for people: on a terminal, unless ``--json``."""
    return not getattr(args, "json", False) and sys.stdout.isatty()


def print_status(staging: Bucket, run_id: str, status: RunStatus, *, people: bool) -> None:
    """Print a run's status: the summary for people (:func:`wheelgate.status.summary.render_run`)
    when ``people``, else its JSON document with ``record_url`` (where the record is; ``null``
    when there is none yet) beside it, as the status action outputs it. Principals are masked
    as every output masks them (:func:`~wheelgate.core.redact.mask_principals`)."""
    from wheelgate.status.summary import render_run

    record_url = f"s3://{staging.name}/{STAGING.record(run_id)}"
    if not people:
        shown = {**status.document, "record_url": record_url if status.record else None}
        print(mask_principals(json.dumps(shown, indent=2)))
        return
    document = status.document
    summary = render_run(
        run_id,
        status.record,
        record_url=record_url,
        pending_message=str(document.get("message", "")),
        pending_state=str(document.get("state", State.PENDING.value)),
        staged=document.get("staged", ()),
        manifest_decision=document.get("manifest_decision"),
    )
    print(mask_principals(summary))
