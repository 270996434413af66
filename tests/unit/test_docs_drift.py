"""The docs name exactly what exists: every option of every command, every input and output of
every action, every reason code, metric and ``cdk.json`` key is documented, and the docs name
none that does not exist.

What counts as documented, read from the real parser, the actions' ``action.yml``, ``Reason``,
``METRIC_NAMES`` and ``cdk.json``:

- an option of a command: it appears in an invocation of that command in the docs' written
  code (a fenced block or an inline code span: ``wheelgate <command> ... --option``); an option
  every storage command shares (``storage_options``) anywhere in the docs. Each option in an
  invocation must be one of that command's. ``docs/cli.md``'s generated reference does not
  count: it is held to the parser as a whole (``python -m tests.unit.cli_reference``).
- an action's input or output: a row of the input or output table under the action's heading
  in ``examples/github/README.md``.
- a reason code: a row of the reason table of ``docs/manifest.md``.
- a metric: a row of the metric table of ``docs/operations.md``; and every ``WheelGate/<Name>``
  anywhere in the docs is a metric.
- a ``cdk.json`` key of the ``wheelgate`` context object: a row of the key table of
  ``docs/deploy.md``.
- a layer of the package: a row of the layer table of ``docs/architecture.md``, with the
  layers ``tests/unit/test_dependency_rule.py`` lets it import.

And the docs hold together: every link between them reaches a page and a section that exist,
and the pages a newcomer reads first keep their sentences under 40 words.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.unit import cli_reference
from wheelgate.cli.common import storage_options
from wheelgate.cli.main import build_parser
from wheelgate.core.errors import Reason
from wheelgate.core.metrics import METRIC_NAMES, METRICS_NAMESPACE

REPO = Path(__file__).resolve().parents[2]
DOCS = sorted(
    [
        REPO / "README.md",
        *(REPO / "docs").glob("*.md"),
        REPO / "examples" / "github" / "README.md",
        REPO / "actions" / "README.md",
    ]
)
ACTIONS_DOC = REPO / "examples" / "github" / "README.md"
GLOBAL_OPTIONS = frozenset({"-h", "--help", "--version", "--debug"})

# -- the parser ---------------------------------------------------------------------------


#: Every parser, by command (``"stage"``, ``"index rebuild"``; the top level ``"wheelgate"``),
#: groups (``deps``, ``index``) included: the walk that renders docs/cli.md's reference.
PARSERS = {
    name.removeprefix("wheelgate "): parser
    for name, parser in cli_reference.commands(build_parser())
}


def option_spellings(parser: argparse.ArgumentParser) -> list[frozenset[str]]:
    """Each option of a command that ``--help`` shows (hidden ones are not documented), as all
    its spellings (``{"-o", "--output"}``)."""
    return [
        frozenset(action.option_strings)
        for action in parser._actions
        if action.option_strings and action.help != argparse.SUPPRESS
        and "--help" not in action.option_strings
    ]  # fmt: skip


def options(parser: argparse.ArgumentParser) -> set[str]:
    """Every spelling of every option of a command (see :func:`option_spellings`)."""
    return {flag for spellings in option_spellings(parser) for flag in spellings}


def shared_storage_options() -> set[str]:
    probe = argparse.ArgumentParser()
    storage_options(probe, nightly=True)
    return options(probe)


#: The commands that run (``"stage"``, ``"index rebuild"``, ``"deps sync"``...): the parsers
#: without commands of their own.
COMMANDS = {
    name: parser
    for name, parser in PARSERS.items()
    if not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)
}

# -- the docs -----------------------------------------------------------------------------

FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
INLINE = re.compile(r"`([^`\n]+)`")
#: Where an invocation ends: a pipe (not a synopsis' ``[--a X | --b Y]``), a command list, a
#: subshell's start or end, a comment.
INVOCATION_END = re.compile(r" \| (?!-)| *&&|;|\$\(|\)|\s#")
#: A shell comment, which a synopsis line may end with before its continuation.
COMMENT = re.compile(r"\s#.*$")
OPTION = re.compile(r"(?<![\w-])(?:--[a-z][a-z0-9-]*|-[a-zA-Z]\b)")
COMMAND_WORDS = sorted({name.split()[0] for name in COMMANDS}, key=len, reverse=True)
INVOKED = re.compile(
    r"\bwheelgate(?:\s+--debug)?\s+(?P<command>"
    + "|".join(COMMAND_WORDS)
    + r")\b(?:\s+(?P<action>[a-z]+(?:\|[a-z]+)*)\b)?"
)


@dataclass(frozen=True)
class Invocation:
    """``wheelgate COMMAND ...`` in the docs' code: where, which command(s), which options."""

    where: str
    commands: tuple[str, ...]
    options: frozenset[str]


