"""``wheelgate status``: a run's promotion record."""

from __future__ import annotations

import argparse
from typing import Any

from wheelgate.cli.common import buckets, checked, storage_options, wait_for_record
from wheelgate.core.layout import check_run_id


def cmd_status(args: argparse.Namespace) -> int:
    checked("RUN_ID", args.run_id, check_run_id)
    staging, _ = buckets(args, nightly=False)
    return wait_for_record(staging, args.run_id, args.wait, args.interval)


def register(subparsers: Any) -> None:
    """Add ``status`` to the ``wheelgate`` command."""
    status = subparsers.add_parser(
        "status",
        help="print a run's promotion record as JSON",
        description="Exit 0 promoted, 1 rejected, 3 still pending.",
    )
    status.add_argument("run_id", metavar="RUN_ID")
    status.add_argument("--wait", type=float, default=0.0, metavar="SECONDS")
    status.add_argument("--interval", type=float, default=2.0, help=argparse.SUPPRESS)
    storage_options(status, nightly=False)
    status.set_defaults(func=cmd_status)
