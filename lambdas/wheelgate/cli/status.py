"""``wheelgate status`` (a run's promotion record) and ``wheelgate runs`` (recent decisions).

On a terminal each prints a short summary for people; ``--json``, and any output that is not
a terminal (a pipe, a file, a CI log), gets the JSON document.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from wheelgate.cli.common import (
    EXIT_OK,
    buckets,
    checked,
    decision_exit_code,
    index_option,
    storage_options,
    wait_for_decision,
)
from wheelgate.core.layout import STAGING, check_run_id
from wheelgate.core.manifest import check_sha256
from wheelgate.core.records import State

#: How many decisions ``wheelgate runs`` lists unless ``--limit`` says otherwise.
DEFAULT_RUNS_LIMIT = 20


def _for_people(args: argparse.Namespace) -> bool:
    """Whether to print the summary for people: on a terminal, unless ``--json``."""
    return not args.json and sys.stdout.isatty()


def cmd_status(args: argparse.Namespace) -> int:
    from wheelgate.status.summary import render_run

    checked("RUN_ID", args.run_id, check_run_id)
    if args.manifest_sha256 is not None:
        checked("--manifest-sha256", args.manifest_sha256, check_sha256)
    staging, _ = buckets(args, nightly=False)
    status = wait_for_decision(
        staging, args.run_id, args.wait, args.interval, manifest_sha256=args.manifest_sha256
    )
    record_url = f"s3://{staging.name}/{STAGING.record(args.run_id)}"
    if _for_people(args):
        print(
            render_run(
                args.run_id,
                status.record,
                record_url=record_url,
                pending_message=str(status.document.get("message", "")),
                manifest_decision=status.document.get("manifest_decision"),
            )
        )
    else:
        # Where the record is (or will be), beside it: what the status action outputs.
        print(json.dumps({**status.document, "record_url": record_url}, indent=2))
    return decision_exit_code(status.state)


def cmd_runs(args: argparse.Namespace) -> int:
    from wheelgate.status.store import StatusStore
    from wheelgate.status.summary import recent_decisions, render_decisions

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
    if _for_people(args):
        print(render_decisions(rows))
    else:
        print(json.dumps([row.model_dump(mode="json") for row in rows], indent=2))
    return EXIT_OK


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
            "Exit 0 promoted, 1 rejected, 3 still pending. On a terminal, a summary: the "
            "state and reason, each set with its tests and files, and where the record is; "
            "--json (and any output that is not a terminal) prints the record as JSON, with "
            "record_url (where it is). With "
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
            "50 rejections), one row per run and directory: a table on a terminal, else JSON. "
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
