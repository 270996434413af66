"""What every `wheelgate` command shares: exit codes, usage errors, checked option values, S3
clients and buckets from options or the environment, storage options, what is staged for a run,
and waiting for a run's decision."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from wheelgate.core.errors import Reason
from wheelgate.core.layout import STAGING, base_url, check_index, key_url
from wheelgate.core.manifest import (
    ManifestFile,
    check_commit,
    check_test_url,
    check_test_url_host,
    describe_errors,
)
from wheelgate.core.records import PromotionRecord, State
from wheelgate.core.settings import (
    ENV_ALLOWED_INDEXES,
    ENV_NIGHTLY_BASE_URL,
    ENV_NIGHTLY_BUCKET,
    ENV_STAGING_BASE_URL,
    ENV_STAGING_BUCKET,
    SettingsError,
    allowed_indexes_from_env,
    test_url_hosts_from_env,
)
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.errors import AccessError, translated

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

EXIT_OK, EXIT_REJECTED, EXIT_USAGE, EXIT_PENDING, EXIT_STORAGE = 0, 1, 2, 3, 4
#: ``status`` of a run id under which nothing is staged, reported or decided (a typo, another
#: deployment's run): told apart from a run that is pending (3).
EXIT_UNKNOWN_RUN = 5
#: The reader of the output went away (``wheelgate status R | head``): 128 + SIGPIPE, what a
#: shell reports for a program that SIGPIPE ended.
EXIT_BROKEN_PIPE = 141
#: The commit GitHub Actions runs for; ``--commit`` defaults to it.
ENV_GITHUB_SHA = "GITHUB_SHA"
#: botocore's own variable for the attempts per request, which ``--storage-attempts`` defaults
#: to (the client's explicit configuration would otherwise override it).
ENV_MAX_ATTEMPTS = "AWS_MAX_ATTEMPTS"
#: Attempts per storage request, the first included: adaptive retries (8) absorb S3's 503
#: SlowDown.
DEFAULT_STORAGE_ATTEMPTS = 9
#: Seconds a storage connect or read may take (botocore's default for both).
DEFAULT_STORAGE_TIMEOUT = 60.0

T = TypeVar("T")
V = TypeVar("V")
M = TypeVar("M", bound=BaseModel)


class UsageError(Exception):
    """Bad options or input: exit 2 with the message."""


class Progress:
    """Progress on stderr: a bar on a terminal, a line per 10 % in CI logs (``<verb> <name>:
    40% of <total> <unit>``). ``unit`` is what is counted: ``bytes`` (the bar shows MB) or a
    plural noun such as ``files``."""

    def __init__(self, unit: str = "bytes", verb: str = "upload") -> None:
        self._tty = sys.stderr.isatty()
        self._last: dict[str, float] = {}
        self._unit = unit
        self._verb = verb

    def _amount(self, done: int, total: int) -> str:
        if self._unit == "bytes":
            return f"{done / 1e6:,.1f}/{total / 1e6:,.1f} MB"
        return f"{done:,}/{total:,} {self._unit}"

    def __call__(self, name: str, done: int, total: int) -> None:
        fraction = done / total if total else 1.0
        if self._tty:
            width = 30
            bar = "#" * int(width * fraction)
            sys.stderr.write(
                f"\r{name[:50]:50} [{bar:{width}}] {fraction:6.1%} {self._amount(done, total)}"
            )
            if done >= total:
                sys.stderr.write("\n")
            sys.stderr.flush()
            return
        step = int(fraction * 10)
        if step > self._last.get(name, -1):
            self._last[name] = step
            print(f"{self._verb} {name}: {fraction:.0%} of {total:,} {self._unit}", file=sys.stderr)


def checked(option: str, value: V, check: Callable[[V], T]) -> T:
    """``check(value)``, its ``ValueError`` turned into a UsageError naming ``option``."""
    try:
        return check(value)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from exc


def configured_indexes(indexes: Iterable[str], what: str) -> None:
    """Raise UsageError (``index-not-allowed``) when one of ``indexes`` is not in the
    environment's ``WHEELGATE_ALLOWED_INDEXES``, the stack's ``index_dirs``: the promoter
    would refuse it. Unset (local mode only) allows any."""
    try:
        allowed = allowed_indexes_from_env(os.environ)
    except SettingsError as exc:
        raise UsageError(str(exc)) from exc
    refused = sorted(set(indexes) - allowed) if allowed else []
    if refused:
        raise UsageError(
            f"{Reason.INDEX_NOT_ALLOWED.value}: {what} {refused[0]!r} is not a configured index "
            f"directory ({ENV_ALLOWED_INDEXES}: {', '.join(sorted(allowed))})"
        )


def test_url_option(option: str, url: str) -> str:
    """A test URL (:func:`check_test_url`) on a host of ``WHEELGATE_TEST_URL_HOSTS`` (default
    ``github.com``), as the promoter requires; else UsageError naming ``option``."""
    checked(option, url, check_test_url)
    try:
        hosts = test_url_hosts_from_env(os.environ)
    except SettingsError as exc:
        raise UsageError(str(exc)) from exc
    return checked(option, url, lambda value: check_test_url_host(value, hosts))


def index_option(args: argparse.Namespace) -> str:
    """``--index``: a valid index directory, and a configured one (:func:`configured_indexes`)."""
    index = checked("--index", args.index, check_index)
    configured_indexes([index], "--index")
    return index


def commit_option(args: argparse.Namespace) -> str:
    """``--commit``, else ``$GITHUB_SHA``, held to the manifest's rule for a commit; a
    UsageError names the option or the variable a bad value came from."""
    source, value = (
        ("--commit", args.commit)
        if args.commit is not None
        else (ENV_GITHUB_SHA, os.environ.get(ENV_GITHUB_SHA, ""))
    )
    if not value and source == ENV_GITHUB_SHA:
        raise UsageError(f"--commit is required (or set {ENV_GITHUB_SHA})")
    try:
        return check_commit(value, name=source)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def validated(model: type[M], data: Mapping[str, object], options: Mapping[str, str]) -> M:
    """``model`` built from option values; a UsageError names the ``options`` (field name ->
    option) whose values it refuses, on one line."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise UsageError(describe_errors(exc, names=options)) from exc


