"""docs/deploy.md, the path from an empty account, holds: every command in it parses with the
real tool, every setting it names is a field of ``WheelGateProps``, every stack output it names
is one of the synthesized template's (and all of them are in step 5), the GitHub variables it
sets are the ones the example workflows read, the resources step 7 says ``cdk destroy`` leaves
are those the template retains, and its links to its own sections resolve."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from stacks.context import FILE_SUFFIX, STAGES_KEY, WHEELGATE_FILE_KEY, props_from_context
from stacks.oidc_subjects import OIDC_SUBJECT_CLAIM_KEYS
from stacks.props import WheelGateProps
from stacks.setting_errors import settings_model
from tests.infra.synth import REPO_ROOT
from wheelgate.cli.main import build_parser

DOC_PATH = REPO_ROOT / "docs" / "deploy.md"
CDK = REPO_ROOT / "node_modules" / ".bin" / "cdk"
#: How the page runs the CDK command-line tool: this repository's pinned copy, or ``npx`` with
#: the same version (an app of your own).
CDK_FORMS = ("node_modules/.bin/cdk", "npx", "cdk")
#: Shell words that end one command and start the next.
SEPARATORS = {";", "&&", "||", "|", "&"}
#: Names in backquotes that look like settings but are not: OIDC claims, context keys, GitHub
#: events, JSON fields of a fan-out execution's input and of a stage's output, code names.
NOT_SETTINGS = {
    *OIDC_SUBJECT_CLAIM_KEYS,
    "include_claim_keys",
    STAGES_KEY,
    WHEELGATE_FILE_KEY,
    STAGES_KEY + FILE_SUFFIX,
    "workflow_dispatch",
    "hash_items",
    "index_url",
    "cdn_only",
    "deploy_role_arn",
    "key_url",
}


def document() -> str:
    return DOC_PATH.read_text()


def shell_commands(doc: str) -> Iterator[list[str]]:
    """Each command of the page's ``sh`` blocks as its words: continuation lines joined,
    comments dropped, split at ``;``, ``&&``, ``|``..., leading ``VAR=value`` words dropped."""
    for block in re.findall(r"```sh\n(.*?)```", doc, flags=re.DOTALL):
        text = block.replace("\\\n", " ")
        for line in text.splitlines():
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
            lexer.whitespace_split = True
            lexer.commenters = "#"
            words: list[str] = []
            for word in [*lexer, ";"]:
                if word in SEPARATORS:
                    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
                        words.pop(0)
                    if words:
                        yield words
                    words = []
                else:
                    words.append(word)


def inline_commands(doc: str) -> Iterator[list[str]]:
    """Commands named in the page's prose (code spans that start with a tool's name)."""
    for span in re.findall(r"(?<!`)`([^`\n]+)`(?!`)", doc):
        words = span.split()
        # A tool's name alone (the `wheelgate` package, the `cdk` extra) is not a command.
        if len(words) > 1 and words[0] in ("wheelgate", "make", *CDK_FORMS):
            yield words


def all_commands(tool: str) -> list[tuple[list[str], bool]]:
    """Every command of ``tool`` in the page, and whether it is a whole one (an ``sh`` block's)."""
    doc = document()
    found = [(c, True) for c in shell_commands(doc) if c[0] == tool]
    found += [(c, False) for c in inline_commands(doc) if c[0] == tool]
    return found


# --- wheelgate ------------------------------------------------------------------------------


def _subparser(parser: argparse.ArgumentParser, words: list[str]) -> tuple[Any, list[str]]:
    """The (sub)parser the leading words of ``words`` select, and the words left."""
    while words:
        commands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not commands or words[0] not in commands[0].choices:
            break
        parser, words = commands[0].choices[words[0]], words[1:]
    return parser, words


def test_every_wheelgate_command_parses() -> None:
    found = all_commands("wheelgate")
    assert any(whole and c[1] == "import" for c, whole in found), "the import is a step"
    for words, whole in found:
        parser = build_parser()
        if whole:
            try:
                parser.parse_args(words[1:])
            except SystemExit:
                pytest.fail(f"docs/deploy.md: `{' '.join(words)}` does not parse")
            continue
        # A command named in prose: its subcommand and each option it gives must exist.
        sub, rest = _subparser(parser, words[1:])
        assert sub is not parser, f"`{' '.join(words)}`: no such wheelgate command"
        for word in rest:
            if word.startswith("-"):
                assert word.split("=")[0] in sub._option_string_actions, (words, word)


# --- make -----------------------------------------------------------------------------------


@cache
def make_targets() -> frozenset[str]:
    text = (REPO_ROOT / "Makefile").read_text()
    return frozenset(re.findall(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", text, flags=re.MULTILINE))


def test_every_make_command_names_targets() -> None:
    found = all_commands("make")
    assert found
    for words, _ in found:
        targets = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        assert targets, words
        assert set(targets) <= make_targets(), f"`{' '.join(words)}`: no such target"


# --- the CDK command-line tool --------------------------------------------------------------


def _cdk_env() -> dict[str, str]:
    return {
        **os.environ,
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "CDK_DISABLE_CLI_TELEMETRY": "true",
    }


@cache
def cdk_help(*command: str) -> str:
    result = subprocess.run(
        [str(CDK), *command, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=_cdk_env(),
    )
    return result.stdout


def cdk_subcommands() -> set[str]:
    listed = re.findall(r"^\s+cdk ([a-z-]+)", cdk_help(), flags=re.MULTILINE)
    aliases = re.findall(r"\[aliases: ([a-z, -]+)\]", cdk_help())
    return set(listed) | {a.strip() for group in aliases for a in group.split(",")}


def cdk_options(subcommand: str) -> set[str]:
    """Every option name (``--x``, ``-x``) that ``cdk <subcommand>`` takes, global ones too."""
    text = cdk_help(subcommand)
    return set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", text))


def pinned_cdk_version() -> str:
    return str(json.loads((REPO_ROOT / "package.json").read_text())["devDependencies"]["aws-cdk"])


def cdk_invocations() -> list[tuple[list[str], bool]]:
    """Each CDK command of the page as ``cdk <subcommand> ...``, whatever form runs it."""
    doc = document()
    assigned = re.findall(r"CDK_VERSION=(\S+)", doc)
    version = pinned_cdk_version()
    found = []
    for form in CDK_FORMS:
        for words, whole in all_commands(form):
            if form == "npx":
                package = words[1]
                pinned = package.replace("$CDK_VERSION", assigned[0] if assigned else "")
                assert pinned == f"aws-cdk@{version}", (
                    f"`{' '.join(words)}` runs {package}, not the pinned aws-cdk@{version} "
                    f"(CDK_VERSION is {assigned or 'not set'})"
                )
                words = ["cdk", *words[2:]]
            found.append((words, whole))
    return found


@pytest.mark.skipif(not CDK.exists(), reason="node_modules missing: run `make node` (npm ci)")
def test_every_cdk_command_parses_with_the_cdk_tool() -> None:
    found = cdk_invocations()
    used = {words[1] for words, _ in found if len(words) > 1}
    # Every step of the path is there: bootstrap, synth, diff, deploy, destroy.
    assert {"bootstrap", "synth", "diff", "deploy", "destroy"} <= used
    known = cdk_subcommands()
    for words, _ in found:
        if len(words) == 1:
            continue
        subcommand = words[1]
        assert subcommand in known, f"`{' '.join(words)}`: cdk has no command {subcommand}"
        options = cdk_options(subcommand)
        for word in words[2:]:
            if word.startswith("-"):
                assert word.split("=")[0] in options, f"`{' '.join(words)}`: cdk {word}?"


# --- settings --------------------------------------------------------------------------------


def _setting(path: list[str]) -> bool:
    """Whether ``path`` (``fanout``, ``min_files``) names a setting or one of its fields."""
    model: Any = WheelGateProps
    for part in path:
        if model is None or part not in model.model_fields:
            return False
        model = settings_model(model.model_fields[part].annotation)
    return True


def _module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a name inside a module, not a module
        return False


def _nested_fields() -> set[str]:
    found = set()
    for field in WheelGateProps.model_fields.values():
        model = settings_model(field.annotation)
        while model is not None:
            found |= set(model.model_fields)
            inner = [settings_model(f.annotation) for f in model.model_fields.values()]
            model = next((m for m in inner if m is not None), None)
    return found


def test_every_setting_the_page_names_is_a_field_of_the_props() -> None:
    doc = document()
    names = set(re.findall(r"`([a-z][a-z0-9]*(?:_[a-z0-9]+)+)`", doc))
    known = set(WheelGateProps.model_fields) | _nested_fields() | NOT_SETTINGS
    assert names - known == set(), "not WheelGateProps fields (or add to NOT_SETTINGS)"
    # `wheelgate.<setting>[.<field>]` (an error message's or -c's spelling) resolves too, and a
    # `wheelgate.<module>` is a module of the package (wheelgate.cdk is stacks/).
    for dotted in set(re.findall(r"(?<![\w/])wheelgate\.([a-z_]+(?:\.[a-z_]+)*)", doc)):
        path = dotted.split(".")
        if path[0] in WheelGateProps.model_fields:
            assert _setting(path), f"wheelgate.{dotted} is not a setting"
        elif dotted != "json":
            module = ".".join(["stacks" if path[0] == "cdk" else f"wheelgate.{path[0]}", *path[1:]])
            while module and not _module(module):
                module = module.rpartition(".")[0]
            assert module, f"wheelgate.{dotted} is neither a setting nor a module"


def _json(block: str) -> Any:
    """A JSON block, or a fragment of one object (``"key": {...}``), as a value."""
    try:
        return json.loads(block)
    except json.JSONDecodeError:
        return json.loads("{" + block + "}")


def test_every_settings_example_is_valid() -> None:
    doc = document()
    blocks = [_json(b) for b in re.findall(r"```json\n(.*?)```", doc, flags=re.DOTALL)]
    examples = [b for b in blocks if "wheelgate" in b.get("context", {})]
    assert examples, "the page shows a complete settings object"
    for example in examples:
        assert set(example["context"]["wheelgate"]) == set(WheelGateProps.model_fields)
        props_from_context(example["context"])
    stages = [b[STAGES_KEY] for b in blocks if STAGES_KEY in b]
    assert stages
    for stage in stages:
        for values in stage.values():
            assert set(values) <= set(WheelGateProps.model_fields)


# --- outputs ---------------------------------------------------------------------------------


def _table(doc: str, heading: str) -> list[str]:
    """The first column's backquoted names of the first table under ``heading``."""
    section = doc.split(heading, 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (`[^|]+) \|", section, flags=re.MULTILINE)
    return [name for row in rows for name in re.findall(r"`([^`]+)`", row)]


def test_step_5_lists_every_output_and_only_real_ones(template_json: dict[str, Any]) -> None:
    doc = document()
    outputs = set(template_json["Outputs"])
    listed = _table(doc, "## 5. The outputs")
    assert len(listed) == len(set(listed))
    assert set(listed) == outputs
    # And every output a command or the prose reads is real.
    read = set(re.findall(r"\$\(out (\w+)\)", doc))
    read |= set(re.findall(r"`(\w+)` output", doc)) | set(re.findall(r"output `(\w+)`", doc))
    assert read
    assert read <= outputs, read - outputs


def test_step_5_sets_the_variables_the_example_workflows_read() -> None:
    doc = document()
    section = doc.split("## 5. The outputs", 1)[1].split("\n## ", 1)[0]
    set_here = set(re.findall(r"gh variable set (\w+)", section))
    read = set()
    for folder in ("examples/github", "actions"):
        for path in (REPO_ROOT / folder).rglob("*.yml"):
            read |= set(re.findall(r"vars\.(\w+)", path.read_text()))
    assert set_here == read


# --- tear-down -------------------------------------------------------------------------------


def test_step_7_names_what_the_template_retains(template_json: dict[str, Any]) -> None:
    retained = {
        re.sub(r"[0-9A-F]{8}$", "", logical_id)
        for logical_id, resource in template_json["Resources"].items()
        if resource.get("DeletionPolicy") == "Retain"
    }
    assert retained
    named = set(_table(document(), "## 7. Tear-down"))
    assert named == retained


# --- links -----------------------------------------------------------------------------------


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_the_pages_links_to_its_own_sections_resolve() -> None:
    doc = document()
    slugs = {_slug(h) for h in re.findall(r"^#+ (.+)$", doc, flags=re.MULTILINE)}
    links = set(re.findall(r"\]\(#([^)]+)\)", doc))
    assert links
    assert links <= slugs, links - slugs
    # And the other documents' links into this page.
    for path in [*(REPO_ROOT / "docs").glob("*.md"), REPO_ROOT / "README.md"]:
        for anchor in re.findall(r"deploy\.md#([\w-]+)", path.read_text()):
            assert anchor in slugs, f"{path.name}: deploy.md#{anchor}"


def test_a_misspelt_setting_or_command_would_be_caught(tmp_path: Path) -> None:
    """The checks above read what the page says: a wrong name fails them."""
    assert not _setting(["break_glass_role"])
    assert _setting(["fanout", "min_files"])
    with pytest.raises(SystemExit):
        build_parser().parse_args(["import", "--from-bucket", "x", "--index", "v2/x"])
    words = next(
        shell_commands("```sh\nFOO=1 make venv && node_modules/.bin/cdk deploy -c a=b X\n```")
    )
    assert words == ["make", "venv"]
