"""wheelgate: stage a run's wheels, report its tests, follow its promotion.

The flow: build CI runs `wheelgate stage` for each index directory; test jobs install from the
staging index exactly as users will; a final job runs `wheelgate report` with the test results,
which writes the run's manifest and so triggers the promoter; `wheelgate status RUN --wait S`
reports the decision. `wheelgate local` runs the whole stack on this machine.

Exit codes: 0 success (status/yank: done; verify: verified), 1 rejected (a decision; verify:
not verified), 2 bad input or configuration, 3 still pending, 4 storage or network error (one
line naming the operation, what it acted on, the endpoint and the error; --debug adds the
traceback), 5 status of an unknown run (nothing staged, reported or decided), 6 bisect run
inconclusive, 130 bisect run aborted, 141 the output's reader went away (| head).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from wheelgate import __version__
from wheelgate.cli import (
    bisect,
    check_workflows,
    deps,
    import_command,
    installed,
    job,
    local,
    maintenance,
    pins,
    rehearse,
    report,
    schema,
    stage,
    status,
    verify,
)
from wheelgate.cli.common import (
    EXIT_BROKEN_PIPE,
    EXIT_OK,
    EXIT_PENDING,
    EXIT_REJECTED,
    EXIT_STORAGE,
    EXIT_USAGE,
    UsageError,
)
from wheelgate.core import redact
from wheelgate.core.errors import TransientError
from wheelgate.storage.errors import StorageError

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_OK",
    "EXIT_PENDING",
    "EXIT_REJECTED",
    "EXIT_STORAGE",
    "EXIT_USAGE",
    "build_parser",
    "main",
]

#: The command groups, in the order ``wheelgate --help`` lists them; each module's
#: ``register`` adds its commands' parsers and handlers.
COMMAND_GROUPS = (
    stage,
    report,
    pins,
    installed,
    status,
    verify,
    local,
    maintenance,
    import_command,
    deps,
    bisect,
    schema,
    check_workflows,
    job,
    rehearse,
)


def build_parser() -> argparse.ArgumentParser:
    """The ``wheelgate`` parser: global options, then every command group's commands."""
    parser = argparse.ArgumentParser(
        prog="wheelgate",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog=(__doc__ or "").split("\n\n", 1)[-1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"wheelgate {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="log debug output, boto3's included (secrets masked)"
    )
    # A command that runs others (rehearse) runs them through main, as `wheelgate` runs them,
    # without importing this module.
    parser.set_defaults(main=main)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in COMMAND_GROUPS:
        group.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``wheelgate`` command; returns its exit code."""
    try:
        try:
            return _run(argv)
        finally:
            # A reader that went away shows here rather than at interpreter exit.
            sys.stdout.flush()
    except BrokenPipeError:
        # The Python docs' "Note on SIGPIPE": send what is left to devnull so the flush at
        # exit is quiet too, and end as a program that SIGPIPE ended would.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _run(argv: Sequence[str] | None) -> int:
    redact.install()
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.debug:
        logging.basicConfig(level=logging.DEBUG)
    try:
        return int(args.func(args))
    except UsageError as exc:
        print(f"wheelgate {_name(args)}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (StorageError, TransientError) as exc:
        # Storage refused, could not be reached, timed out or kept failing; or a conditional
        # write kept losing (TransientError).
        return _storage_error(args, exc)


def _storage_error(args: argparse.Namespace, exc: Exception) -> int:
    """Report a storage error on one line (and its traceback with ``--debug``): exit 4."""
    if args.debug:
        logging.getLogger("wheelgate").error("storage error", exc_info=exc)
    print(f"wheelgate {_name(args)}: storage error: {exc}", file=sys.stderr)
    return EXIT_STORAGE


def _name(args: argparse.Namespace) -> str:
    """The command as errors name it: its own ``command_name`` (``bisect run``), else its
    group's."""
    return str(getattr(args, "command_name", None) or args.command)
