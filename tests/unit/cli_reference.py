"""The command reference of ``docs/cli.md``: what ``wheelgate ... --help`` prints for every
command, rendered from the real parser (``wheelgate.cli.main.build_parser``).

The reference lies between two markers in ``docs/cli.md``; the prose around it is written by
hand. ``tests/unit/test_docs_drift.py`` fails when the text between the markers is not what
this module renders now.

Run ``python -m tests.unit.cli_reference`` to print the reference, or with
``--write docs/cli.md`` to refresh it between the markers. The text is the same on every
machine: the help is laid out at a fixed width, whatever the terminal's, by the argparse of
the Python that ``make venv`` installs (3.11).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import cast

from wheelgate.cli.main import build_parser

MARK_START = "<!-- cli-reference:start -->"
MARK_END = "<!-- cli-reference:end -->"
#: The width of the help text, in columns: ``--help`` in a 100-column terminal.
WIDTH = 100
REGENERATE = "python -m tests.unit.cli_reference --write docs/cli.md"


def commands(
    parser: argparse.ArgumentParser, words: tuple[str, ...] = ()
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every command's name and parser, in the order ``--help`` lists them, depth first: the
    top level, each command, each group (``deps``, ``index``) before its commands."""
    yield " ".join(("wheelgate", *words)), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, (*words, name))


def fixed_width_help(parser: argparse.ArgumentParser) -> str:
    """``parser.format_help()`` laid out at :data:`WIDTH` columns, not the terminal's."""
    formatter_class = parser.formatter_class
    # Every formatter of the package's parsers is argparse's HelpFormatter or a subclass.
    help_formatter = cast("type[argparse.HelpFormatter]", formatter_class)

    def formatter(prog: str) -> argparse.HelpFormatter:
        return help_formatter(prog, width=WIDTH)

    parser.formatter_class = formatter
    try:
        return parser.format_help()
    finally:
        parser.formatter_class = formatter_class


def render() -> str:
    """The reference: a heading and a ``--help`` block for each command."""
    sections = [
        f"### `{name}`\n\n```text\n{fixed_width_help(parser).rstrip()}\n```\n"
        for name, parser in commands(build_parser())
    ]
    return "\n".join(sections)


def between_markers(document: str) -> str:
    """The text between the markers of ``document`` (without the newlines next to them)."""
    start = document.index(MARK_START) + len(MARK_START)
    return document[start : document.index(MARK_END, start)].strip("\n")


def replace_between_markers(document: str, reference: str) -> str:
    start = document.index(MARK_START) + len(MARK_START)
    end = document.index(MARK_END, start)
    return f"{document[:start]}\n{reference.strip(chr(10))}\n{document[end:]}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.unit.cli_reference")
    parser.add_argument("--write", type=Path, metavar="FILE", help="refresh FILE's reference")
    args = parser.parse_args(argv)
    reference = render()
    if args.write is None:
        print(reference.rstrip("\n"))
        return 0
    document = args.write.read_text(encoding="utf-8")
    args.write.write_text(replace_between_markers(document, reference), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
