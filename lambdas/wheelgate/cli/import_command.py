"""``wheelgate import``: bring released wheels of an existing bucket into a nightly directory.

The command writes an import request where manifests go and follows the promoter's record (a
progress bar on a terminal while the promoter gathers the files); the promoter, still
nightly's only writer, carries it out. ``--dry-run`` writes nothing: it reads the source, its
index pages and nightly's pages with the caller's credentials and prints what the import would
bring in and what it would refuse, and why.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from datetime import UTC, date, datetime
from typing import Any

from pydantic import ValidationError

from wheelgate.cli.common import (
    EXIT_OK,
    Progress,
    UsageError,
    buckets,
    checked,
    index_option,
    storage_options,
)
from wheelgate.cli.run_status import for_people, wait_for_record
from wheelgate.core.env_names import (
    ENV_ALLOW_BUILD_TAG_RERELEASES,
    ENV_ALLOW_NEW_LOCAL_LABELS,
    ENV_IMPORT_SOURCES,
)
from wheelgate.core.errors import Reason
from wheelgate.core.import_rules import ImportRequest, new_import_request, source_allowed
from wheelgate.core.import_sources import parse_source_uri
from wheelgate.core.layout import STAGING
from wheelgate.core.manifest import describe_errors
from wheelgate.core.setting_values import NewLocalLabels, SettingsError
from wheelgate.core.settings import import_sources_from_env


def since_option(value: str | None) -> datetime | None:
    """``--since``: a date (``2025-01-31``, midnight UTC) or an ISO 8601 time (UTC unless it
    says otherwise); ``ValueError`` for anything else."""
    if value is None:
        return None
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            return datetime(day.year, day.month, day.day, tzinfo=UTC)
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{value!r} is not a date (2025-01-31) or an ISO 8601 time (2025-01-31T12:00:00Z)"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _request(args: argparse.Namespace) -> ImportRequest:
    """The request the options describe, checked as the promoter will check it: a source URI,
    under ``WHEELGATE_IMPORT_SOURCES`` when set (the stack's ``ImportSources``), a configured
    directory."""
    source = checked("--from", args.source, parse_source_uri)
    index = index_option(args)
    since = checked("--since", args.since, since_option)
    try:
        allowed = import_sources_from_env(os.environ)
    except SettingsError as exc:
        raise UsageError(str(exc)) from exc
    if _sources_known():
        refusal = source_allowed(source, allowed, ())
        if refusal is not None:
            raise UsageError(f"{Reason.IMPORT_SOURCE_NOT_ALLOWED.value}: {refusal.message}")
    try:
        return new_import_request(source.uri, index, since, now=datetime.now(UTC))
    except ValidationError as exc:
        raise UsageError(describe_errors(exc, names={"source": "--from"})) from exc


def cmd_import(args: argparse.Namespace) -> int:
    request = _request(args)
    if args.dry_run:
        return _dry_run(args, request)
    from wheelgate.cli.local import break_glass_buckets

    staging, _ = break_glass_buckets(args, nightly=False)
    body = request.to_json().encode()
    staging.put(STAGING.manifest(request.run_id), body, content_type="application/json")
    print(
        f"import request {request.run_id} written; the promoter gathers {request.source}",
        file=sys.stderr,
    )
    bar = Progress(unit="files", verb="gather")

    def show(document: dict[str, Any]) -> None:
        progress = document.get("progress")
        if progress:
            bar(request.run_id, int(progress["done"]), int(progress["total"]))

    # This request's decision: the same import asked for before was decided already.
    sha256 = hashlib.sha256(body).hexdigest()
    return wait_for_record(
        staging,
        request.run_id,
        args.wait,
        2.0,
        manifest_sha256=sha256,
        pending=show,
        people=for_people(args),
        request=True,
    )


def _new_labels_allowed(index: str) -> bool:
    """As the promoter judges new local labels in ``index`` (the deployment's
    allow_new_local_labels, ``WHEELGATE_ALLOW_NEW_LOCAL_LABELS``; unset: refused)."""
    raw = os.environ.get(ENV_ALLOW_NEW_LOCAL_LABELS, "").strip()
    try:
        value = json.loads(raw) if raw else None
        return NewLocalLabels.from_value(value, name=ENV_ALLOW_NEW_LOCAL_LABELS).allowed_in(index)
    except (ValueError, SettingsError) as exc:
        raise UsageError(f"{ENV_ALLOW_NEW_LOCAL_LABELS}={raw!r}: {exc}") from exc


def _dry_run(args: argparse.Namespace, request: ImportRequest) -> int:
    from wheelgate.index.store import IndexStore
    from wheelgate.promotion.importing.preview import preview

    _, nightly = buckets(args, nightly=True)
    assert nightly is not None
    bar = Progress(unit="files", verb="read")
    found = preview(
        request,
        source=nightly.sibling(request.source_location.bucket),
        nightly_pages=IndexStore(nightly),
        # As the promoter judges build tags (the deployment's allow_build_tag_rereleases).
        allow_build_tag_rereleases=(
            os.environ.get(ENV_ALLOW_BUILD_TAG_RERELEASES, "").strip().lower() == "true"
        ),
        progress=lambda done, total: bar(request.source, done, total),
        allow_new_local_labels=_new_labels_allowed(request.index),
    )
    new = [c for c in found.accepted if c.filename not in found.already]
    promoter_checks = left_to_the_promoter(sources_checked=_sources_known())
    print(
        json.dumps(
            {
                "run_id": request.run_id,
                "source": request.source,
                "index": request.index,
                "since": request.since.isoformat() if request.since else None,
                "dry_run": True,
                "candidates": found.candidates,
                "skipped_before_since": found.skipped,
                "would_import": [
                    {
                        "filename": c.filename,
                        "size": c.size,
                        "source": c.source,
                        "sha256_from_source_index": c.sha256,
                        "yanked": c.facts.yanked,
                    }
                    for c in new
                ],
                "already_released": sorted(found.already),
                "refused": [r.model_dump(mode="json") for r in found.refused],
                "left_to_the_promoter": promoter_checks,
            },
            indent=2,
        )
    )
    print(
        f"would import {len(new)} file(s) from {request.source} into {request.index}; "
        f"{len(found.already)} already released, {len(found.refused)} refused, "
        f"{found.skipped} older than --since; nothing was written",
        file=sys.stderr,
    )
    print("only the promoter checks, when asked:", file=sys.stderr)
    for check in promoter_checks:
        print(f"  - {check}", file=sys.stderr)
    return EXIT_OK


def _sources_known() -> bool:
    """Whether this environment says where the deployment may import from
    (``WHEELGATE_IMPORT_SOURCES``, the stack's ``ImportSources`` output; ``[]``: nowhere)."""
    return bool(os.environ.get(ENV_IMPORT_SOURCES, "").strip())


def left_to_the_promoter(*, sources_checked: bool) -> list[str]:
    """What a dry run cannot check and the promoter does: the source against the
    deployment's ``import_sources`` when ``WHEELGATE_IMPORT_SOURCES`` is not set here (a
    dry run with it set refuses a source outside it, as the promoter would), who asks, and
    the bytes themselves."""
    checks = [
        "that the request is written by the break-glass role (any other writer's request is "
        "ignored: untrusted-writer)",
        "each file's SHA-256 as S3 computes it on the copy, against the source index's",
    ]
    if not sources_checked:
        checks.insert(
            0,
            f"that the source is under the deployment's import_sources: {ENV_IMPORT_SOURCES} "
            "is not set here, so it was not checked (set it to the stack's ImportSources "
            "output); a source outside them is refused (import-source-not-allowed)",
        )
    return checks


def register(subparsers: Any) -> None:
    """Add ``import`` to the ``wheelgate`` command."""
    parser = subparsers.add_parser(
        "import",
        help="break-glass: bring the wheels of an existing bucket into a nightly directory",
        description=(
            "Ask the promoter to import the wheels and sdists directly under --from (an "
            "s3://bucket/prefix/ under the stack's import_sources) into nightly directory "
            "--index. Only the break-glass role may (run it with that role's credentials). The "
            "promoter copies each file server-side (S3 computes its SHA-256), refuses what a "
            "promotion would refuse (a wheel that is not what its name says, a release already "
            "in nightly with other bytes, two spellings of one release), keeps the yank states "
            "and upload times the source's index gives, and records each file as imported "
            "from its source, with no test evidence. Asking again resumes where an import "
            "stopped. Prints the outcome as wheelgate status does (a summary on a terminal, "
            "else JSON). Exit 0 imported, 1 refused or ignored (asked by a role that may not ask "
            "it: final, at once), 3 pending. --dry-run writes nothing: it prints what would be "
            "imported and what refused, and why (JSON), checking the source against "
            f"${ENV_IMPORT_SOURCES} when set (exit 2 outside it), and lists what only the "
            "promoter checks (left_to_the_promoter)."
        ),
    )
    parser.add_argument(
        "--from",
        dest="source",
        required=True,
        metavar="S3_URI",
        help="s3://bucket/prefix/ (no '.', '..' or empty segment: exit 2 naming it)",
    )
    parser.add_argument("--index", required=True, metavar="DIR", help="nightly index directory")
    parser.add_argument(
        "--since",
        metavar="DATE",
        help="only objects written at or after DATE (2025-01-31, or an ISO 8601 time; UTC)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print what would happen")
    parser.add_argument("--wait", type=float, default=3600.0, metavar="SECONDS")
    parser.add_argument(
        "--json", action="store_true", help="print the record as JSON, also on a terminal"
    )
    storage_options(parser, nightly=True)
    parser.set_defaults(func=cmd_import)