def s3_client(args: argparse.Namespace) -> S3Client:
    """An S3 client for ``--endpoint-url`` (or boto3's default), retrying adaptively up to
    ``--storage-attempts`` times, each connect or read waiting ``--storage-timeout`` seconds.
    A configuration botocore refuses (an unknown profile...) is an
    :class:`~wheelgate.storage.errors.AccessError`."""
    import boto3
    from botocore.config import Config

    attempts = args.storage_attempts
    if attempts is None:
        attempts = checked(ENV_MAX_ATTEMPTS, os.environ.get(ENV_MAX_ATTEMPTS, ""), _attempts)
    config = Config(
        retries={"mode": "adaptive", "total_max_attempts": attempts},
        connect_timeout=args.storage_timeout,
        read_timeout=args.storage_timeout,
        max_pool_connections=32,
    )
    endpoint = args.endpoint_url or None
    with translated("creating the S3 client", "s3", endpoint):
        return boto3.client("s3", endpoint_url=endpoint, config=config)


def _attempts(value: str) -> int:
    """``AWS_MAX_ATTEMPTS``: a positive whole number, or empty for the default."""
    if not value:
        return DEFAULT_STORAGE_ATTEMPTS
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{value!r} is not a positive whole number of attempts")
    return int(value)


def _positive_attempts(text: str) -> int:
    """``--storage-attempts``: a positive whole number (an argparse type)."""
    try:
        return _attempts(text or "0")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _positive_seconds(text: str) -> float:
    """``--storage-timeout``: a positive number of seconds (an argparse type)."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return seconds


def required(args: argparse.Namespace, attr: str, env: str, option: str) -> str:
    """The option's value, else the variable's; raises UsageError naming both when neither."""
    value = getattr(args, attr, None) or os.environ.get(env, "")
    if not value:
        raise UsageError(f"{option} is required (or set {env})")
    return str(value)


def nightly_url(args: argparse.Namespace) -> str:
    """The nightly index's public base URL (``--nightly-url`` or its variable), ending in /."""
    return base_url(required(args, "nightly_url", ENV_NIGHTLY_BASE_URL, "--nightly-url"))


def buckets(args: argparse.Namespace, *, nightly: bool) -> tuple[Bucket, Bucket | None]:
    """The staging bucket, and the nightly one when asked, from options or the environment."""
    s3 = s3_client(args)
    staging = Bucket(s3, required(args, "staging_bucket", ENV_STAGING_BUCKET, "--staging-bucket"))
    if not nightly:
        return staging, None
    return staging, Bucket(
        s3, required(args, "nightly_bucket", ENV_NIGHTLY_BUCKET, "--nightly-bucket")
    )


