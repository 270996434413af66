"""wheelgate: stage a run's wheels, report its tests, follow its promotion.

The flow: build CI runs `wheelgate stage` for each index directory; test jobs install from the
staging index exactly as users will; a final job runs `wheelgate report` with the test results,
which writes the run's manifest and so triggers the promoter; `wheelgate status RUN --wait S`
reports the decision. `wheelgate local` runs the whole stack on this machine.

Exit codes: 0 success (status/yank: done), 1 rejected, 2 bad input or configuration,
3 still pending, 4 storage or network error, 141 the output's reader went away (| head).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from wheelgate import __version__
from wheelgate.cli.common import (
    EXIT_BROKEN_PIPE,
    EXIT_OK,
    EXIT_PENDING,
    EXIT_REJECTED,
    EXIT_STORAGE,
    EXIT_USAGE,
    UsageError,
    buckets,
    checked,
    commit_option,
    configured_indexes,
    index_option,
    nightly_url,
    required,
    storage_options,
    test_url_option,
    validated,
    wait_for_decision,
)
from wheelgate.core import redact
from wheelgate.core.errors import PromotionRejected, TransientError
from wheelgate.core.layout import STAGING, base_url, check_index_dirs, check_run_id, key_url
from wheelgate.core.manifest import (
    ManifestFile,
    ManifestV2,
    json_schema,
    parse_distribution_filename,
)
from wheelgate.core.records import State
from wheelgate.core.settings import (
    ENV_ALLOWED_INDEXES,
    ENV_NIGHTLY_BASE_URL,
    ENV_STAGING_BASE_URL,
    SettingsError,
    run_stage_window_from_env,
)
from wheelgate.storage.bucket import AccessError, Bucket

if TYPE_CHECKING:
    pass


class Progress:
    """Upload progress on stderr: a bar on a terminal, a line per 10 % in CI logs."""

    def __init__(self) -> None:
        self._tty = sys.stderr.isatty()
        self._last: dict[str, float] = {}

    def __call__(self, name: str, done: int, total: int) -> None:
        fraction = done / total if total else 1.0
        if self._tty:
            width = 30
            bar = "#" * int(width * fraction)
            sys.stderr.write(
                f"\r{name[:50]:50} [{bar:{width}}] {fraction:6.1%} "
                f"{done / 1e6:,.1f}/{total / 1e6:,.1f} MB"
            )
            if done >= total:
                sys.stderr.write("\n")
            sys.stderr.flush()
            return
        step = int(fraction * 10)
        if step > self._last.get(name, -1):
            self._last[name] = step
            print(f"upload {name}: {fraction:.0%} of {total:,} bytes", file=sys.stderr)


# -- commands -----------------------------------------------------------------------------


def cmd_stage(args: argparse.Namespace) -> int:
    from wheelgate.staging.stage import StageError, inspect_files, stage

    checked("--run-id", args.run_id, check_run_id)
    index_option(args)
    commit = commit_option(args)
    nightly_base_url = nightly_url(args)
    try:
        artifacts = inspect_files([Path(p) for p in args.files])
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


def _staged_sets(staging: Bucket, run_id: str) -> dict[str, list[ManifestFile]]:
    from wheelgate.staging.stage import StageError, staged_sets

    try:
        return staged_sets(staging, run_id)
    except StageError as exc:
        raise UsageError(str(exc)) from exc


def cmd_report(args: argparse.Namespace) -> int:
    from wheelgate.staging.environment import StagedWheelMatcher
    from wheelgate.staging.installs import read_evidence, with_installs
    from wheelgate.staging.stage import build_manifest, parse_test_specs

    checked("--run-id", args.run_id, check_run_id)
    commit = commit_option(args)
    specs = checked("--test", args.test, parse_test_specs)
    for spec in specs:
        if spec.url is not None:
            test_url_option("--test", spec.url)
    evidence = checked("--installed", args.installed, lambda given: read_evidence(specs, given))
    staging, _ = buckets(args, nightly=False)
    staged = _staged_sets(staging, args.run_id)
    if not staged:
        raise UsageError(f"nothing is staged for run {args.run_id} in s3://{staging.name}/")
    configured_indexes(staged, f"run {args.run_id} has files staged in")
    matcher = StagedWheelMatcher(staging, args.run_id, staged)
    tests = checked("--installed", evidence, lambda e: with_installs(specs, e, matcher.installs))
    for warning in matcher.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    try:
        manifest = build_manifest(run_id=args.run_id, commit=commit, staged=staged, tests=tests)
    except ValueError as exc:
        raise UsageError(f"cannot build the manifest: {exc}") from exc
    for warning in _rejections_foreseen(manifest):
        print(f"warning: {warning}; the promoter will reject this run", file=sys.stderr)
    body = manifest.to_json()
    key = STAGING.manifest(args.run_id)
    if args.dry_run:
        print(body, end="")
        return EXIT_OK
    staging.put(key, body.encode(), content_type="application/json")
    print(json.dumps({"manifest": f"s3://{staging.name}/{key}", "sets": len(manifest.sets)}))
    return EXIT_OK


def _rejections_foreseen(manifest: ManifestV2) -> list[str]:
    """Why the promoter will reject sets whose tests all passed: no test results, or files
    no passed test installed (``core/evidence.py``)."""
    from wheelgate.core.evidence import check_evidence
    from wheelgate.core.manifest import Outcome

    foreseen = []
    for artifact_set in manifest.sets:
        if not artifact_set.tests:
            foreseen.append(f"no test results for {artifact_set.index}")
        elif all(t.result is Outcome.PASSED for t in artifact_set.tests):
            try:
                check_evidence(artifact_set)
            except PromotionRejected as rejection:
                foreseen.append(rejection.message)
    return foreseen


def cmd_pins(args: argparse.Namespace) -> int:
    from wheelgate.staging.pins import (
        pin_for_target,
        select_projects,
        staged_projects,
        target_from_options,
    )

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
    staging, _ = buckets(args, nightly=False)
    files = _staged_sets(staging, args.run_id).get(args.index)
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
        text = pin_for_target(index_url, projects, target)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    header = (
        f"# Run {args.run_id}, {args.index}, for {target.describe()}: {', '.join(projects)} "
        "and what they need there, one file each, by SHA-256.\n"
        f"# pip install --require-hashes --index-url {index_url} -r THIS_FILE\n"
    )
    print(header + text, end="")
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    checked("RUN_ID", args.run_id, check_run_id)
    staging, _ = buckets(args, nightly=False)
    return _wait_for_record(staging, args.run_id, args.wait, args.interval)


def _wait_for_record(staging: Bucket, run_id: str, wait: float, interval: float) -> int:
    document = wait_for_decision(staging, run_id, wait, interval)
    print(json.dumps(document, indent=2))
    return {
        State.PROMOTED.value: EXIT_OK,
        State.REJECTED.value: EXIT_REJECTED,
    }.get(document["state"], EXIT_PENDING)


def _send_request(args: argparse.Namespace, run_id: str, body: str, what: str) -> int:
    """Write a request where manifests go (the promoter's inbox) and wait for its record."""
    staging, _ = buckets(args, nightly=False)
    staging.put(STAGING.manifest(run_id), body.encode(), content_type="application/json")
    print(f"{what} {run_id} written; waiting for the promoter", file=sys.stderr)
    return _wait_for_record(staging, run_id, args.wait, 1.0)


def cmd_yank(args: argparse.Namespace) -> int:
    from wheelgate.index.yank import SCHEMA_YANK_V1, YankRequest, new_request_id

    yanked = args.command == "yank"
    if yanked and not args.reason.strip():
        raise UsageError("--reason is required: users see it when pip skips the file")
    index_option(args)
    checked("FILE", args.filename, parse_distribution_filename)
    request = validated(
        YankRequest,
        {
            "schema": SCHEMA_YANK_V1,
            "run_id": new_request_id(),
            "index": args.index,
            "filename": args.filename,
            "yanked": yanked,
            "reason": args.reason if yanked else "",
        },
        {"index": "--index", "filename": "FILE", "reason": "--reason"},
    )
    return _send_request(args, request.run_id, request.to_json(), "request")


def cmd_promote(args: argparse.Namespace) -> int:
    from wheelgate.core.override import (
        SCHEMA_OVERRIDE_V1,
        OverrideRequest,
        check_override_target,
        new_request_id,
    )

    if not args.override:
        raise UsageError(
            "a run is promoted when its manifest is written (wheelgate report); "
            "promote only exists as a break-glass --override of a rejected run"
        )
    if len(args.reason.strip()) < 10:
        raise UsageError("--reason must say why (at least 10 characters): it goes in the record")
    checked("--run-id", args.run_id, check_override_target)
    request = validated(
        OverrideRequest,
        {
            "schema": SCHEMA_OVERRIDE_V1,
            "run_id": new_request_id(args.run_id),
            "target_run_id": args.run_id,
            "reason": args.reason.strip(),
        },
        {"target_run_id": "--run-id", "reason": "--reason"},
    )
    return _send_request(args, request.run_id, request.to_json(), "override request")


def cmd_index_rebuild(args: argparse.Namespace) -> int:
    from wheelgate.core.settings import listing_retention_from_env, page_retention_from_env
    from wheelgate.index.rebuild import rebuild, scan_nightly

    index_option(args)
    _, nightly = buckets(args, nightly=True)
    assert nightly is not None
    try:
        rule = listing_retention_from_env(os.environ).rule_for(args.index)
        changes, writes = rebuild(
            target=nightly,
            index=args.index,
            scanned=scan_nightly(nightly, args.index),
            dry_run=args.dry_run,
            rule=rule,
            now=datetime.now(UTC),
            retention=page_retention_from_env(os.environ),
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    print(
        json.dumps(
            {
                "index": args.index,
                "bucket": "nightly",
                "dry_run": args.dry_run,
                "listing_retention": rule.to_value(),
                "projects": [c.__dict__ for c in changes if c.any],
                "unchanged_projects": sum(1 for c in changes if not c.any),
                "pages_written": writes.keys,
            },
            indent=2,
        )
    )
    return EXIT_OK


def cmd_local(args: argparse.Namespace) -> int:
    from wheelgate.local.extra import LocalExtraMissing, require_local_extra
    from wheelgate.local.stack import LocalStack

    try:
        require_local_extra()
    except LocalExtraMissing as exc:
        raise UsageError(str(exc)) from exc

    required: dict[str, list[str]] = {}
    for spec in args.require_test:
        index, sep, name = spec.partition("=")
        if not sep or not name:
            raise UsageError(f"--require-test {spec!r} is not DIR=NAME")
        required.setdefault(index, []).append(name)
    if args.fanout_min_files is not None and args.fanout_min_files < 0:
        raise UsageError(f"--fanout-min-files must be 0 or more, not {args.fanout_min_files}")
    stack = LocalStack(
        s3_port=args.s3_port,
        staging_port=args.staging_port,
        nightly_port=args.nightly_port,
        required_tests=required,
        allowed_indexes=checked("--index", args.index, check_index_dirs),
        verbose=args.verbose,
        run_loop=not args.no_promoter,
        fanout_min_files=args.fanout_min_files,
    ).start()
    sys.stdout.write(stack.ready_line() + "\n")
    sys.stdout.flush()
    # Exactly one line on stdout: everything after it (handler logs, metrics) goes to stderr.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    with contextlib.suppress(KeyboardInterrupt):
        stopped.wait()
    stack.stop()
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    print(json.dumps(json_schema(), indent=2))
    return EXIT_OK


# -- parser -------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wheelgate",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog=(__doc__ or "").split("\n\n", 1)[-1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"wheelgate {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="log debug output, boto3's included (secrets masked)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    stage = sub.add_parser(
        "stage",
        help="upload a run's files to staging and write the run's own index",
        description=(
            "Upload wheels/sdists to runs/<run_id>/<index>/ with SHA-256 checksums, never "
            "replacing a staged object, write each wheel's PEP 658 .metadata, and write the "
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
    stage.add_argument("files", nargs="+", metavar="FILE")
    storage_options(stage, nightly=True)
    stage.set_defaults(func=cmd_stage)

    report = sub.add_parser(
        "report",
        help="write the run's test-result manifest (triggers promotion)",
        description=(
            "Build manifests/<run_id>.json from what is staged for the run plus the test "
            "results given with --test and what each test installed (--installed), and write "
            "it. Writing it triggers the promoter."
        ),
    )
    report.add_argument("--run-id", required=True)
    report.add_argument("--commit", required=True, help="40-hex commit of the run")
    report.add_argument(
        "--test",
        action="append",
        default=[],
        metavar="DIR:NAME=RESULT[@URL]",
        help="a test outcome: passed, failed or skipped (repeat for each test)",
    )
    report.add_argument(
        "--installed",
        action="append",
        default=[],
        metavar="DIR:NAME=PATH",
        help="what test NAME of DIR installed: pip's installation report "
        "(pip install --report PATH), the requirements it installed with --require-hashes "
        "(exactly one hash each: wheelgate pins), or its environment (wheelgate installed, "
        "any installer) (repeatable). The promoter releases only files a passed test installed",
    )
    report.add_argument("--dry-run", action="store_true", help="print the manifest, write nothing")
    storage_options(report, nightly=False)
    report.set_defaults(func=cmd_report)

    pins = sub.add_parser(
        "pins",
        help="print requirements pinning, for one target, one file of each distribution a run "
        "needs",
        description=(
            "Resolve the projects staged for RUN in DIR (or those given with --project) "
            "against the run's index with pip (a dry run: python -m pip of this environment, "
            "which should be a current pip), for this environment or the target given, "
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
    storage_options(pins, nightly=False)
    pins.set_defaults(func=cmd_pins)

    status = sub.add_parser(
        "status",
        help="print a run's promotion record as JSON",
        description="Exit 0 promoted, 1 rejected, 3 still pending.",
    )
    status.add_argument("run_id", metavar="RUN_ID")
    status.add_argument("--wait", type=float, default=0.0, metavar="SECONDS")
    status.add_argument("--interval", type=float, default=2.0, help=argparse.SUPPRESS)
    storage_options(status, nightly=False)
    status.set_defaults(func=cmd_status)

    local = sub.add_parser(
        "local",
        help="run the whole stack locally (embedded S3, promoter loop, index servers)",
        description=(
            "Start an embedded S3/SQS on 127.0.0.1 laid out like the deployed stack, a loop "
            "feeding manifest events to the promoter handler, and HTTP servers for the staging "
            "and nightly indexes. Prints one JSON line with the environment to use, then runs "
            "until interrupted."
        ),
    )
    local.add_argument("--s3-port", type=int, default=0, help="default: any free port")
    local.add_argument("--staging-port", type=int, default=0)
    local.add_argument("--nightly-port", type=int, default=0)
    local.add_argument(
        "--require-test",
        action="append",
        default=[],
        metavar="DIR=NAME",
        help="a test that must pass for sets of DIR",
    )
    local.add_argument(
        "--index",
        action="append",
        default=[],
        metavar="DIR",
        help=f"an index directory that may be staged and promoted to, as index_dirs in "
        f"cdk.json (repeatable; printed in the environment as {ENV_ALLOWED_INDEXES}); "
        "none: any directory",
    )
    local.add_argument(
        "--fanout-min-files",
        type=int,
        default=None,
        metavar="N",
        help="promote runs with N or more files to copy through fan-out executions, run in "
        "this process like the state machine (default: off, every run in one invocation)",
    )
    local.add_argument("--verbose", action="store_true", help="log every HTTP request")
    local.add_argument(
        "--no-promoter",
        action="store_true",
        help="do not consume the manifest queue (benchmarks run the promoter themselves)",
    )
    local.set_defaults(func=cmd_local)

    for name, what in (
        ("yank", "mark a released file as yanked (PEP 592); nothing is deleted"),
        ("unyank", "clear the yanked mark of a released file"),
    ):
        yank = sub.add_parser(
            name,
            help=what,
            description=(
                f"Ask the promoter to {what}, on the nightly and staging pages (HTML and JSON). "
                "The request is written where manifests go, so run it with the reporter role. "
                "Exit 0 done, 1 refused, 3 pending."
            ),
        )
        yank.add_argument("--index", required=True, metavar="DIR")
        yank.add_argument("filename", metavar="FILE", help="the released file name")
        yank.add_argument("--reason", default="", required=name == "yank")
        yank.add_argument("--wait", type=float, default=120.0, metavar="SECONDS")
        storage_options(yank, nightly=False)
        yank.set_defaults(func=cmd_yank)

    promote = sub.add_parser(
        "promote",
        help="break-glass: promote a rejected run despite its tests (--override)",
        description=(
            "Ask the promoter to promote RUN although its tests did not pass. Only the "
            "break-glass role may do this (run it with that role's credentials); every integrity "
            "check (completeness, sizes, SHA-256, commit, conflicts) still applies, and the run's "
            "record names who overrode it and why. Exit 0 promoted, 1 refused, 3 pending."
        ),
    )
    promote.add_argument("--run-id", required=True)
    promote.add_argument("--override", action="store_true", help="required: say you mean it")
    promote.add_argument("--reason", required=True, help="why; recorded with your identity")
    promote.add_argument("--wait", type=float, default=300.0, metavar="SECONDS")
    storage_options(promote, nightly=False)
    promote.set_defaults(func=cmd_promote)

    index = sub.add_parser("index", help="index maintenance")
    index_sub = index.add_subparsers(dest="index_command", required=True, metavar="ACTION")
    rebuild = index_sub.add_parser(
        "rebuild",
        help="rewrite an index directory's pages from the files in the bucket",
        description=(
            "Repair: scan nightly's files of DIR (<DIR>/<file>) and rewrite every archive page "
            "(<DIR>/_archive/: every file), then every project page and the root pages, listing "
            "what DIR's listing retention (WHEELGATE_LISTING_RETENTION, as the promoter reads "
            "it) keeps. Yank state and upload times of unchanged files are kept. "
            "--dry-run prints what would change (delisted: files the rule takes off the "
            "listing) and writes nothing. Writing nightly pages needs the promoter's (or the "
            "break-glass) permissions; with $WHEELGATE_NIGHTLY_RETENTION_MODE and "
            "$WHEELGATE_NIGHTLY_PAGE_RETENTION_DAYS set (the stack's outputs), pages get the "
            "promoter's short lock. A run's staging index is "
            "refreshed by running wheelgate stage again with the same files."
        ),
    )
    rebuild.add_argument("--index", required=True, metavar="DIR")
    rebuild.add_argument("--dry-run", action="store_true")
    storage_options(rebuild, nightly=True)
    rebuild.set_defaults(func=cmd_index_rebuild)

    from wheelgate.cli.deps import register as register_deps
    from wheelgate.cli.installed import register as register_installed

    register_deps(sub)
    register_installed(sub)
    schema = sub.add_parser("schema", help="print the manifest JSON Schema")
    schema.set_defaults(func=cmd_schema)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``wheelgate`` command; returns its exit code."""
    try:
        try:
            return _run(argv)
        finally:
            # A reader that went away shows here rather than at interpreter exit.
            sys.stdout.flush()
    except BrokenPipeError:
        # The Python docs' "Note on SIGPIPE": send what is left to devnull so the flush at
        # exit is quiet too, and end as a program that SIGPIPE ended would.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _run(argv: Sequence[str] | None) -> int:
    redact.install()
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.debug:
        logging.basicConfig(level=logging.DEBUG)
    try:
        return int(args.func(args))
    except UsageError as exc:
        print(f"wheelgate {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (AccessError, TransientError) as exc:
        print(
            f"wheelgate {args.command}: storage error: {exc}\n"
            "check the bucket names, the endpoint and your credentials",
            file=sys.stderr,
        )
        return EXIT_STORAGE
