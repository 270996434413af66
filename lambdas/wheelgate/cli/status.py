"""``wheelgate status`` (a run's promotion record) and ``wheelgate runs`` (recent decisions).

On a terminal each prints a short summary for people; ``--json``, and any output that is not
a terminal (a pipe, a file, a CI log), gets the JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from wheelgate.cli.common import (
    EXIT_OK,
    UsageError,
    buckets,
    checked,
    index_option,
    storage_options,
)
from wheelgate.cli.run_status import (
    decision_exit_code,
    for_people,
    manifest_commit,
    print_status,
    wait_for_decision,
)
from wheelgate.core.layout import check_run_id
from wheelgate.core.manifest import check_sha256
from wheelgate.core.records import State
from wheelgate.core.setting_values import SettingsError
from wheelgate.core.settings import allowed_indexes_from_env

if TYPE_CHECKING:
    from wheelgate.status.summary import RecentDecision
    from wheelgate.storage.bucket import Bucket

#: How many decisions ``wheelgate runs`` lists unless ``--limit`` says otherwise.
DEFAULT_RUNS_LIMIT = 20


def cmd_status(args: argparse.Namespace) -> int:
    checked("RUN_ID", args.run_id, check_run_id)
    if args.manifest_sha256 is not None:
        checked("--manifest-sha256", args.manifest_sha256, check_sha256)
    staging, _ = buckets(args, nightly=False)
    status = wait_for_decision(
        staging, args.run_id, args.wait, args.interval, manifest_sha256=args.manifest_sha256
    )
    print_status(staging, args.run_id, status, people=for_people(args))
    return decision_exit_code(status.state)


def cmd_runs(args: argparse.Namespace) -> int:
    from wheelgate.status.store import StatusStore
    from wheelgate.status.summary import recent_decisions, render_decisions, render_directories

    if args.index is not None:
        index_option(args)
    staging, _ = buckets(args, nightly=False)
    state, _etag = StatusStore(staging).read()
    rows = recent_decisions(
        state,
        index=args.index,
        decided=State(args.state) if args.state else None,
        limit=args.limit,
    )
    rows = with_commits(staging, rows)
    if for_people(args):
        print(render_decisions(rows))
        if args.state is None:
            print()
            print(render_directories(state, [args.index] if args.index else configured()))
    else:
        print(json.dumps([row.model_dump(mode="json") for row in rows], indent=2))
    return EXIT_OK


def with_commits(staging: Bucket, rows: Sequence[RecentDecision]) -> list[RecentDecision]:
    """``rows``, each run's without a commit given the one its manifest states (a rejected
    run's record may lack it)."""
    commits: dict[str, str | None] = {}
    found = []
    for row in rows:
        if row.commit is None and row.kind == "run":
            if row.run_id not in commits:
                commits[row.run_id] = manifest_commit(staging, row.run_id)
            row = row.model_copy(update={"commit": commits[row.run_id]})
        found.append(row)
    return found


def configured() -> list[str]:
    """The configured index directories (``$WHEELGATE_ALLOWED_INDEXES``; none when unset)."""
    try:
        return sorted(allowed_indexes_from_env(os.environ))
    except SettingsError as exc:
        raise UsageError(str(exc)) from exc


def _positive_limit(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


def register(subparsers: Any) -> None:
    """Add ``status`` and ``runs`` to the ``wheelgate`` command."""
    status = subparsers.add_parser(
        "status",
        help="a run's promotion record: a summary on a terminal, else JSON",
        description=(
            "Exit 0 promoted, 1 rejected, 3 still pending (a run staged and not reported: "
            "what is staged, its commit and its index), 5 an unknown run (nothing staged, "
            "reported or decided under RUN_ID). On a terminal, a summary: the "
            "state and reason, each set with its tests and files, and where the record is "
            "(a run without one says so); --json (and any output that is not a terminal) "
            "prints the record as JSON, with record_url (where it is; null without one). "
            "Principals show their role, the session name masked. With "
            "--manifest-sha256 (what wheelgate report printed), the decision about that "
            "manifest: a re-reported run is pending until the promoter has decided on the new "
            "manifest, whatever it decided before."
        ),
    )
    status.add_argument("run_id", metavar="RUN_ID")
    status.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="wait up to this long for the decision (default 0: print the record as it is)",
    )
    status.add_argument(
        "--manifest-sha256",
        metavar="SHA256",
        help="the decision about this manifest (the manifest_sha256 report printed), not an "
        "earlier one",
    )
    status.add_argument("--json", action="store_true", help="print JSON, also on a terminal")
    status.add_argument("--interval", type=float, default=2.0, help=argparse.SUPPRESS)
    storage_options(status, nightly=False)
    status.set_defaults(func=cmd_status)

    runs = subparsers.add_parser(
        "runs",
        help="recent decisions, newest first (the status site's)",
        description=(
            "List recent decisions, newest first, from what the status site keeps in staging "
            "(status/state.json: the last 20 decisions of each index directory and the last "
            "50 rejections), one row per run and directory, with the run's commit (its "
            "manifest's where the record lacks it): a table on a terminal, followed by each "
            "configured directory ($WHEELGATE_ALLOWED_INDEXES) with the run it was last "
            "promoted from, else JSON. "
            "Needs read access to the staging bucket's status/ prefix."
        ),
    )
    runs.add_argument("--index", metavar="DIR", help="only this index directory's decisions")
    runs.add_argument(
        "--state",
        choices=[s.value for s in State],
        help="only decisions in this state",
    )
    runs.add_argument(
        "--limit",
        type=_positive_limit,
        default=DEFAULT_RUNS_LIMIT,
        metavar="N",
        help=f"at most N rows (default {DEFAULT_RUNS_LIMIT})",
    )
    runs.add_argument("--json", action="store_true", help="print JSON, also on a terminal")
    storage_options(runs, nightly=False)
    runs.set_defaults(func=cmd_runs)