def code_of(text: str) -> Iterator[str]:
    """The code of a Markdown text: each fenced block's lines joined with their continuations
    (a trailing backslash, or a following line that starts with an option, as in a synopsis),
    then each inline code span outside the blocks."""
    for block in FENCE.findall(text):
        logical: list[str] = []
        for line in (COMMENT.sub("", line) for line in block.splitlines()):
            continued = logical and (
                logical[-1].endswith("\\") or re.match(r"\s+\[?--", line) is not None
            )
            if continued:
                logical[-1] = logical[-1].rstrip("\\") + " " + line.strip()
            else:
                logical.append(line)
        yield from logical
    yield from INLINE.findall(FENCE.sub("", text))


def written(path: Path) -> str:
    """The text of a doc as written by hand: ``docs/cli.md`` without its generated reference
    (the parser's own ``--help``, held to it by :func:`test_the_cli_reference_is_current`)."""
    text = path.read_text(encoding="utf-8")
    if cli_reference.MARK_START not in text:
        return text
    generated = cli_reference.between_markers(text)
    return text.replace(generated, "")


def invocations(path: Path) -> Iterator[Invocation]:
    for code in code_of(written(path)):
        for found in INVOKED.finditer(code):
            rest = code[found.end() :]
            rest = rest[: m.start()] if (m := INVOCATION_END.search(rest)) else rest
            command = found["command"]
            if command in COMMANDS:
                names: tuple[str, ...] = (command,)
                rest = (found["action"] or "") + " " + rest
            elif found["action"] is None:
                continue  # the group named, not invoked (`wheelgate deps`)
            else:
                names = tuple(f"{command} {action}" for action in found["action"].split("|"))
            yield Invocation(
                f"{path.relative_to(REPO)}: {found.group(0)}{rest}".strip(),
                names,
                frozenset(OPTION.findall(rest)),
            )


INVOCATIONS = [i for path in DOCS for i in invocations(path)]


def test_the_docs_invoke_only_commands_that_exist() -> None:
    unknown = [(i.where, c) for i in INVOCATIONS for c in i.commands if c not in COMMANDS]
    assert unknown == [], "the docs invoke a command that does not exist"


def test_every_option_the_docs_give_a_command_is_one_of_its_options() -> None:
    wrong = sorted(
        (i.where, option, command)
        for i in INVOCATIONS
        for command in i.commands
        if command in COMMANDS
        for option in i.options - options(COMMANDS[command]) - GLOBAL_OPTIONS
    )
    assert wrong == [], "the docs give a command an option it does not have"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_option_of_every_command_is_documented(command: str) -> None:
    shared = shared_storage_options()
    documented = {o for i in INVOCATIONS if command in i.commands for o in i.options}
    undocumented = sorted(
        max(spellings, key=len)
        for spellings in option_spellings(COMMANDS[command])
        if not spellings & (shared | documented)
    )
    assert undocumented == [], (
        f"wheelgate {command}: no invocation in the docs shows {undocumented}"
    )


def test_every_storage_option_is_documented() -> None:
    text = "\n".join(path.read_text(encoding="utf-8") for path in DOCS)
    missing = sorted(o for o in shared_storage_options() if not re.search(rf"{o}\b", text))
    assert missing == [], f"storage options not in the docs: {missing}"


# -- tables -------------------------------------------------------------------------------


def table_rows(text: str, header: str) -> Iterator[list[str]]:
    """The cells of each row of every table whose first header cell is ``header``."""
    lines = iter(text.splitlines())
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or cells[0] != header:
            continue
        next(lines, None)  # the |---| line
        for row in lines:
            if not row.startswith("|"):
                break
            yield [c.strip() for c in row.strip().strip("|").split("|")]


def table_names(text: str, header: str) -> set[str]:
    """The backticked names in the first cell of each row of every table whose first header
    cell is ``header``."""
    return {name for row in table_rows(text, header) for name in re.findall(r"`([^`]+)`", row[0])}