def storage_options(parser: argparse.ArgumentParser, *, nightly: bool) -> None:
    """Add the bucket and endpoint options to a command's parser."""
    group = parser.add_argument_group("storage")
    group.add_argument(
        "--staging-bucket", help=f"staging bucket name (default: ${ENV_STAGING_BUCKET})"
    )
    if nightly:
        group.add_argument(
            "--nightly-bucket", help=f"nightly bucket name (default: ${ENV_NIGHTLY_BUCKET})"
        )
    group.add_argument(
        "--endpoint-url", help="S3 endpoint (default: boto3's, e.g. $AWS_ENDPOINT_URL)"
    )
    group.add_argument(
        "--storage-timeout",
        type=_positive_seconds,
        default=DEFAULT_STORAGE_TIMEOUT,
        metavar="SECONDS",
        help=f"seconds each storage connect or read may take before it is retried "
        f"(default {DEFAULT_STORAGE_TIMEOUT:g}, botocore's)",
    )
    group.add_argument(
        "--storage-attempts",
        type=_positive_attempts,
        metavar="N",
        help=f"attempts per storage request, the first and the retries of throttling, server "
        f"errors and timeouts (default: ${ENV_MAX_ATTEMPTS}, else {DEFAULT_STORAGE_ATTEMPTS})",
    )


@dataclass(frozen=True)
class RunStatus:
    """A run's status as ``wheelgate status`` shows it.

    ``document`` is the JSON it prints (the record, or a pending document when there is none;
    with a manifest waited for, ``manifest_decision`` says what became of it), ``record`` the
    record itself, ``state`` what the exit code follows (the decision about the manifest
    waited for, when one was given), and ``settled`` whether waiting longer can change it.
    """

    document: dict[str, Any]
    record: PromotionRecord | None
    state: str
    settled: bool


def read_status(staging: Bucket, run_id: str, manifest_sha256: str | None = None) -> RunStatus:
    """The run's status now. With ``manifest_sha256``, it is the status of that manifest:
    pending until the record holds a decision about those bytes, whatever was decided before
    (:meth:`PromotionRecord.decision_about`)."""
    found = staging.get(STAGING.record(run_id))
    record = PromotionRecord.model_validate_json(found[0]) if found is not None else None
    if record is not None and record.commit is None:
        # A rejected run's record may lack the commit its manifest states.
        record = record.model_copy(update={"commit": manifest_commit(staging, run_id)})
    if record is not None:
        document = record.model_dump(mode="json", by_alias=True)
    else:
        document = _no_record_document(staging, run_id)
    if manifest_sha256 is None:
        state = document["state"]
        decided = state in (State.PROMOTED.value, State.REJECTED.value)
        return RunStatus(document, record, state, settled=decided)
    entry = record.decision_about(manifest_sha256) if record is not None else None
    state = entry.state.value if entry is not None else State.PENDING.value
    document["manifest_decision"] = {
        "manifest_sha256": manifest_sha256,
        "state": state,
        "reason": entry.reason if entry is not None else None,
        "message": entry.message if entry is not None else _NOT_DECIDED,
    }
    return RunStatus(document, record, state, settled=entry is not None)


def manifest_commit(staging: Bucket, run_id: str) -> str | None:
    """The commit ``run_id``'s manifest states; ``None`` when there is no manifest (a yank or
    an override request has none), it states none or is not one, or the caller may not read
    it."""
    try:
        found = staging.get(STAGING.manifest(run_id))
    except AccessError:
        return None
    if found is None:
        return None
    try:
        commit = json.loads(found[0]).get("commit")
        return check_commit(commit) if isinstance(commit, str) else None
    except (ValueError, AttributeError):
        return None


#: What ``manifest_decision`` says of a manifest the record holds no decision about yet.
_NOT_DECIDED = "no decision about this manifest yet; waiting for the promoter"


#: The state ``status`` gives a run id under which nothing is staged, reported or decided.
UNKNOWN_RUN = "unknown"


def _no_record_document(staging: Bucket, run_id: str) -> dict[str, Any]:
    """The document of a run without a record: pending, saying whether a manifest exists and,
    for a run staged but never reported, what is staged (each directory's files, commit and
    index URL); :data:`UNKNOWN_RUN` when nothing is staged under the id either."""
    try:
        has_manifest: bool | None = staging.head(STAGING.manifest(run_id)) is not None
    except AccessError:
        # The reporter role may write manifests without being allowed to read them back.
        has_manifest = None
    document: dict[str, Any] = {
        "run_id": run_id,
        "state": State.PENDING.value,
        "reason": None,
        "message": {
            True: "manifest written; waiting for the promoter",
            False: "no manifest for this run yet",
            None: "no decision recorded yet; waiting for the promoter",
        }[has_manifest],
        "sets": [],
    }
    if has_manifest is not False:
        return document
    staged = staged_run(staging, run_id)
    if staged is None:
        return document
    if not staged:
        return document | {
            "state": UNKNOWN_RUN,
            "message": "unknown run: nothing is staged, reported or decided under this run id",
        }
    commits = {s["commit"] for s in staged}
    return document | {
        "message": "staged, not reported yet: no manifest for this run yet (wheelgate report "
        "writes it once the tests ran)",
        "commit": commits.pop() if len(commits) == 1 else None,
        "staged": staged,
    }


