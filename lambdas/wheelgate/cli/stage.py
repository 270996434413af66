"""``wheelgate stage``: upload a run's files to staging and write the run's own index."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from wheelgate.cli.common import (
    EXIT_OK,
    Progress,
    UsageError,
    buckets,
    checked,
    commit_option,
    index_option,
    nightly_url,
    storage_options,
)
from wheelgate.core.env_names import ENV_NIGHTLY_BASE_URL, ENV_STAGING_BASE_URL
from wheelgate.core.layout import STAGING, check_ci_run_id, key_url
from wheelgate.core.run_window import run_stage_window_from_env
from wheelgate.core.setting_values import SettingsError


def cmd_stage(args: argparse.Namespace) -> int:
    from wheelgate.staging.errors import StageError
    from wheelgate.staging.local_artifacts import inspect_files
    from wheelgate.staging.stage import stage

    checked("--run-id", args.run_id, check_ci_run_id)
    index_option(args)
    commit = commit_option(args)
    nightly_base_url = nightly_url(args)
    try:
        artifacts = inspect_files([Path(p) for p in args.files], ignored=_say_ignored)
    except StageError as exc:
        raise UsageError(str(exc)) from exc
    staging, nightly = buckets(args, nightly=True)
    assert nightly is not None
    try:
        window_days = run_stage_window_from_env(os.environ)
    except SettingsError as exc:
        raise UsageError(str(exc)) from exc
    try:
        result = stage(
            staging=staging,
            nightly=nightly,
            nightly_base_url=nightly_base_url,
            run_id=args.run_id,
            index=args.index,
            commit=commit,
            artifacts=artifacts,
            progress=Progress(),
            window_days=window_days,
        )
    except StageError as exc:
        raise UsageError(str(exc)) from exc
    run_index = STAGING.run_index_prefix(args.run_id, args.index)
    staging_base = args.staging_url or os.environ.get(ENV_STAGING_BASE_URL, "")
    summary = {
        "run_id": args.run_id,
        "index": args.index,
        # What the run's tests install from (`pip install --index-url <index_url>`).
        "index_url": key_url(staging_base, run_index) if staging_base else None,
        "index_key": run_index,
        "uploaded": result.uploaded,
        "unchanged": result.unchanged,
        "pages": result.pages.keys,
    }
    print(json.dumps(summary, indent=2))
    return EXIT_OK


def _say_ignored(path: Path) -> None:
    print(f"wheelgate stage: ignoring {path}: a hidden file, not a distribution", file=sys.stderr)


def register(subparsers: Any) -> None:
    """Add ``stage`` to the ``wheelgate`` command."""
    stage = subparsers.add_parser(
        "stage",
        help="upload a run's files to staging and write the run's own index",
        description=(
            "Upload wheels/sdists (or every file of a directory such as dist/, each of which "
            "must be one, hidden files left out) to runs/<run_id>/<index>/ with SHA-256 "
            "checksums, never replacing a staged object, write each wheel's PEP 658 .metadata, "
            "and write the "
            "run's index (its files over nightly's) at the same place, so the run's test jobs "
            "install with --index-url <index_url> exactly as users install from nightly. "
            "Everything is checked before the first upload; staging the same files again "
            "uploads nothing and refreshes the run's index."
        ),
    )
    stage.add_argument("--run-id", required=True, help="CI run id, e.g. $GITHUB_RUN_ID")
    stage.add_argument("--index", required=True, help="index directory, e.g. v2/gfx94X-dcgpu")
    stage.add_argument("--commit", help="commit the files were built from (default: $GITHUB_SHA)")
    stage.add_argument(
        "--nightly-url",
        help=f"public URL of the nightly index, for links to nightly files "
        f"(default: ${ENV_NIGHTLY_BASE_URL})",
    )
    stage.add_argument(
        "--staging-url",
        help=f"public URL of the staging distribution, to print the run's index URL "
        f"(default: ${ENV_STAGING_BASE_URL})",
    )
    stage.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="a wheel or sdist, or a directory of them (dist/: every file in it but hidden ones "
        "must be one)",
    )
    storage_options(stage, nightly=True)
    stage.set_defaults(func=cmd_stage)