def section(text: str, heading: str) -> str:
    """The text under ``heading`` (a Markdown heading line) up to the next heading of its
    level or above."""
    level = len(heading) - len(heading.lstrip("#"))
    start = text.index(heading + "\n") + len(heading) + 1
    end = re.compile(rf"^#{{1,{level}}} ", re.MULTILINE).search(text, start)
    return text[start : end.start() if end else len(text)]


ACTIONS = sorted(p.parent.name for p in (REPO / "actions").glob("*/action.yml"))


@pytest.mark.parametrize("action", ACTIONS)
def test_every_input_and_output_of_every_action_is_documented_and_exists(action: str) -> None:
    spec = yaml.safe_load((REPO / "actions" / action / "action.yml").read_text())
    docs = section(ACTIONS_DOC.read_text(encoding="utf-8"), f"### `{action}`")
    for kind in ("input", "output"):
        declared = set(spec.get(f"{kind}s") or {})
        documented = table_names(docs, kind)
        assert declared - documented == set(), f"{action}: {kind}s not documented"
        assert documented - declared == set(), f"{action}: documented {kind}s do not exist"


def test_the_reason_table_lists_exactly_the_reason_codes() -> None:
    documented = table_names((REPO / "docs" / "manifest.md").read_text(), "code")
    codes = {reason.value for reason in Reason}
    assert codes - documented == set(), "reason codes missing from docs/manifest.md"
    assert documented - codes == set(), "docs/manifest.md lists reason codes that do not exist"


def test_the_metric_table_lists_exactly_the_promoters_metrics() -> None:
    operations = (REPO / "docs" / "operations.md").read_text()
    documented = table_names(section(operations, "## Metrics"), "metric")
    assert set(METRIC_NAMES) - documented == set(), "metrics missing from docs/operations.md"
    assert documented - set(METRIC_NAMES) == set(), "docs/operations.md lists unknown metrics"


def test_the_docs_name_only_metrics_that_exist() -> None:
    named = {
        (path.name, name)
        for path in DOCS
        for name in re.findall(rf"\b{METRICS_NAMESPACE}/([A-Za-z]+)", path.read_text())
    }
    assert {(doc, name) for doc, name in named if name not in METRIC_NAMES} == set()


def test_the_key_table_lists_exactly_the_cdk_json_keys() -> None:
    keys = set(json.loads((REPO / "cdk.json").read_text())["context"]["wheelgate"])
    documented = table_names((REPO / "docs" / "deploy.md").read_text(), "key")
    assert keys - documented == set(), "cdk.json keys missing from docs/deploy.md"
    assert documented - keys == set(), "docs/deploy.md lists keys cdk.json does not have"


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_help_is_plain_text(command: str) -> None:
    # --help is read in a terminal: no reST roles or double backticks from a docstring
    shown = PARSERS[command].format_help()
    assert not re.search(r"``|:(mod|func|class|meth|data):`", shown), shown


# -- GitHub -------------------------------------------------------------------------------


def test_the_repository_variables_are_the_ones_the_workflows_use() -> None:
    used = {
        name
        for workflow in (REPO / "examples" / "github").glob("*.yml")
        for name in re.findall(r"\bvars\.([A-Z0-9_]+)", workflow.read_text())
    }
    text = ACTIONS_DOC.read_text(encoding="utf-8")
    listed = table_names(section(text, "## Repository variables"), "variable")
    assert used - listed == set(), "variables the workflows use are not in the list"
    assert listed - used == set(), "the list names variables no workflow uses"


def test_the_docs_use_actions_at_their_pinned_commits() -> None:
    pinned = {
        match[0]: (match[2], match[1])
        for match in re.findall(
            r"^\| `([\w.-]+/[\w.-]+)` \| (v[\d.]+) \| `([0-9a-f]{40})` \|$",
            section(ACTIONS_DOC.read_text(encoding="utf-8"), "## Pinned actions"),
            re.MULTILINE,
        )
    }
    assert pinned, "no pinned actions found"
    used = [
        (path.name, action, ref, tag)
        for path in DOCS
        for action, ref, tag in re.findall(
            r"uses: ([\w.-]+/[\w.-]+)@(\S+)(?: # (\S+))?", path.read_text()
        )
        if action in pinned
    ]
    assert used, "the docs show no pinned action"
    wrong = [
        (doc, action, ref, tag) for doc, action, ref, tag in used if (ref, tag) != pinned[action]
    ]
    assert wrong == [], f"pinned: {pinned}"


