"""``wheelgate deps check|plan|sync``: the CLI over :mod:`wheelgate.deps.config` (loading
deps.yml), :mod:`wheelgate.deps.file_cache` and :mod:`wheelgate.deps.wheel_mirror`.

``check`` validates deps.yml and needs no credentials. ``plan`` also HEADs every target (and
reads the nightly pages) and prints what ``sync`` would do. ``sync`` caches the files and
mirrors the wheels through the gate: it stages them under the mirror run, writes the run's
manifest (its one test is the review of deps.yml) and waits for the promoter's decision.
In CI both halves run with the deps role, the only writer whose mirror runs (``deps-*``) the
promoter accepts; ``--step upload`` and ``--step report`` split them into two steps.

Exit codes: 0 done, 1 an entry failed or the promoter rejected the run, 2 invalid deps.yml or
options, 3 promotion still pending, 4 storage error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from wheelgate.cli.common import (
    ENV_GITHUB_SHA,
    EXIT_OK,
    EXIT_REJECTED,
    Progress,
    UsageError,
    checked,
    commit_option,
    configured_indexes,
    nightly_url,
    required,
    s3_client,
    storage_options,
    test_url_option,
)
from wheelgate.cli.run_status import RunStatus, decision_exit_code, wait_for_decision
from wheelgate.core.env_names import ENV_NIGHTLY_BASE_URL, ENV_NIGHTLY_BUCKET, ENV_STAGING_BUCKET
from wheelgate.deps.config import load_deps
from wheelgate.deps.download import Fetcher, https_client
from wheelgate.deps.file_cache import plan_file, sync_files
from wheelgate.deps.mirror_runs import check_mirror_run_id, new_mirror_run_id
from wheelgate.deps.problems import DepsInvalid
from wheelgate.deps.rows import Row
from wheelgate.deps.targets import Deps
from wheelgate.deps.wheel_mirror import plan_mirror, report_mirror, stage_mirror
from wheelgate.staging.errors import StageError
from wheelgate.storage.bucket import Bucket


def _load(path: str) -> Deps:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc}") from exc
    try:
        deps = load_deps(text)
    except DepsInvalid as exc:
        for problem in exc.problems:
            print(f"{path}:{problem.line}: {problem.entry}: {problem.message}", file=sys.stderr)
        raise UsageError(
            f"{path}: {len(exc.problems)} problem(s); nothing was downloaded or uploaded"
        ) from exc
    configured_indexes(
        sorted({index for wheel in deps.wheels for index in wheel.indexes}),
        f"{path} mirrors wheels into",
    )
    return deps


def _parts(args: argparse.Namespace, deps: Deps) -> tuple[bool, bool]:
    files = bool(deps.files) and args.only in (None, "files")
    python = bool(deps.wheels) and args.only in (None, "python")
    return files, python


def _gate_buckets(args: argparse.Namespace) -> tuple[Bucket, Bucket]:
    s3 = s3_client(args)
    staging = required(args, "staging_bucket", ENV_STAGING_BUCKET, "--staging-bucket")
    nightly = required(args, "nightly_bucket", ENV_NIGHTLY_BUCKET, "--nightly-bucket")
    return Bucket(s3, staging), Bucket(s3, nightly)


def _cache_buckets(args: argparse.Namespace, deps: Deps) -> dict[str, Bucket]:
    s3 = s3_client(args)
    return {name: Bucket(s3, name) for name in sorted({t.bucket for t in deps.files})}


def _human(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size = size / 1000  # type: ignore[assignment]
    return str(size)  # pragma: no cover


def render_table(rows: Sequence[Row], *, timing: bool) -> str:
    """The plan or summary as an aligned text table."""
    header = ["entry", "target", "action", "bytes"] + (["seconds"] if timing else []) + ["detail"]
    lines = [header]
    for r in rows:
        cells = [r.entry, r.target, r.action, _human(r.bytes) if r.bytes else "-"]
        if timing:
            cells.append(f"{r.seconds:.1f}")
        lines.append([*cells, r.detail])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    out = []
    for line in lines:
        out.append(
            "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=False)) + "  " + line[-1]
        )
    return "\n".join(s.rstrip() for s in out)


def _emit(
    args: argparse.Namespace, rows: Sequence[Row], extra: dict[str, Any], timing: bool
) -> None:
    if args.json:
        print(json.dumps({**extra, "rows": [asdict(r) for r in rows]}, indent=2))
        return
    print(render_table(rows, timing=timing))
    for name, value in extra.items():
        if value is not None:
            print(f"{name}: {value if not isinstance(value, dict) else json.dumps(value)}")


def _mirror_run_id(args: argparse.Namespace, review_id: str) -> str:
    """The mirror run this sync acts on: a fresh one, or for ``--step report`` the one the
    upload step printed (``--run-id``)."""
    if args.run_id is None:
        if args.step == "report":
            raise UsageError("--step report needs --run-id: the run id `--step upload` printed")
        return new_mirror_run_id(review_id)
    return checked("--run-id", args.run_id, lambda value: check_mirror_run_id(review_id, value))


def cmd_check(args: argparse.Namespace) -> int:
    deps = _load(args.deps_file)
    print(
        f"{args.deps_file}: OK: {len(deps.files)} file(s), {len(deps.wheels)} wheel(s)"
        + (f", mirror run {deps.run_id}" if deps.run_id else "")
    )
    return EXIT_OK


def _plan_rows(args: argparse.Namespace, deps: Deps) -> list[Row]:
    files, python = _parts(args, deps)
    rows: list[Row] = []
    if files:
        buckets = _cache_buckets(args, deps)
        rows += [plan_file(buckets[t.bucket], t) for t in deps.files]
    if python:
        _, nightly = _gate_buckets(args)
        rows += [row for _, _, row in plan_mirror(nightly, deps.wheels).rows]
    return rows


def cmd_plan(args: argparse.Namespace) -> int:
    """``plan`` and ``sync --dry-run``: HEAD every target, read the nightly pages, write
    nothing."""
    deps = _load(args.deps_file)
    rows = _plan_rows(args, deps)
    _emit(args, rows, {"run_id": deps.run_id, "dry_run": True}, timing=False)
    return EXIT_REJECTED if any(r.action == "conflict" for r in rows) else EXIT_OK


def _review_url(args: argparse.Namespace) -> str:
    if args.review_url:
        url = str(args.review_url)
    elif os.environ.get("GITHUB_REPOSITORY") and os.environ.get(ENV_GITHUB_SHA):
        server = os.environ.get("GITHUB_SERVER_URL", "https://github.com")
        url = f"{server}/{os.environ['GITHUB_REPOSITORY']}/commit/{os.environ[ENV_GITHUB_SHA]}"
    else:
        raise UsageError("--review-url is required: the pull request that reviewed deps.yml")
    # It becomes the URL of the mirror run's one test.
    return test_url_option("--review-url", url)


def _stage_mirror(**kwargs: Any) -> list[Row]:
    try:
        return stage_mirror(**kwargs)
    except StageError as exc:
        # Other bytes already staged under the mirror run: the run is never changed in place.
        raise UsageError(str(exc)) from exc


def _fetcher(args: argparse.Namespace, hosts: frozenset[str]) -> Fetcher:
    """Downloads over https from ``hosts`` only, as ``--retries``, ``--timeout`` and
    ``--ca-bundle`` say."""
    if args.retries < 0:
        raise UsageError(f"--retries must be 0 or more, not {args.retries}")
    return Fetcher(
        https_client(
            args.ca_bundle, hosts, timeout=args.timeout, retries=args.retries, backoff=args.backoff
        )
    )


def cmd_sync(args: argparse.Namespace) -> int:
    deps = _load(args.deps_file)
    if args.dry_run:
        return cmd_plan(args)
    files, python = _parts(args, deps)
    upload, report = args.step in ("all", "upload"), args.step in ("all", "report")
    commit = commit_option(args) if python else ""
    review_url = _review_url(args) if python and report else ""
    run_id = _mirror_run_id(args, deps.run_id) if python and deps.run_id else None
    fetcher = _fetcher(args, frozenset(deps.document.validation.hosts))
    # A line per entry every 25 % in CI logs: a sync downloads many files at once.
    progress = Progress(verb="download", steps=4)
    rows: list[Row] = []
    promotion: RunStatus | None = None
    with tempfile.TemporaryDirectory(prefix="wheelgate-deps-", dir=args.workdir) as tmp:
        workdir = Path(tmp)
        if files and upload:
            rows += sync_files(
                deps.files,
                _cache_buckets(args, deps),
                fetcher,
                workdir,
                jobs=args.jobs,
                progress=progress,
            )
        if python:
            staging, nightly = _gate_buckets(args)
            assert run_id is not None
            staged_now = False
            if upload:
                mirror_rows = _stage_mirror(
                    plan=plan_mirror(nightly, deps.wheels),
                    staging=staging,
                    nightly=nightly,
                    nightly_base_url=nightly_url(args),
                    run_id=run_id,
                    commit=commit,
                    fetcher=fetcher,
                    workdir=workdir,
                    jobs=args.jobs,
                    progress=progress,
                )
                rows += mirror_rows
                staged_now = any(r.action == "staged" for r in mirror_rows)
                failed = any(r.action in ("failed", "held") for r in mirror_rows)
            else:
                failed = False
            if report and not failed and (staged_now or args.step == "report"):
                manifest_sha256 = report_mirror(
                    staging=staging,
                    run_id=run_id,
                    commit=commit,
                    review_url=review_url,
                    wheels=deps.wheels,
                )
                if manifest_sha256 is not None:
                    print(
                        f"manifest for {run_id} written; waiting for the promoter", file=sys.stderr
                    )
                    promotion = wait_for_decision(
                        staging, run_id, args.wait, args.interval, manifest_sha256
                    )
    progress.finish()
    summary = None
    if promotion is not None:
        decision = promotion.document["manifest_decision"]
        summary = {key: decision[key] for key in ("state", "reason", "message")}
    _emit(args, rows, {"run_id": run_id, "promotion": summary}, timing=True)
    if any(r.action in ("failed", "held") for r in rows):
        return EXIT_REJECTED
    if promotion is None:
        return EXIT_OK
    return decision_exit_code(promotion.state)


#: ``wheelgate deps --help``: what the module docstring says, as plain text.
DESCRIPTION = """\
check validates deps.yml and needs no credentials. plan also HEADs every target (and reads the
nightly pages) and prints what sync would do. sync caches the files and mirrors the wheels
through the gate: it stages them under the mirror run, writes the run's manifest (its one
test is the review of deps.yml) and waits for the promoter's decision. Run sync with the deps
role, the only writer whose mirror runs (deps-*) the promoter accepts; --step upload and
--step report split it into two steps.

