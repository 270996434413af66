"""``wheelgate schema``: the manifest JSON Schema."""

from __future__ import annotations

import argparse
import json
from typing import Any

from wheelgate.cli.common import EXIT_OK
from wheelgate.core.manifest import json_schema


def cmd_schema(args: argparse.Namespace) -> int:
    print(json.dumps(json_schema(), indent=2))
    return EXIT_OK


def register(subparsers: Any) -> None:
    """Add ``schema`` to the ``wheelgate`` command."""
    schema = subparsers.add_parser("schema", help="print the manifest JSON Schema")
    schema.set_defaults(func=cmd_schema)