# -- generated and moved pages ------------------------------------------------------------

CLI_DOC = REPO / "docs" / "cli.md"


def test_the_cli_reference_is_current() -> None:
    # Given the reference the parser renders now, and the one committed in docs/cli.md
    committed = cli_reference.between_markers(CLI_DOC.read_text(encoding="utf-8"))
    # Then they are the same text
    assert committed == cli_reference.render().strip("\n"), (
        f"docs/cli.md's reference is stale: run `.venv/bin/python -m "
        f"{cli_reference.REGENERATE.removeprefix('python -m ')}`"
    )


def test_the_cli_page_says_how_to_regenerate_its_reference() -> None:
    header = CLI_DOC.read_text(encoding="utf-8").split(cli_reference.MARK_START)[0]
    assert cli_reference.REGENERATE in header


def test_a_changed_help_text_makes_the_reference_stale() -> None:
    document = cli_reference.replace_between_markers(
        f"x\n{cli_reference.MARK_START}\n{cli_reference.MARK_END}\n", cli_reference.render()
    )
    edited = document.replace("recent decisions, newest first", "recent decisions")
    assert cli_reference.between_markers(edited) != cli_reference.render().strip("\n")
    assert cli_reference.between_markers(document) == cli_reference.render().strip("\n")


def layer_table(text: str) -> dict[str, set[str]]:
    """The rows of the table whose first header cell is ``layer``: each layer and the
    backticked layers of its ``may import`` cell."""
    return {
        row[0].strip("`"): set(re.findall(r"`([^`]+)`", row[1]))
        for row in table_rows(text, "layer")
    }


def test_the_architecture_page_names_the_layers_of_the_dependency_rule() -> None:
    from tests.unit.test_dependency_rule import ALLOWED

    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    documented = layer_table(section(text, "## The dependency rule"))
    assert documented == {layer: set(allowed) for layer, allowed in ALLOWED.items()}, (
        "docs/architecture.md's layer table and tests/unit/test_dependency_rule.py's ALLOWED "
        "name different layers or imports"
    )


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


LINK = re.compile(r"\]\((?!https?:|mailto:)([^)\s]*)\)")


def test_every_link_between_the_docs_resolves() -> None:
    broken = []
    for path in DOCS:
        for target in LINK.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
            file, _, anchor = target.partition("#")
            linked = (path.parent / file).resolve() if file else path
            if not linked.exists():
                broken.append(f"{path.relative_to(REPO)}: {target}")
            elif anchor and linked.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", linked.read_text(encoding="utf-8"), re.M)
                if anchor not in {slug(h) for h in headings}:
                    broken.append(f"{path.relative_to(REPO)}: {target}")
    assert broken == [], "links to a page or a section that does not exist"


# -- plain sentences ----------------------------------------------------------------------

#: The pages a newcomer reads first, held to sentences under 40 words.
PLAIN_PAGES = ("README.md", "docs/concepts.md", "docs/architecture.md", "docs/cli.md")


def sentences(text: str) -> Iterator[str]:
    """The sentences of a Markdown text's prose: code blocks, headings, tables and comments
    left out, each list item a paragraph of its own, a link counted as its text."""
    text = re.sub(r"<!--.*?-->", "", FENCE.sub("", text), flags=re.S)
    paragraphs: list[list[str]] = [[]]
    for line in text.splitlines():
        stripped = line.strip()
        item = re.match(r"^(?:[-*]|\d+\.)\s+(.*)", stripped)
        if not stripped or stripped.startswith(("#", "|")) or item:
            paragraphs.append([item[1]] if item else [])
        else:
            paragraphs[-1].append(stripped)
    for paragraph in paragraphs:
        prose = re.sub(r"\]\([^)]*\)", "]", " ".join(paragraph))
        yield from (s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z`(\[*])", prose) if s)


@pytest.mark.parametrize("page", PLAIN_PAGES)
def test_sentences_are_under_40_words(page: str) -> None:
    long = [s for s in sentences(written(REPO / page)) if len(s.split()) >= 40]
    assert long == [], f"{page}: sentences of 40 words or more"


def test_a_long_sentence_is_found() -> None:
    assert [len(s.split()) for s in sentences("- " + "word " * 40 + ".\n\nShort.")] == [41, 1]
