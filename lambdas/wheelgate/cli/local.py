"""``wheelgate local``: the whole stack on this machine (needs the ``local`` extra)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wheelgate.cli.common import EXIT_OK, UsageError, buckets, checked
from wheelgate.core.env_names import (
    AWS_PREFIX,
    ENV_ALLOWED_INDEXES,
    ENV_LISTING_RETENTION,
    environment,
    without_settings,
)
from wheelgate.core.import_sources import check_import_sources
from wheelgate.core.layout import check_index_dirs
from wheelgate.core.setting_values import ListingRetention, SettingsError
from wheelgate.local.names import ENV_LOCAL_BREAK_GLASS_KEY, LOCAL_BREAK_GLASS_ID
from wheelgate.storage.bucket import Bucket


def listing_retention_option(value: str, indexes: list[str]) -> str:
    """``--listing-retention``: the promoter's rule (``WHEELGATE_LISTING_RETENTION``), checked
    as the promoter reads it; its directories must be among ``indexes`` (the ``--index``
    directories, when any are given, as synthesis requires them in ``index_dirs``). Returns it
    as the promoter's variable spells it; a bad one is a UsageError."""
    try:
        rule = ListingRetention.from_value(json.loads(value), name="--listing-retention")
    except json.JSONDecodeError as exc:
        raise UsageError(f"--listing-retention is not JSON: {exc}") from exc
    except SettingsError as exc:
        raise UsageError(str(exc)) from exc
    strangers = sorted(set(rule.indexes) - set(indexes)) if indexes else []
    if strangers:
        raise UsageError(
            f"--listing-retention names {strangers[0]!r}, which is not one of the --index "
            f"directories ({', '.join(indexes)})"
        )
    return rule.to_json()


#: The variable ``--env-file`` adds: this process's id, to stop it by (``kill``: SIGTERM).
ENV_LOCAL_PID = "WHEELGATE_LOCAL_PID"


def write_env_file(path: Path, env: Mapping[str, str]) -> None:
    """Write ``env`` and :data:`ENV_LOCAL_PID` to ``path`` as ``export K=V`` lines, each value
    shell-quoted, for ``source``: whole or not at all (written beside it under a new name, a
    fixed one could be a planted symlink, then renamed)."""
    lines = [f"export {name}={shlex.quote(value)}\n" for name, value in env.items()]
    lines.append(f"export {ENV_LOCAL_PID}={os.getpid()}\n")
    handle, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write("".join(lines))
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise


def break_glass_buckets(args: argparse.Namespace, *, nightly: bool) -> tuple[Bucket, Bucket | None]:
    """The buckets an override or import request is written with: :func:`buckets`'s, signed
    with local mode's break-glass key when the environment has one
    (``WHEELGATE_LOCAL_BREAK_GLASS_KEY``: ``wheelgate local --break-glass``), as an operator of
    the deployed stack signs with the break-glass role's credentials; else the caller's own."""
    key = os.environ.get(ENV_LOCAL_BREAK_GLASS_KEY, "").strip()
    if not key:
        return buckets(args, nightly=nightly)
    import boto3

    before = boto3.DEFAULT_SESSION
    # Moto reads the request's access key; any secret signs (local mode only).
    boto3.DEFAULT_SESSION = boto3.Session(aws_access_key_id=key, aws_secret_access_key=key)
    try:
        return buckets(args, nightly=nightly)
    finally:
        boto3.DEFAULT_SESSION = before


def cmd_local(args: argparse.Namespace) -> int:
    from wheelgate.local.extra import LocalExtraMissing, require_local_extra
    from wheelgate.local.moto_version import UnpatchedMoto

    # The embedded stack's promoter and clients use its endpoint and credentials alone: an AWS
    # setting of this shell (a profile, a per-service endpoint, a session token) would send
    # them to a deployed stack or fail them, from the promoter's first import on. Its WheelGate
    # settings stay: the promoter reads them, as on Lambda (WHEELGATE_LISTING_RETENTION...).
    embedded = without_settings(os.environ, AWS_PREFIX)
    try:
        with environment(embedded):
            require_local_extra()
    except (LocalExtraMissing, UnpatchedMoto) as exc:
        raise UsageError(str(exc)) from exc
    from wheelgate.local.stack import LocalWheelGate

    required: dict[str, list[str]] = {}
    for spec in args.require_test:
        index, sep, name = spec.partition("=")
        if not sep or not name:
            raise UsageError(f"--require-test {spec!r} is not DIR=NAME")
        required.setdefault(index, []).append(name)
    if args.fanout_min_files is not None and args.fanout_min_files < 0:
        raise UsageError(f"--fanout-min-files must be 0 or more, not {args.fanout_min_files}")
    allowed = checked("--index", args.index, check_index_dirs)
    try:
        check_import_sources(args.import_source)
    except ValueError as exc:
        raise UsageError(f"--import-source: {exc}") from exc
    retention = (
        None
        if args.listing_retention is None
        else listing_retention_option(args.listing_retention, list(allowed))
    )
    gate = LocalWheelGate(
        s3_port=args.s3_port,
        staging_port=args.staging_port,
        nightly_port=args.nightly_port,
        required_tests=required,
        allowed_indexes=allowed,
        verbose=args.verbose,
        fanout_min_files=args.fanout_min_files,
        listing_retention=retention,
        break_glass=args.break_glass,
        import_sources=args.import_source,
    )
    # This process is the local promoter's: its handler reads the environment, as on Lambda.
    os.environ.clear()
    os.environ.update({**embedded, **gate.start()})
    if not args.no_promoter:
        gate.run_promoter()
    if args.env_file is not None:
        write_env_file(args.env_file, gate.env)
    sys.stdout.write(gate.ready_line() + "\n")
    sys.stdout.flush()
    # Exactly one line on stdout: everything after it (handler logs, metrics) goes to stderr.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    with contextlib.suppress(KeyboardInterrupt):
        stopped.wait()
    gate.stop()
    return EXIT_OK


