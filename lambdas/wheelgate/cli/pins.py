"""``wheelgate pins``: requirements pinning a run's files and their dependencies by hash."""

from __future__ import annotations

import argparse
from typing import Any

from wheelgate.cli.common import (
    EXIT_OK,
    UsageError,
    buckets,
    checked,
    index_option,
    required,
    staged_sets,
    storage_options,
)
from wheelgate.core.layout import STAGING, base_url, check_run_id
from wheelgate.core.settings import ENV_STAGING_BASE_URL


def cmd_pins(args: argparse.Namespace) -> int:
    from wheelgate.staging.pins import (
        check_platform,
        check_python_version,
        pinned_closure,
        resolve_with_pip,
        staged_projects,
        target_options,
    )

    checked("--run-id", args.run_id, check_run_id)
    index_option(args)
    staging_url = base_url(required(args, "staging_url", ENV_STAGING_BASE_URL, "--staging-url"))
    if args.python_version is not None:
        checked("--python-version", args.python_version, check_python_version)
    for platform in args.platform:
        checked("--platform", platform, check_platform)
    staging, _ = buckets(args, nightly=False)
    files = staged_sets(staging, args.run_id).get(args.index)
    if not files:
        raise UsageError(
            f"nothing is staged for run {args.run_id} in {args.index} (s3://{staging.name}/"
            f"{STAGING.run_index_prefix(args.run_id, args.index)})"
        )
    index_url = staging_url + STAGING.run_index_prefix(args.run_id, args.index)
    try:
        projects = staged_projects(files)
        report = resolve_with_pip(
            index_url,
            [p.requirement for p in projects.values()],
            options=target_options(args.python_version, args.platform),
        )
        text = pinned_closure(projects, report)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    header = (
        f"# Run {args.run_id}, {args.index}: the run's files and everything they need, hashed.\n"
        f"# pip install --require-hashes --index-url {index_url} -r THIS_FILE\n"
    )
    print(header + text, end="")
    return EXIT_OK


def register(subparsers: Any) -> None:
    """Add ``pins`` to the ``wheelgate`` command."""
    pins = subparsers.add_parser(
        "pins",
        help="print requirements pinning a run's files and their dependencies by hash",
        description=(
            "Resolve the projects staged for RUN in DIR against the run's index with pip (a "
            "dry run: python -m pip of this environment, which should be a current pip) and "
            "print a name==version line with --hash for every distribution of the closure: "
            "the run's own files, and the dependencies it takes from nightly, so that "
            "pip install --require-hashes --index-url <index_url> -r pins.txt and "
            "uv pip install --require-hashes accept it. Dependencies are resolved for this "
            "environment unless --python-version/--platform say otherwise."
        ),
    )
    pins.add_argument("--run-id", required=True)
    pins.add_argument("--index", required=True, metavar="DIR")
    pins.add_argument(
        "--staging-url",
        help=f"public URL of the staging distribution, where the run's index is "
        f"(default: ${ENV_STAGING_BASE_URL})",
    )
    pins.add_argument(
        "--python-version", help="resolve for this Python (e.g. 3.12), as pip's option does"
    )
    pins.add_argument(
        "--platform",
        action="append",
        default=[],
        help="resolve for this platform tag (repeatable), as pip's option does",
    )
    storage_options(pins, nightly=False)
    pins.set_defaults(func=cmd_pins)
