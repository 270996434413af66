"""``wheelgate report``: write the run's test-result manifest, which triggers promotion.

The manifest also states, as the reporter's word, when the run's commit was made and the CI
run's attempt: the run history takes them over what a build job's stage entry said."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from typing import Any

from wheelgate.cli.common import (
    ENV_GITHUB_RUN_ATTEMPT,
    EXIT_OK,
    UsageError,
    buckets,
    checked,
    commit_option,
    configured_indexes,
    staged_sets,
    storage_options,
    test_url_option,
)
from wheelgate.core.errors import PromotionRejected
from wheelgate.core.layout import STAGING, check_ci_run_id
from wheelgate.core.manifest import ManifestV2


def cmd_report(args: argparse.Namespace) -> int:
    from wheelgate.cli.stage import attempt_option, commit_time_option
    from wheelgate.staging.evidence import EvidenceJudge
    from wheelgate.staging.evidence_of_tests import read_evidence, with_installs
    from wheelgate.staging.manifest_building import build_manifest, parse_test_specs

    checked("--run-id", args.run_id, check_ci_run_id)
    commit = commit_option(args)
    commit_time = commit_time_option(args.commit_time, commit)
    attempt = attempt_option(args.attempt)
    specs = checked("--test", args.test, parse_test_specs)
    for spec in specs:
        if spec.url is not None:
            test_url_option("--test", spec.url)
    evidence = checked("--installed", args.installed, lambda given: read_evidence(specs, given))
    staging, nightly = buckets(args, nightly=True)
    assert nightly is not None
    staged = staged_sets(staging, args.run_id)
    if not staged:
        raise UsageError(f"nothing is staged for run {args.run_id} in s3://{staging.name}/")
    configured_indexes(staged, f"run {args.run_id} has files staged in")
    judge = EvidenceJudge(staging, nightly, args.run_id, staged)
    tests, warnings = checked("--installed", evidence, lambda e: with_installs(specs, e, judge))
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for test in tests:
        for refusal in test.refused:
            print(
                f"refused: test {test.name!r} of {test.index}: {refusal.reason}: {refusal.message}",
                file=sys.stderr,
            )
    try:
        manifest = build_manifest(
            run_id=args.run_id,
            commit=commit,
            staged=staged,
            tests=tests,
            commit_time=commit_time,
            attempt=attempt,
        )
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
    written = {
        "manifest": f"s3://{staging.name}/{key}",
        # What `wheelgate status --manifest-sha256` waits for: the decision about these bytes.
        "manifest_sha256": hashlib.sha256(body.encode()).hexdigest(),
        "sets": len(manifest.sets),
    }
    print(json.dumps(written))
    return EXIT_OK


def _rejections_foreseen(manifest: ManifestV2) -> list[str]:
    """Why the promoter will reject sets whose tests all passed: no test results, refused
    evidence, or files no passed test installed (``core/evidence.py``)."""
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


def register(subparsers: Any) -> None:
    """Add ``report`` to the ``wheelgate`` command."""
    report = subparsers.add_parser(
        "report",
        help="write the run's test-result manifest (triggers promotion)",
        description=(
            "Build manifests/<run_id>.json from what is staged for the run plus the test "
            "results given with --test and what each test installed (--installed), and write "
            "it. Writing it triggers the promoter. Prints the manifest's key and its SHA-256 "
            "(manifest_sha256), which wheelgate status --manifest-sha256 waits for."
        ),
    )
    report.add_argument("--run-id", required=True)
    report.add_argument("--commit", help="40-hex commit of the run (default: $GITHUB_SHA)")
    report.add_argument(
        "--commit-time",
        metavar="ISO",
        help="when the commit was made, ISO 8601 with an offset: the run history orders runs "
        "by it (default: git show -s --format=%%cI COMMIT, when the current directory is a git "
        "checkout holding it; else not stated)",
    )
    report.add_argument(
        "--attempt",
        metavar="N",
        help=f"the CI run's attempt, for the run history (default: ${ENV_GITHUB_RUN_ATTEMPT}; "
        "else not stated)",
    )
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
    storage_options(report, nightly=True)
    report.set_defaults(func=cmd_report)
