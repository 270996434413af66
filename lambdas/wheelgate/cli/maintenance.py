"""Requests to the promoter and index repair: ``wheelgate yank``, ``unyank``, ``promote
--override`` and ``index rebuild``."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from wheelgate.cli.common import (
    EXIT_OK,
    EXIT_PENDING,
    UsageError,
    buckets,
    checked,
    index_option,
    storage_options,
    validated,
)
from wheelgate.cli.run_status import for_people, wait_for_record
from wheelgate.core.layout import STAGING
from wheelgate.core.manifest import parse_distribution_filename

if TYPE_CHECKING:
    from wheelgate.index.rebuild import ProjectChange
    from wheelgate.index.store import PageWrites
    from wheelgate.promotion.lease import IndexLeases


def _send_request(
    args: argparse.Namespace, run_id: str, body: str, what: str, *, break_glass: bool = False
) -> int:
    """Write a request where manifests go (the promoter's inbox) and wait for its record;
    ``break_glass``: signed as local mode's break-glass role when its environment says so
    (:func:`~wheelgate.cli.local.break_glass_buckets`)."""
    from wheelgate.cli.local import break_glass_buckets

    staging, _ = (break_glass_buckets if break_glass else buckets)(args, nightly=False)
    staging.put(STAGING.manifest(run_id), body.encode(), content_type="application/json")
    print(f"{what} {run_id} written; waiting for the promoter", file=sys.stderr)
    sha256 = hashlib.sha256(body.encode()).hexdigest()
    return wait_for_record(
        staging,
        run_id,
        args.wait,
        1.0,
        manifest_sha256=sha256,
        people=for_people(args),
        request=True,
    )


def cmd_yank(args: argparse.Namespace) -> int:
    from wheelgate.index.yank import SCHEMA_YANK_V1, YankRequest, new_request_id

    yanked = args.command == "yank"
    reason = args.reason if yanked else ""
    if yanked and not reason.strip():
        raise UsageError("--reason is required: users see it when pip skips the file")
    index_option(args)
    checked("FILE", args.filename, parse_distribution_filename)
    request = validated(
        YankRequest,
        {
            "schema": SCHEMA_YANK_V1,
            "run_id": new_request_id(),
            "index": args.index,
            "filename": args.filename,
            "yanked": yanked,
            "reason": reason,
        },
        {"index": "--index", "filename": "FILE", "reason": "--reason"},
    )
    return _send_request(args, request.run_id, request.to_json(), "request")


def cmd_promote(args: argparse.Namespace) -> int:
    from wheelgate.core.override import (
        SCHEMA_OVERRIDE_V1,
        OverrideRequest,
        check_override_target,
        new_request_id,
    )

    if not args.override:
        raise UsageError(
            "a run is promoted when its manifest is written (wheelgate report); "
            "promote only exists as a break-glass --override of a rejected run"
        )
    if len(args.reason.strip()) < 10:
        raise UsageError("--reason must say why (at least 10 characters): it goes in the record")
    checked("--run-id", args.run_id, check_override_target)
    request = validated(
        OverrideRequest,
        {
            "schema": SCHEMA_OVERRIDE_V1,
            "run_id": new_request_id(args.run_id),
            "target_run_id": args.run_id,
            "reason": args.reason.strip(),
        },
        {"target_run_id": "--run-id", "reason": "--reason"},
    )
    return _send_request(
        args, request.run_id, request.to_json(), "override request", break_glass=True
    )


def cmd_index_rebuild(args: argparse.Namespace) -> int:
    from wheelgate.core.settings import listing_retention_from_env, page_retention_from_env
    from wheelgate.index.rebuild import left_in_nightly, rebuild, scan_nightly
    from wheelgate.promotion.lease import IndexLeases

    index_option(args)
    staging, nightly = buckets(args, nightly=True)
    assert nightly is not None
    try:
        rule = listing_retention_from_env(os.environ).rule_for(args.index)
        retention = page_retention_from_env(os.environ)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc

    left = left_in_nightly(staging, args.index)

    def run() -> tuple[list[ProjectChange], PageWrites]:
        try:
            return rebuild(
                target=nightly,
                index=args.index,
                scanned=scan_nightly(nightly, args.index),
                dry_run=args.dry_run,
                rule=rule,
                now=datetime.now(UTC),
                retention=retention,
                left=left,
            )
        except ValueError as exc:  # a file without a SHA-256, a page that is not a page
            raise UsageError(str(exc)) from exc

    if args.dry_run:
        changes, writes = run()
    else:
        # The promoter's lease on the directory: no promotion or yank writes its pages meanwhile.
        try:
            with _leased(IndexLeases(staging), args.index, args.wait):
                changes, writes = run()
        except DirectoryBusy as busy:
            print(f"wheelgate index rebuild: {busy}", file=sys.stderr)
            return EXIT_PENDING
    print(
        json.dumps(
            {
                "index": args.index,
                "bucket": "nightly",
                "dry_run": args.dry_run,
                "listing_retention": rule.to_value(),
                "projects": [c.__dict__ for c in changes if c.any],
                "unchanged_projects": sum(1 for c in changes if not c.any),
                # Found in nightly, never listed: a rejected run's earlier attempt copied them.
                "left_in_nightly": [
                    left[name].model_dump(mode="json")
                    for c in changes
                    for name in c.left_in_nightly
                ],
                "pages_written": writes.keys,
            },
            indent=2,
        )
    )
    return EXIT_OK


#: Seconds between attempts at a busy directory's lease.
LEASE_POLL_SECONDS = 5.0
#: Whom a directory's lease names while ``index rebuild`` holds it.
REBUILD_HOLDER = "index-rebuild"


class DirectoryBusy(Exception):
    """The directory stayed leased by a promotion for as long as the command would wait."""


@contextmanager
def _leased(leases: IndexLeases, index: str, wait: float) -> Iterator[None]:
    """Hold ``index``'s lease for the block, waiting up to ``wait`` seconds while a promotion
    holds it; then :class:`DirectoryBusy` naming the holder. Credentials that may not write
    the lease (S3 refuses) run the block without it, with a warning."""
    from wheelgate.promotion.lease import LeaseBusy
    from wheelgate.storage.errors import AccessError

    deadline = time.monotonic() + wait
    with ExitStack() as held:
        while True:
            try:
                held.enter_context(leases.hold([index], run_id=REBUILD_HOLDER))
                break
            except AccessError as refused:
                # The deployed staging bucket lets only the promoter write records/, the
                # leases' prefix; the pages stay right without it (each write reconciles).
                print(
                    f"wheelgate index rebuild: warning: cannot take the lease of {index} "
                    f"({refused}); rebuilding without it: no entry is lost, but a promotion "
                    "may publish to the directory meanwhile",
                    file=sys.stderr,
                )
                break
            except LeaseBusy as busy:
                if time.monotonic() + LEASE_POLL_SECONDS > deadline:
                    raise DirectoryBusy(
                        f"{busy.args[0].removesuffix('; will retry')}: waited {wait:g} s for "
                        "the directory's lease; nothing was written, run it again (--wait "
                        "SECONDS to wait longer)"
                    ) from busy
                time.sleep(LEASE_POLL_SECONDS)
        yield


#: What ``--json`` does to a request's outcome, as to ``wheelgate status``'s.
JSON_HELP = "print the record as JSON, also on a terminal (else a summary there; a pipe gets JSON)"


def register(subparsers: Any) -> None:
    """Add ``yank``, ``unyank``, ``promote`` and ``index rebuild`` to the ``wheelgate``
    command."""
    for name, what in (
        ("yank", "mark a released file as yanked (PEP 592); nothing is deleted"),
        ("unyank", "clear the yanked mark of a released file"),
    ):
        yank = subparsers.add_parser(
            name,
            help=what,
            description=(
                f"Ask the promoter to {what}, on nightly's pages (HTML and JSON). A run's "
                "staging index shows it once that run is staged again (wheelgate stage with the "
                "same files). The request is written where manifests go, so run it with the "
                "reporter role. Prints the outcome as wheelgate status does (a summary on a "
                "terminal, else JSON). Exit 0 done, 1 refused or ignored (asked by a role that "
                "may not ask it: final, at once), 3 pending."
            ),
        )
        yank.add_argument("--index", required=True, metavar="DIR")
        yank.add_argument("filename", metavar="FILE", help="the released file name")
        if name == "yank":
            yank.add_argument("--reason", required=True, help="why; pip shows it to users")
        yank.add_argument("--wait", type=float, default=120.0, metavar="SECONDS")
        yank.add_argument("--json", action="store_true", help=JSON_HELP)
        storage_options(yank, nightly=False)
        yank.set_defaults(func=cmd_yank)

    promote = subparsers.add_parser(
        "promote",
        help="break-glass: promote a rejected run despite its tests (--override)",
        description=(
            "Ask the promoter to promote RUN although its tests did not pass. Only the "
            "break-glass role may do this (run it with that role's credentials); every integrity "
            "check (completeness, sizes, SHA-256, commit, conflicts) still applies, and the run's "
            "record names who overrode it and why. Prints the outcome as wheelgate status does (a "
            "summary on a terminal, else JSON). Exit 0 promoted, 1 refused or ignored (asked by "
            "a role that may not ask it: final, at once), 3 pending."
        ),
    )
    promote.add_argument("--run-id", required=True)
    promote.add_argument("--override", action="store_true", help="required: say you mean it")
    promote.add_argument("--reason", required=True, help="why; recorded with your identity")
    promote.add_argument("--wait", type=float, default=300.0, metavar="SECONDS")
    promote.add_argument("--json", action="store_true", help=JSON_HELP)
    storage_options(promote, nightly=False)
    promote.set_defaults(func=cmd_promote)

    index = subparsers.add_parser("index", help="index maintenance")
    index_sub = index.add_subparsers(dest="index_command", required=True, metavar="ACTION")
    rebuild = index_sub.add_parser(
        "rebuild",
        help="rewrite an index directory's pages from the files in the bucket",
        description=(
            "Repair: scan nightly's files of DIR (<DIR>/<file>) and rewrite every archive page "
            "(<DIR>/_archive/: every file), then every project page and the root pages, listing "
            "what DIR's listing retention (WHEELGATE_LISTING_RETENTION, as the promoter reads "
            "it) keeps. Yank state and upload times of unchanged files are kept. "
            "Files a rejected run left in nightly (left_in_nightly, noted in staging's "
            "records/_left/) are reported and never listed. "
            "--dry-run prints what would change (delisted: files the rule takes off the "
            "listing) and writes nothing. Writing nightly pages needs the promoter's (or the "
            "break-glass) permissions; with $WHEELGATE_NIGHTLY_RETENTION_MODE and "
            "$WHEELGATE_NIGHTLY_PAGE_RETENTION_DAYS set (the stack's outputs), pages get the "
            "promoter's short lock. A run's staging index is "
            "refreshed by running wheelgate stage again with the same files."
        ),
    )
    rebuild.add_argument("--index", required=True, metavar="DIR")
    rebuild.add_argument("--dry-run", action="store_true")
    rebuild.add_argument(
        "--wait",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="how long to wait while a promotion holds the directory's lease (default 300)",
    )
    storage_options(rebuild, nightly=True)
    rebuild.set_defaults(func=cmd_index_rebuild)
