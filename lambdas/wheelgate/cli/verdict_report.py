"""What ``verify`` prints of a verdict, and how it picks the one that verifies among the
candidates it found (a file's under each directory, or each matched wheel's for
``--installed``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from typing import Any

from wheelgate.cli.common import EXIT_OK, EXIT_REJECTED, UsageError, checked
from wheelgate.core.env_names import ENV_ALLOWED_INDEXES
from wheelgate.core.layout import (
    check_index,
)
from wheelgate.core.setting_values import SettingsError
from wheelgate.core.settings import allowed_indexes_from_env
from wheelgate.core.signatures import (
    VerdictRejected,
    VerifiedVerdict,
    check_verdict,
)
from wheelgate.core.verdicts import (
    PublishedKey,
    VerdictFormatError,
)


def directories(args: argparse.Namespace, what: str) -> list[str]:
    """The gate's directories ``what`` may be in: ``--index DIR``, else every configured one
    (``$WHEELGATE_ALLOWED_INDEXES``): a file's name does not say which directory released it.
    Raises UsageError when neither names any."""
    if args.index:
        return [checked("--index", args.index, check_index)]
    try:
        configured = sorted(allowed_indexes_from_env(os.environ))
    except SettingsError as exc:
        raise UsageError(str(exc)) from exc
    if not configured:
        raise UsageError(
            f"which directory of the gate released {what}? give --index DIR (or set "
            f"{ENV_ALLOWED_INDEXES} to the gate's directories, each of which is then tried)"
        )
    return configured


#: How to name what ``verify`` trusts, for a command given neither.
def verdict_report(verified: VerifiedVerdict) -> dict[str, Any]:
    facts = verified.facts
    report: dict[str, Any] = {
        "verified": True,
        "file": verified.filename,
        "sha256": verified.sha256,
        "gate": verified.gate,
        "keyid": verified.keyid,
        "time_verified": verified.time_verified,
        "resource_uri": verified.resource_uri,
        "kind": facts.get("kind"),
        "run_id": facts.get("runId"),
        "commit": facts.get("commit"),
        "index": facts.get("index"),
        "tests": facts.get("tests", []),
    }
    for extra in ("reason", "actor", "source"):
        if extra in facts:
            report[extra] = facts[extra]
    return report


def print_human(report: dict[str, Any]) -> None:
    tests = report["tests"]
    installed = report.get("installed")
    lines = (
        [
            f"installed: {installed['name']} {installed['version']} ({installed['python']}) is "
            f"{installed['matched']}, its members verified against its bytes"
        ]
        if installed
        else []
    )
    lines += [
        f"verified: {report['file']} (sha256 {report['sha256']})",
        f"  gate:    {report['gate']} (key {report['keyid']})",
        f"  when:    {report['time_verified']}",
        f"  run:     {report['run_id']}"
        + (f" at commit {report['commit']}" if report["commit"] else "")
        + f", into {report['index']}",
    ]
    if tests:
        lines.append(
            "  tests:   "
            + ", ".join(
                f"{t.get('name')}" + (f" ({t['url']})" if t.get("url") else "") for t in tests
            )
        )
    else:
        lines.append("  tests:   none (released without tests)")
    if "reason" in report:
        lines.append(f"  {report['kind']} by {report.get('actor')}: {report['reason']}")
    if "source" in report:
        lines.append(f"  from:    {report['source']}")
    print("\n".join(lines))


@dataclass(frozen=True)
class Candidate:
    """A verdict that may be the one of file ``filename`` with bytes ``sha256``: its bytes
    (``None``: there is none) and where they were looked for; ``installed`` says which
    installed distribution the file is, for ``--installed``."""

    filename: str
    sha256: str
    statement: bytes | None
    looked_at: str
    installed: dict[str, Any] | None = None


def check_candidates(
    args: argparse.Namespace,
    subject: str,
    candidates: list[Candidate],
    keys: list[PublishedKey],
    gate: str | None,
) -> int:
    """Print the first of ``candidates`` that verifies (exit 0), else why none does, about
    ``subject`` (exit 1)."""
    problems = []
    for candidate in candidates:
        looked_at = candidate.looked_at
        if candidate.statement is None:
            problems.append({"code": "no-verdict", "message": f"no verdict at {looked_at}"})
            continue
        try:
            verified = check_verdict(
                candidate.statement,
                keys=keys,
                filename=candidate.filename,
                sha256=candidate.sha256,
                gate=gate,
            )
        except VerdictRejected as exc:
            problems.append({"code": exc.code, "message": f"{looked_at}: {exc.message}"})
            continue
        except VerdictFormatError as exc:
            problems.append({"code": "not-a-verdict", "message": f"{looked_at}: {exc}"})
            continue
        installed = {"installed": candidate.installed} if candidate.installed else {}
        report = verdict_report(verified) | installed
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            print_human(report)
        return EXIT_OK
    # A verdict that does not verify says more than a directory that has none.
    problem = next((p for p in problems if p["code"] != "no-verdict"), None)
    if problem is None:
        where = "; ".join(p["message"].removeprefix("no verdict at ") for p in problems)
        problem = {"code": "no-verdict", "message": f"no verdict for {subject} at {where}"}
    return refused(args, subject, problem)


def refused(args: argparse.Namespace, filename: str, problem: dict[str, str]) -> int:
    if args.json:
        print(json.dumps({"verified": False, "file": filename, **problem}, indent=2))
    print(f"wheelgate verify: NOT verified: {filename}: {problem['message']}", file=sys.stderr)
    return EXIT_REJECTED