def staged_run(staging: Bucket, run_id: str) -> list[dict[str, Any]] | None:
    """What is staged for ``run_id``: per index directory its files (name, sha256, size), the
    commit they were staged from (their objects' metadata), and the run's index there (its URL
    under ``$WHEELGATE_STAGING_BASE_URL`` when set, and its key). ``None`` when the caller may
    not list staging's ``runs/``."""
    from wheelgate.core.objects import META_COMMIT

    try:
        sets = staged_sets(staging, run_id)
    except AccessError:
        return None
    base = os.environ.get(ENV_STAGING_BASE_URL, "")
    found = []
    for index, files in sorted(sets.items()):
        prefix = STAGING.run_index_prefix(run_id, index)
        # ``wheelgate stage`` refuses a file staged again from another commit: one tells.
        head = staging.head(prefix + files[0].filename)
        found.append(
            {
                "index": index,
                "index_url": key_url(base, prefix) if base else None,
                "index_key": prefix,
                "commit": head.metadata.get(META_COMMIT) if head is not None else None,
                "files": [f.model_dump(mode="json") for f in files],
            }
        )
    return found


def wait_for_decision(
    staging: Bucket,
    run_id: str,
    wait: float,
    interval: float,
    manifest_sha256: str | None = None,
    pending: Callable[[dict[str, Any]], None] | None = None,
) -> RunStatus:
    """The run's status once it is settled (:func:`read_status`: decided, or with
    ``manifest_sha256``, decided about that manifest), or as it stands after ``wait``
    seconds; ``pending`` is shown each unsettled document (an import's progress)."""
    deadline = time.monotonic() + wait
    while True:
        status = read_status(staging, run_id, manifest_sha256)
        if status.settled or time.monotonic() >= deadline:
            return status
        if pending is not None:
            pending(status.document)
        time.sleep(min(interval, max(0.0, deadline - time.monotonic())))


def decision_exit_code(state: str) -> int:
    """The exit code of a run in ``state``: 0 promoted, 1 rejected, 3 still pending, 5 an
    unknown run (:data:`UNKNOWN_RUN`)."""
    return {
        State.PROMOTED.value: EXIT_OK,
        State.REJECTED.value: EXIT_REJECTED,
        UNKNOWN_RUN: EXIT_UNKNOWN_RUN,
    }.get(state, EXIT_PENDING)


def wait_for_record(
    staging: Bucket,
    run_id: str,
    wait: float,
    interval: float,
    manifest_sha256: str | None = None,
    pending: Callable[[dict[str, Any]], None] | None = None,
    *,
    people: bool = False,
) -> int:
    """Wait for the run's decision (:func:`wait_for_decision`, showing ``pending`` each
    unsettled document), print it (:func:`print_status`: a summary when ``people``, else its
    document) and return its exit code."""
    status = wait_for_decision(staging, run_id, wait, interval, manifest_sha256, pending)
    print_status(staging, run_id, status, people=people)
    return decision_exit_code(status.state)


def for_people(args: argparse.Namespace) -> bool:
    """Whether to print a summary for people: on a terminal, unless ``--json``."""
    return not getattr(args, "json", False) and sys.stdout.isatty()


def print_status(staging: Bucket, run_id: str, status: RunStatus, *, people: bool) -> None:
    """Print a run's status: the summary for people (:func:`wheelgate.status.summary.render_run`)
    when ``people``, else its JSON document with ``record_url`` (where the record is, or will
    be) beside it, as the status action outputs it."""
    from wheelgate.status.summary import render_run

    record_url = f"s3://{staging.name}/{STAGING.record(run_id)}"
    if not people:
        print(json.dumps({**status.document, "record_url": record_url}, indent=2))
        return
    document = status.document
    print(
        render_run(
            run_id,
            status.record,
            record_url=record_url,
            pending_message=str(document.get("message", "")),
            pending_state=str(document.get("state", State.PENDING.value)),
            staged=document.get("staged", ()),
            manifest_decision=document.get("manifest_decision"),
        )
    )


def staged_sets(staging: Bucket, run_id: str) -> dict[str, list[ManifestFile]]:
    """What is staged for ``run_id``, per index directory; a staging layout the manifest cannot
    describe is a UsageError."""
    from wheelgate.staging.stage import StageError
    from wheelgate.staging.stage import staged_sets as listed

    try:
        return listed(staging, run_id)
    except StageError as exc:
        raise UsageError(str(exc)) from exc
