"""``wheelgate bisect install`` (one run, exactly, into a venv) and the installer options it
shares with ``bisect run``: pip or uv, the interpreter, the cache, where files are read."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wheelgate.bisect.cache import BisectCache, CacheStateError, default_cache_dir
from wheelgate.bisect.history_cache import CachingHistorySource
from wheelgate.bisect.install import InstallReport, PipRunInstaller, install_run
from wheelgate.bisect.private_dir import UnsafeDirectory
from wheelgate.bisect.refs import RefError, WhyNot, resolve
from wheelgate.bisect.run_installer import SkipRun
from wheelgate.bisect.session import InstallerArgs
from wheelgate.cli.common import EXIT_OK, EXIT_REJECTED, UsageError, index_option, storage_options
from wheelgate.core.display import human_size
from wheelgate.core.env_names import ENV_NIGHTLY_BASE_URL, ENV_STAGING_BASE_URL
from wheelgate.core.layout import base_url
from wheelgate.history.model import HistoryRun
from wheelgate.staging.targets import target_preset

_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)i?B?", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
DEFAULT_VENV = ".wheelgate-venv"
#: Under the cache directory: the run history documents last read.
HISTORY_CACHE_DIR = "history"


def parse_size(value: str) -> int:
    """``--cache-size``: bytes, or a number with K, M, G or T (powers of 1024). Raises
    :class:`UsageError` naming the value."""
    match = _SIZE.fullmatch(value.strip())
    if match is None or float(match.group(1)) <= 0:
        raise UsageError(f"--cache-size: {value!r} is not a size such as 20G, 500M or 1048576")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def installer_options(parser: argparse.ArgumentParser) -> None:
    """Add the options that say how runs are installed."""
    group = parser.add_argument_group("installing runs")
    group.add_argument(
        "--installer", choices=["pip", "uv"], default="pip", help="what installs (default pip)"
    )
    group.add_argument(
        "--python",
        metavar="PATH",
        help="the interpreter the venv is made with (default: the one running wheelgate)",
    )
    group.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="where files are kept by SHA-256 (default: $XDG_CACHE_HOME/wheelgate/bisect)",
    )
    group.add_argument(
        "--cache-size",
        metavar="SIZE",
        help="evict the least recently used files past this size, never the ends' (e.g. 50G)",
    )
    group.add_argument(
        "--staging-url",
        metavar="URL",
        help=f"the staging distribution: history and staged files (default: "
        f"${ENV_STAGING_BASE_URL})",
    )
    group.add_argument(
        "--nightly-url",
        metavar="URL",
        help=f"the nightly distribution, for promoted files (default: ${ENV_NIGHTLY_BASE_URL})",
    )


def installer_args(args: argparse.Namespace) -> InstallerArgs:
    """The installer options as a session keeps them. Raises :class:`UsageError` when no
    staging URL is known (files are downloaded from it) or a size is not one."""
    staging = args.staging_url or os.environ.get(ENV_STAGING_BASE_URL, "")
    if not staging:
        raise UsageError(
            f"give --staging-url or set ${ENV_STAGING_BASE_URL}: staged files are downloaded "
            "from the staging distribution"
        )
    nightly = args.nightly_url or os.environ.get(ENV_NIGHTLY_BASE_URL) or None
    cache_dir = args.cache_dir or str(default_cache_dir(os.environ, Path.home()))
    return InstallerArgs(
        installer=args.installer,
        python=args.python or sys.executable,
        cache_dir=str(Path(cache_dir).absolute()),
        cache_size=None if args.cache_size is None else parse_size(args.cache_size),
        staging_url=base_url(staging),
        nightly_url=None if nightly is None else base_url(nightly),
    )


def build_installer(
    chosen: InstallerArgs, *, projects: tuple[str, ...], target: str | None
) -> PipRunInstaller:
    """The installer the steps use. Raises :class:`UsageError` for a target that is no preset
    and a cache directory that is not a cache."""
    try:
        preset = None if target is None else target_preset(target)
        cache = BisectCache(Path(chosen.cache_dir), max_bytes=chosen.cache_size)
        return PipRunInstaller(
            cache=cache,
            staging_base_url=chosen.staging_url,
            nightly_base_url=chosen.nightly_url,
            installer=chosen.installer,
            python=chosen.python,
            projects=projects,
            target=preset,
            now=lambda: datetime.now(UTC),
        )
    except (ValueError, CacheStateError, OSError, UnsafeDirectory) as exc:
        raise UsageError(f"cannot install runs: {exc}") from exc


def installable(installer: PipRunInstaller, *, as_test: str | None = None) -> WhyNot:
    """Why ``installer`` cannot install a run exactly (its skip's reason and message), or
    ``None``: what ``latest`` passes over. Raises :class:`UsageError` when the interpreter
    cannot be asked which wheels fit it."""

    def why_not(run: HistoryRun) -> str | None:
        try:
            installer.plan(run, as_test=as_test)
        except SkipRun as skip:
            return f"{skip.reason}: {skip.message}"
        except ValueError as exc:
            raise UsageError(f"cannot install runs: {exc}") from exc
        return None

    return why_not


def pin_ends(
    installer: PipRunInstaller,
    ends: tuple[HistoryRun, HistoryRun],
    *,
    as_test: str | None = None,
) -> None:
    """Keep the ends' files in the cache whatever its size limit: every answer names one."""
    for run in ends:
        try:
            plan = installer.plan(run, as_test=as_test)
        except SkipRun:
            continue  # the search checks the ends first and stops on a skipped one
        installer.cache.pin(f.sha256 for f in plan.files)


def read_runs(args: argparse.Namespace, index: str, chosen: InstallerArgs) -> list[HistoryRun]:
    """``index``'s run history, newest first, over HTTP from the staging distribution
    (1 GET for its head, 1 per month), kept in the cache; the cached copy when the
    distribution cannot be reached. Raises :class:`UsageError` when there is none yet or a
    document is not the history's."""
    from wheelgate.history.reader import HistoryFormatError, HttpHistorySource, read_history
    from wheelgate.storage.http import fetch

    source = CachingHistorySource(
        HttpHistorySource(chosen.staging_url, lambda url: fetch(url)),
        Path(chosen.cache_dir) / HISTORY_CACHE_DIR,
    )
    try:
        runs = read_history(source, index)
    except (HistoryFormatError, UnsafeDirectory) as exc:
        raise UsageError(str(exc)) from exc
    if source.offline:
        print(
            f"wheelgate {getattr(args, 'command_name', 'bisect')}: {chosen.staging_url} cannot be "
            "reached: using the run history "
            f"cached in {source.directory} (it may lack the newest runs)",
            file=sys.stderr,
        )
    if not runs:
        raise UsageError(f"index directory {index} has no run history yet at {chosen.staging_url}")
    return runs


def cmd_install(args: argparse.Namespace) -> int:
    index = index_option(args)
    chosen = installer_args(args)
    runs = read_runs(args, index, chosen)
    installer = build_installer(chosen, projects=tuple(args.project or ()), target=args.target)
    try:
        resolved = resolve(args.ref, runs, why_not=installable(installer, as_test=args.as_test))
    except RefError as exc:
        raise UsageError(str(exc)) from exc
    for note in resolved.notes:
        print(f"wheelgate bisect install: {note}", file=sys.stderr)
    run = resolved.run
    venv = Path(args.venv).absolute()
    try:
        report = install_run(run, installer, venv, as_test=args.as_test)
    except SkipRun as skip:
        print(
            f"wheelgate bisect install: error: run {run.run_id} cannot be installed exactly "
            f"({skip.reason}): {skip.message}",
            file=sys.stderr,
        )
        return EXIT_REJECTED
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    _print_report(report, as_json=args.json)
    return EXIT_OK


def _print_report(report: InstallReport, *, as_json: bool) -> None:
    run = report.plan.run
    if as_json:
        shown: dict[str, Any] = {
            "run_id": run.run_id,
            "commit": run.commit,
            "index": run.index,
            "route": report.plan.route.value,
            "test": report.plan.test,
            "venv": str(report.venv),
            "files": [
                {
                    "filename": f.filename,
                    "sha256": f.sha256,
                    "size": f.size,
                    "url": f.url,
                    "downloaded": f.downloaded,
                }
                for f in report.files
            ],
        }
        print(json.dumps(shown, indent=2))
        return
    print(f"run {run.run_id} ({run.commit[:12]}, {run.state.value}): {report.described()}")
    for f in report.files:
        how = "downloaded" if f.downloaded else "cached"
        print(f"  {f.filename}  {human_size(f.size)}  {how}  sha256:{f.sha256[:12]}")
    print(f"installed into {report.venv}: source {report.venv}/bin/activate")


INSTALL_DESCRIPTION = """\
Install exactly one run of an index directory into a venv: the files one of its tests
installed (a passed test's first, else a failed one's) for this interpreter or --target, or
with --as-test exactly the files that test installed; a run never reported, its offer (its
staged files and the nightly files its index offered, resolved among those alone). It says
which. Each file is pinned by SHA-256 (--require-hashes), promoted files from nightly, others
from staging while they last. It reads the run history, not the run's own pages, so it works
after those expire.

REF: as for bisect run (a run id, a commit prefix, a date, promoted or latest: the newest run
that can be installed, with --as-test the newest with that test).

Exit codes: 0 installed; 1 the run cannot be installed exactly (the reason is named: no
evidence, no offer, expired, missing file, hash mismatch, failed install); 2 bad options or
a REF naming no run or several; 4 storage error.
"""


def register_install(actions: Any) -> None:
    """Add ``bisect install`` to the ``bisect`` command's actions."""
    install = actions.add_parser(
        "install",
        help="install exactly one run into a venv",
        description=INSTALL_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    install.add_argument("ref", metavar="REF", help="the run to install")
    install.add_argument("--index", metavar="DIR", required=True, help="its index directory")
    install.add_argument(
        "--as-test", metavar="NAME", help="install exactly the files this test installed"
    )
    install.add_argument(
        "--venv",
        metavar="PATH",
        default=DEFAULT_VENV,
        help=f"the venv to install into, made if missing (default {DEFAULT_VENV})",
    )
    install.add_argument(
        "--project", action="append", metavar="P", help="a run without this project is refused"
    )
    install.add_argument("--target", metavar="PRESET", help="install the files of this target")
    install.add_argument("--json", action="store_true", help="print what was installed as JSON")
    installer_options(install)
    storage_options(install, nightly=False)
    install.set_defaults(func=cmd_install, command_name="bisect install")
