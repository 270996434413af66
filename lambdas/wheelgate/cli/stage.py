"""``wheelgate stage``: upload a run's files to staging and write the run's own index."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from wheelgate.cli.common import (
    ENV_GITHUB_RUN_ATTEMPT,
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
from wheelgate.core.timestamps import upload_time


def cmd_stage(args: argparse.Namespace) -> int:
    from wheelgate.staging.errors import StageError
    from wheelgate.staging.local_artifacts import inspect_files
    from wheelgate.staging.stage import stage
    from wheelgate.staging.unresolved import ADVICE, UnresolvedRequirementsError

    checked("--run-id", args.run_id, check_ci_run_id)
    index_option(args)
    commit = commit_option(args)
    commit_time = commit_time_option(args.commit_time, commit)
    attempt = attempt_option(args.attempt) or 1
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
            attempt=attempt,
            commit_time=commit_time,
            strict=args.strict,
        )
    except UnresolvedRequirementsError as exc:
        _say_unresolved("error", [u.describe(args.index) for u in exc.unresolved])
        raise UsageError(f"nothing was staged (--strict): {ADVICE}") from exc
    except StageError as exc:
        raise UsageError(str(exc)) from exc
    if result.unresolved:
        _say_unresolved("warning", [u.describe(args.index) for u in result.unresolved])
        _say_unresolved("warning", [f"a test installing from the run's index fails: {ADVICE}"])
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


def commit_time_option(option: str | None, commit: str) -> str | None:
    """``--commit-time`` as an upload time, else the commit's time from the git checkout in
    the current directory when it holds ``commit``, else ``None``. Raises :class:`UsageError`
    naming the option for a value that is not a time with a zone (``stage`` and ``report``)."""
    if option is None:
        option = git_commit_time(commit)
        if option is None:
            return None
    try:
        moment = datetime.fromisoformat(option.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"--commit-time: {option!r} is not an ISO 8601 time (e.g. 2026-03-02T14:05:00+01:00)"
        ) from None
    if moment.tzinfo is None:
        raise UsageError(f"--commit-time: {option!r} has no UTC offset (add Z or +HH:MM)")
    return upload_time(moment)


def git_commit_time(commit: str) -> str | None:
    """``git show -s --format=%cI <commit>`` in the current directory; ``None`` when it is not
    a git checkout holding ``commit`` (or git is missing)."""
    try:
        shown = subprocess.run(
            ["git", "show", "-s", "--format=%cI", commit],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return shown.stdout.strip() or None if shown.returncode == 0 else None


def attempt_option(option: str | None) -> int | None:
    """``--attempt``, else ``$GITHUB_RUN_ATTEMPT``: a positive integer; ``None`` when neither
    is given. Raises :class:`UsageError` naming where a bad value came from."""
    source, value = (
        ("--attempt", option)
        if option is not None
        else (ENV_GITHUB_RUN_ATTEMPT, os.environ.get(ENV_GITHUB_RUN_ATTEMPT))
    )
    if value is None or (source == ENV_GITHUB_RUN_ATTEMPT and not value):
        return None
    if not (value.isascii() and value.isdigit() and int(value) >= 1):
        raise UsageError(
            f"{source} must be a positive integer (the CI run's attempt), not {value!r}"
        )
    return int(value)


def _say_unresolved(kind: str, lines: list[str]) -> None:
    for line in lines:
        print(f"wheelgate stage: {kind}: {line}", file=sys.stderr)


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
        "--commit-time",
        metavar="ISO",
        help="when the commit was made, ISO 8601 with an offset, for the run history "
        "(default: git show -s --format=%%cI COMMIT, when the current directory is a git "
        "checkout holding it; else none)",
    )
    stage.add_argument(
        "--attempt",
        metavar="N",
        help=f"the CI run's attempt, for the run history (default: ${ENV_GITHUB_RUN_ATTEMPT}, "
        "else 1)",
    )
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
        "--strict",
        action="store_true",
        help="refuse, staging nothing (exit 2), when a wheel requires a project (any marker or "
        "extra) that neither the run nor nightly holds; without it, stage warns",
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
