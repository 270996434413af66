"""``wheelgate pins``: requirements pinning, for one target, one file of each distribution a
run's projects need, by hash."""

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
from wheelgate.core.env_names import ENV_STAGING_BASE_URL
from wheelgate.core.layout import STAGING, base_url, check_run_id


def cmd_pins(args: argparse.Namespace) -> int:
    from wheelgate.staging.offer import run_offer
    from wheelgate.staging.pins import pin_for_target, select_projects, staged_projects
    from wheelgate.staging.targets import target_from_options

    checked("--run-id", args.run_id, check_run_id)
    index_option(args)
    staging_url = base_url(required(args, "staging_url", ENV_STAGING_BASE_URL, "--staging-url"))
    try:
        target = target_from_options(
            preset=args.target,
            python_version=args.python_version,
            platforms=args.platform,
            implementation=args.implementation,
            abis=args.abi,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    staging, nightly = buckets(args, nightly=True)
    assert nightly is not None
    files = staged_sets(staging, args.run_id).get(args.index)
    if not files:
        raise UsageError(
            f"nothing is staged for run {args.run_id} in {args.index} (s3://{staging.name}/"
            f"{STAGING.run_index_prefix(args.run_id, args.index)})"
        )
    index_url = staging_url + STAGING.run_index_prefix(args.run_id, args.index)
    try:
        projects = staged_projects(files)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    projects = checked("--project", args.project, lambda names: select_projects(projects, names))
    try:
        offer = run_offer(staging, nightly, args.run_id, args.index, files)
        text = pin_for_target(index_url, projects, target, offer=offer)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    header = (
        f"# Run {args.run_id}, {args.index}, for {target.describe()}: {', '.join(projects)} "
        "and what they need there, one file each, by SHA-256.\n"
        f"# pip install --require-hashes --index-url {index_url} -r THIS_FILE\n"
    )
    print(header + text, end="")
    return EXIT_OK


def register(subparsers: Any) -> None:
    """Add ``pins`` to the ``wheelgate`` command."""
    pins = subparsers.add_parser(
        "pins",
        help="print requirements pinning, for one target, one file of each distribution a run "
        "needs",
        description=(
            "Resolve the projects staged for RUN in DIR (or those given with --project) "
            "against the run's index with pip (a dry run: python -m pip of this environment, "
            "which should be a current pip), for this environment or the target given, "
            "holding every file pip chose to the run's staged files and nightly's (never to "
            "what a page links: a file that is neither is refused), "
            "evaluating environment markers for that target, and print a name==version line "
            "with one --hash for every distribution they need there: the run's files and the "
            "dependencies from nightly. pip install --require-hashes --index-url <index_url> "
            "-r pins.txt and uv pip install --require-hashes accept it, and it is exact "
            "evidence of what such a test installed (report --installed)."
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
        "--project",
        action="append",
        default=[],
        metavar="NAME",
        help="pin this staged project and what it needs (repeatable; default: every project "
        "the run staged in DIR)",
    )
    pins.add_argument(
        "--target",
        metavar="PRESET",
        help="resolve for a preset target: cp3XX-manylinux_2_N_<arch> (every manylinux tag a "
        "glibc 2.N machine takes, and linux_<arch>), cp3XX-win_amd64, cp3XX-win_arm64, "
        "cp3XX-macosx_X_Y_<arm64|x86_64>; e.g. cp312-manylinux_2_28_x86_64",
    )
    for option, metavar, what in (
        ("--python-version", "V", "this Python (e.g. 3.12)"),
        (
            "--platform",
            "TAG",
            "this platform tag (repeatable; each is taken literally: manylinux_2_28_x86_64 "
            "alone refuses manylinux_2_17 and linux_x86_64 wheels)",
        ),
        ("--implementation", "I", "this implementation (cp, pp...)"),
        ("--abi", "ABI", "this ABI tag (repeatable, e.g. cp312)"),
    ):
        repeatable = option in ("--platform", "--abi")
        pins.add_argument(
            option,
            metavar=metavar,
            action="append" if repeatable else "store",
            default=[] if repeatable else None,
            help=f"resolve for {what}, as pip's option does",
        )
    storage_options(pins, nightly=True)
    pins.set_defaults(func=cmd_pins)