Exit codes: 0 done, 1 an entry failed or the promoter rejected the run, 2 invalid deps.yml or
options, 3 promotion still pending, 4 storage error.
"""


def register(subparsers: Any) -> None:
    """Add ``deps check|plan|sync`` to the ``wheelgate`` command."""
    deps = subparsers.add_parser(
        "deps",
        help="cache third-party files and mirror pinned wheels from a reviewed deps.yml",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = deps.add_subparsers(dest="deps_command", required=True, metavar="ACTION")

    check = actions.add_parser(
        "check",
        help="validate deps.yml (no network, no credentials)",
        description="Report every problem of deps.yml with its line; exit 2 if there is any.",
    )
    check.add_argument("deps_file", metavar="DEPS_YML")
    check.set_defaults(func=cmd_check)

    for name, what in (
        ("plan", "validate, look at every target and print what sync would do"),
        ("sync", "download, verify and upload what is missing; mirror wheels through the gate"),
    ):
        action = actions.add_parser(name, help=what, description=what)
        action.add_argument("deps_file", metavar="DEPS_YML")
        action.add_argument(
            "--only", choices=["files", "python"], help="sync one part of deps.yml only"
        )
        action.add_argument("--json", action="store_true", help="print the result as JSON")
        action.add_argument(
            "--nightly-url",
            help=f"public URL of the nightly index (default: ${ENV_NIGHTLY_BASE_URL})",
        )
        storage_options(action, nightly=True)
        action.set_defaults(func=cmd_plan if name == "plan" else cmd_sync)
        if name == "plan":
            continue
        action.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
        action.add_argument(
            "--step",
            choices=["all", "upload", "report"],
            default="all",
            help="upload: cache files and stage wheels; report: write the mirror run's manifest "
            "and wait; all: both (default). Each with the deps role",
        )
        action.add_argument(
            "--run-id",
            help="the mirror run to report (--step report): the run_id --step upload printed; "
            "each upload stages under a fresh, unguessable run id",
        )
        action.add_argument("--jobs", type=int, default=4, help="parallel downloads (default 4)")
        action.add_argument("--retries", type=int, default=4, help="retries per download")
        action.add_argument(
            "--timeout", type=float, default=60.0, help="seconds per connect or read (default 60)"
        )
        action.add_argument("--commit", help="commit of deps.yml (default: $GITHUB_SHA)")
        action.add_argument(
            "--review-url", help="the review of deps.yml, e.g. its pull request (the test URL)"
        )
        action.add_argument(
            "--wait", type=float, default=900.0, metavar="SECONDS", help="for the promoter"
        )
        action.add_argument("--interval", type=float, default=2.0, help=argparse.SUPPRESS)
        action.add_argument("--backoff", type=float, default=0.5, help=argparse.SUPPRESS)
        action.add_argument("--ca-bundle", help="CA certificates for downloads (PEM)")
        action.add_argument("--workdir", help="where downloads are kept while uploading")
