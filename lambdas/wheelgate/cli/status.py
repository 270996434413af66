"""``wheelgate status``: a run's promotion record."""

from __future__ import annotations

import argparse
from typing import Any

from wheelgate.cli.common import buckets, checked, storage_options, wait_for_record
from wheelgate.core.layout import check_run_id
from wheelgate.core.manifest import check_sha256


def cmd_status(args: argparse.Namespace) -> int:
    checked("RUN_ID", args.run_id, check_run_id)
    if args.manifest_sha256 is not None:
        checked("--manifest-sha256", args.manifest_sha256, check_sha256)
    staging, _ = buckets(args, nightly=False)
    return wait_for_record(
        staging, args.run_id, args.wait, args.interval, manifest_sha256=args.manifest_sha256
    )


def register(subparsers: Any) -> None:
    """Add ``status`` to the ``wheelgate`` command."""
    status = subparsers.add_parser(
        "status",
        help="print a run's promotion record as JSON",
        description=(
            "Exit 0 promoted, 1 rejected, 3 still pending. With --manifest-sha256 (what "
            "wheelgate report printed), the decision about that manifest: a re-reported run "
            "is pending until the promoter has decided on the new manifest, whatever it "
            "decided before."
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
    status.add_argument("--interval", type=float, default=2.0, help=argparse.SUPPRESS)
    storage_options(status, nightly=False)
    status.set_defaults(func=cmd_status)