def register(subparsers: Any) -> None:
    """Add ``local`` to the ``wheelgate`` command."""
    local = subparsers.add_parser(
        "local",
        help="run the whole stack locally (embedded S3, promoter loop, index servers)",
        description=(
            "Start an embedded S3/SQS on 127.0.0.1 laid out like the deployed stack, a loop "
            "feeding manifest events to the promoter handler, and HTTP servers for the staging "
            "and nightly indexes. Prints one JSON line with the environment to use (--env-file "
            "also writes it for a shell's source), then runs until interrupted: Ctrl-C, or "
            f"kill $PID (SIGTERM; {ENV_LOCAL_PID} in the env file) when it runs in the "
            "background (its buckets and queues live in its memory and go with it)."
        ),
    )
    local.add_argument("--s3-port", type=int, default=0, help="default: any free port")
    local.add_argument("--staging-port", type=int, default=0)
    local.add_argument("--nightly-port", type=int, default=0)
    local.add_argument(
        "--require-test",
        action="append",
        default=[],
        metavar="DIR=NAME",
        help="a test that must pass for sets of DIR",
    )
    local.add_argument(
        "--index",
        action="append",
        default=[],
        metavar="DIR",
        help=f"an index directory that may be staged and promoted to, as index_dirs in "
        f"cdk.json (repeatable; printed in the environment as {ENV_ALLOWED_INDEXES}); "
        "none: any directory",
    )
    local.add_argument(
        "--fanout-min-files",
        type=int,
        default=None,
        metavar="N",
        help="promote runs with N or more files to copy through fan-out executions, run in "
        "this process like the state machine (default: off, every run in one invocation)",
    )
    local.add_argument(
        "--listing-retention",
        metavar="JSON",
        help=f"which versions the promoter's pages list, as listing_retention in cdk.json: "
        '{"default": RULE, "indexes": {DIR: RULE}}, a RULE being {"keep_versions": K, '
        f'"keep_days": D}} (printed in the environment as {ENV_LISTING_RETENTION}, which '
        "index rebuild reads too; default: every version)",
    )
    _shell_and_break_glass_options(local)
    local.add_argument("--verbose", action="store_true", help="log every HTTP request")
    local.add_argument(
        "--no-promoter",
        action="store_true",
        help="do not consume the manifest queue (benchmarks run the promoter themselves)",
    )
    local.set_defaults(func=cmd_local)


def _shell_and_break_glass_options(local: argparse.ArgumentParser) -> None:
    """``--break-glass``, ``--import-source`` and ``--env-file``."""
    local.add_argument(
        "--break-glass",
        action="store_true",
        help=f"give the stack a break-glass role of its own ({LOCAL_BREAK_GLASS_ID}), distinct "
        f"from the reporter's: the environment then carries its key as "
        f"{ENV_LOCAL_BREAK_GLASS_KEY}, with which promote --override and import sign their "
        "requests (the reporter's are ignored or refused, as on the stack); without it no "
        "override or import can succeed",
    )
    local.add_argument(
        "--import-source",
        action="append",
        default=[],
        metavar="BUCKET[/PREFIX/]",
        help="where import requests may read from, as import_sources in cdk.json (repeatable; "
        "a bucket you create in the embedded S3; printed in the environment as "
        "WHEELGATE_IMPORT_SOURCES); none: nowhere",
    )
    local.add_argument(
        "--env-file",
        type=Path,
        metavar="FILE",
        help=f"also write the environment to FILE as export K=V lines (shell-quoted), with "
        f"{ENV_LOCAL_PID}, before the JSON line: `wheelgate local --env-file FILE &`, "
        f"then `source FILE` once it exists; stop it with `kill ${ENV_LOCAL_PID}`",
    )
