"""``wheelgate installed``: what an environment holds, as evidence of what a test installed.

Run it in the test job, after the install and with no credentials: it writes the
environment's distributions and the SHA-256 of each of their files on disk
(:mod:`wheelgate.staging.environment`). ``wheelgate report --installed DIR:NAME=FILE`` then
finds the staged wheels the environment holds exactly, whichever installer put them there.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from wheelgate.cli.common import EXIT_OK, UsageError

#: The variable an activated virtual environment sets.
ENV_VIRTUAL_ENV = "VIRTUAL_ENV"


def _python(args: argparse.Namespace) -> str:
    if args.python:
        return str(args.python)
    venv = os.environ.get(ENV_VIRTUAL_ENV)
    if not venv:
        raise UsageError(
            f"--python is required (or activate the environment: ${ENV_VIRTUAL_ENV}): the "
            "interpreter of the environment the test installed into"
        )
    return str(Path(venv) / ("Scripts/python.exe" if os.name == "nt" else "bin/python"))


def environment_record(python: str) -> tuple[dict[str, Any], str]:
    """What the environment of ``python`` holds (its distributions and the SHA-256 of their
    files), and the evidence file's text; UsageError naming an interpreter that cannot say."""
    from wheelgate.staging.environment import inventory

    try:
        document = inventory(python)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    return document, json.dumps(document, indent=1, sort_keys=True) + "\n"


def cmd_installed(args: argparse.Namespace) -> int:
    python = _python(args)
    document, text = environment_record(python)
    if args.output is None:
        sys.stdout.write(text)
    else:
        try:
            Path(args.output).write_text(text)
        except OSError as exc:
            raise UsageError(f"--output {args.output}: {exc.strerror}") from exc
    files = sum(len(d["files"]) for d in document["distributions"])
    print(
        f"{len(document['distributions'])} distributions, {files} files hashed in the "
        f"environment of {python}",
        file=sys.stderr,
    )
    return EXIT_OK


def register(subparsers: Any) -> None:
    """Add ``installed`` to the ``wheelgate`` command."""
    installed = subparsers.add_parser(
        "installed",
        help="write what a test's environment holds, as evidence for report --installed",
        description=(
            "Write the distributions installed in the environment of --python (default: the "
            "activated one) with the SHA-256 of every file of each on disk, as JSON "
            "(wheelgate/environment/v1). Run it in the test job after the install, with any "
            "installer (uv pip install, pip install...); wheelgate report --installed "
            "DIR:NAME=FILE then finds the staged wheels that environment holds exactly and "
            "vouches for those. Needs no credentials."
        ),
    )
    installed.add_argument(
        "--python",
        metavar="PATH",
        help=f"the environment's interpreter (default: ${ENV_VIRTUAL_ENV}'s)",
    )
    installed.add_argument(
        "-o", "--output", metavar="FILE", help="write the JSON here (default: stdout)"
    )
    installed.set_defaults(func=cmd_installed)
