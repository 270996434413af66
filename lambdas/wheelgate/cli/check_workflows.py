"""``wheelgate check-workflows`` and ``wheelgate families``: a repository's release workflows
held to its deployment's settings, and the matrices its release workflow reads from the one
file that names its GPU families (:mod:`wheelgate.core.families`, :mod:`wheelgate.core.workflows`).

Both read local files only and need no credentials. ``check-workflows`` exits 0 when the
workflows agree with the settings and hold no mistake of a copy
(:mod:`wheelgate.core.copied_workflows`), 1 naming each mismatch, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from wheelgate.cli.common import EXIT_OK, EXIT_REJECTED, UsageError, configured_indexes
from wheelgate.core.copied_workflows import check_copy
from wheelgate.core.families import Families, FamiliesError, parse_families
from wheelgate.core.workflows import (
    Deployment,
    WorkflowsError,
    compare,
    compare_families,
    workflow_key,
)

#: Where a repository keeps its families file, beside its workflows.
DEFAULT_FAMILIES = Path(".github/wheelgate-families.json")
DEFAULT_WORKFLOWS = Path(".github/workflows")
#: The options that stand for cdk.json keys: (option, key, repeatable).
SETTING_OPTIONS = (
    ("--index-dir", "index_dirs", True),
    ("--release-workflow", "release_workflows", True),
    ("--reporter-workflow", "reporter_workflow", False),
    ("--release-event", "release_events", True),
    ("--deps-workflow", "deps_workflows", True),
    ("--default-branch", "default_branch", False),
)


def _json_file(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{what} {path}: {exc.strerror}") from exc
    except ValueError as exc:
        raise UsageError(f"{what} {path} is not JSON: {exc}") from exc


def read_families(path: Path) -> Families:
    """The families file at ``path``; UsageError naming the file and the bad key."""
    try:
        return parse_families(_json_file(path, "families file"))
    except FamiliesError as exc:
        raise UsageError(f"{path}: {exc}") from exc


def _settings(args: argparse.Namespace) -> Deployment:
    context: dict[str, Any] = {}
    if args.cdk_json is not None:
        document = _json_file(args.cdk_json, "--cdk-json")
        found = document.get("context", {}).get("wheelgate") if isinstance(document, dict) else None
        if not isinstance(found, dict):
            raise UsageError(f"--cdk-json {args.cdk_json} has no context.wheelgate object")
        context = dict(found)
    for _, key, _ in SETTING_OPTIONS:
        value = getattr(args, key)
        if value:
            context[key] = value
    if args.required_test:
        required: dict[str, list[str]] = {}
        for spec in args.required_test:
            index, sep, name = spec.partition("=")
            if not sep or not index or not name:
                raise UsageError(f"--required-test {spec!r} is not DIR=NAME")
            required.setdefault(index, []).append(name)
        context["required_tests"] = required
    context.setdefault("required_tests", {})
    context.setdefault("default_branch", "main")
    missing = [option for option, key, _ in SETTING_OPTIONS[:4] if key not in context]
    if missing:
        raise UsageError(
            f"the settings to compare with are missing {', '.join(missing)}: give --cdk-json "
            "FILE (the deployment's cdk.json) or those options"
        )
    try:
        return Deployment.from_context(context)
    except WorkflowsError as exc:
        raise UsageError(str(exc)) from exc


def _workflows(paths: list[Path]) -> tuple[dict[str, dict[Any, Any]], dict[str, str]]:
    """The workflows parsed, keyed as the settings name them, and their texts, keyed by the
    path given."""
    if not paths:
        paths = sorted([*DEFAULT_WORKFLOWS.glob("*.yml"), *DEFAULT_WORKFLOWS.glob("*.yaml")])
        if not paths:
            raise UsageError(f"no workflow in {DEFAULT_WORKFLOWS}/: give the workflow files")
    workflows: dict[str, dict[Any, Any]] = {}
    texts: dict[str, str] = {}
    for path in paths:
        key = workflow_key(path.name)
        if key in workflows:
            raise UsageError(f"two workflows are named {Path(key).name}")
        try:
            text = path.read_text(encoding="utf-8")
            document = yaml.safe_load(text)
        except OSError as exc:
            raise UsageError(f"{path}: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise UsageError(f"{path} is not YAML: {exc}") from exc
        if not isinstance(document, dict):
            raise UsageError(f"{path} is not a workflow (a mapping with jobs)")
        workflows[key] = document
        texts[str(path)] = text
    return workflows, texts


def cmd_check_workflows(args: argparse.Namespace) -> int:
    deployment = _settings(args)
    workflows, texts = _workflows(args.workflows)
    families_path = args.families or (DEFAULT_FAMILIES if DEFAULT_FAMILIES.is_file() else None)
    families = read_families(families_path) if families_path is not None else None
    try:
        mismatches = compare(workflows, deployment, families)
    except WorkflowsError as exc:
        raise UsageError(str(exc)) from exc
    if families is not None:
        mismatches += compare_families(families, deployment, str(families_path))
    mismatches += check_copy(texts, families, str(families_path))
    for mismatch in mismatches:
        print(mismatch)
    if mismatches:
        print(
            f"{len(mismatches)} mismatch(es) with the deployment's settings or the examples' rules",
            file=sys.stderr,
        )
        return EXIT_REJECTED
    print(
        f"{len(workflows)} workflow(s) agree with the settings "
        f"({len(deployment.index_dirs)} index directories)",
        file=sys.stderr,
    )
    return EXIT_OK


def cmd_families(args: argparse.Namespace) -> int:
    families = read_families(args.file)
    if args.family is not None:
        try:
            families = families.named(args.family)
        except FamiliesError as exc:
            raise UsageError(f"--family: {exc}") from exc
    if args.dev:
        families = families.dev()
    configured_indexes([f.index for f in families.families], f"{args.file}: index")
    # One line each: $GITHUB_OUTPUT's name=value form.
    for name, value in (
        ("build", families.build_matrix()),
        ("test", families.test_matrix()),
        ("required", families.required_tests()),
    ):
        print(f"{name}={json.dumps(value, separators=(',', ':'))}")
    return EXIT_OK


def register(subparsers: Any) -> None:
    """Add ``check-workflows`` and ``families`` to the ``wheelgate`` command."""
    check = subparsers.add_parser(
        "check-workflows",
        help="compare the repository's workflows with the deployment's settings",
        description=(
            "Compare the repository's GitHub workflows with the deployment's settings: the "
            "release workflows present and triggered only by release_events, the reporter "
            "workflow on workflow_call only and called by them, every index directory of "
            "index_dirs built and tested and no other, every required test run, the deps "
            "workflows on push to the default branch. A matrix computed with fromJSON is read "
            "from the families file. Each line of a workflow is checked too: no placeholder "
            "of the examples left unfilled (<owner>, <commit>, any <word> in uses:, ref: or "
            "repository:), every remote action pinned by a 40-hex commit, no project named "
            "(a pinned requirement, a <project>-*.whl pattern) that the families file does "
            "not declare in projects. Exit 0: they agree; 1: each mismatch named, with its "
            "file and line; 2: bad input."
        ),
    )
    check.add_argument(
        "workflows",
        nargs="*",
        type=Path,
        metavar="WORKFLOW",
        help=f"workflow files (default: {DEFAULT_WORKFLOWS}/*.yml and *.yaml)",
    )
    check.add_argument(
        "--cdk-json",
        type=Path,
        metavar="FILE",
        help="the deployment's cdk.json: its context.wheelgate settings (options override)",
    )
    for option, key, repeatable in SETTING_OPTIONS:
        check.add_argument(
            option,
            dest=key,
            action="append" if repeatable else "store",
            metavar="VALUE",
            help=f"as {key} in cdk.json" + (" (repeatable)" if repeatable else ""),
        )
    check.add_argument(
        "--required-test",
        action="append",
        metavar="DIR=NAME",
        help="as required_tests in cdk.json, one test a time (repeatable)",
    )
    check.add_argument(
        "--families",
        type=Path,
        metavar="FILE",
        help=f"the families file (default: {DEFAULT_FAMILIES}, when it exists)",
    )
    check.set_defaults(func=cmd_check_workflows)

    families = subparsers.add_parser(
        "families",
        help="print the release matrices of the families file, for $GITHUB_OUTPUT",
        description=(
            "Read the families file and print three lines for $GITHUB_OUTPUT: build= (one "
            "build job per family), test= (one test job per family and Python, with its tests "
            "and their commands) and required= (each index directory's test names, as "
            "required_tests spells them). Refuses an index directory outside "
            "WHEELGATE_ALLOWED_INDEXES when it is set."
        ),
    )
    families.add_argument(
        "file",
        nargs="?",
        type=Path,
        default=DEFAULT_FAMILIES,
        metavar="FILE",
        help=f"the families file (default: {DEFAULT_FAMILIES})",
    )
    families.add_argument("--family", metavar="NAME", help="only this family (a rehearsal of one)")
    families.add_argument(
        "--dev",
        action="store_true",
        help="only the families a pull request builds (dev_families; dev.yml)",
    )
    families.set_defaults(func=cmd_families)
