"""What every `wheelgate` command shares: exit codes, usage errors, checked option values, S3
clients and buckets from options or the environment, storage options, progress on stderr, what
is staged for a run, and waiting for a run's decision."""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, ValidationError

from wheelgate.core.env_names import (
    ENV_ALLOWED_INDEXES,
    ENV_NIGHTLY_BASE_URL,
    ENV_NIGHTLY_BUCKET,
    ENV_STAGING_BUCKET,
)
from wheelgate.core.errors import Reason
from wheelgate.core.layout import base_url, check_index
from wheelgate.core.manifest import (
    ManifestFile,
    check_commit,
    describe_errors,
)
from wheelgate.core.manifest_tests import check_test_url, check_test_url_host
from wheelgate.core.setting_values import SettingsError
from wheelgate.core.settings import allowed_indexes_from_env, test_url_hosts_from_env
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.errors import translated

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
#: The CI run's attempt (1 for the first), which ``wheelgate stage`` records in the history.
ENV_GITHUB_RUN_ATTEMPT = "GITHUB_RUN_ATTEMPT"
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


def _fraction(done: int, total: int) -> float:
    """How much of ``total`` is ``done`` (all of nothing)."""
    return done / total if total else 1.0


class Progress:
    """Progress on stderr, heard from any number of threads (``progress(name, done, total)``;
    ``total`` ``None`` when not known). On a terminal, one line redrawn: the name last heard
    of, its bar (when its total is known) and amount, and how many others are under way; a
    finished one keeps its line. In CI logs, a line per name when it starts and at each
    ``1/steps`` of its total (``<verb> <name>: 40% of <total> <unit>``, or ``<verb> <name>:
    <done> <unit>`` once when the total is not known). ``unit`` is what is counted: ``bytes``
    (the terminal shows MB) or a plural noun such as ``files``. :meth:`finish` ends the
    terminal's line."""

    def __init__(self, unit: str = "bytes", verb: str = "upload", *, steps: int = 10) -> None:
        self._tty = sys.stderr.isatty()
        self._lock = threading.Lock()
        self._heard: dict[str, tuple[int, int | None]] = {}
        self._last: dict[str, int] = {}
        self._line_open = False
        self._unit = unit
        self._verb = verb
        self._steps = steps

    def _amount(self, done: int, total: int | None) -> str:
        if self._unit == "bytes":
            received = f"{done / 1e6:,.1f}"
            return f"{received} MB" if total is None else f"{received}/{total / 1e6:,.1f} MB"
        return f"{done:,} {self._unit}" if total is None else f"{done:,}/{total:,} {self._unit}"

    def __call__(self, name: str, done: int, total: int | None) -> None:
        with self._lock:
            self._heard[name] = (done, total)
            if self._tty:
                self._draw(name, done, total)
            else:
                self._log(name, done, total)

    def _draw(self, name: str, done: int, total: int | None) -> None:
        line = f"\r{name[:50]:50} "
        if total is not None:
            fraction = _fraction(done, total)
            line += f"[{'#' * int(30 * fraction):30}] {fraction:6.1%} "
        line += self._amount(done, total)
        others = sum(1 for n, (d, t) in self._heard.items() if n != name and (t is None or d < t))
        if others:
            line += f" (+{others} under way)"
        # The spaces blank what a longer line drawn before left.
        sys.stderr.write(line + "   ")
        self._line_open = total is None or done < total
        if not self._line_open:
            sys.stderr.write("\n")
        sys.stderr.flush()

    def _log(self, name: str, done: int, total: int | None) -> None:
        fraction = 0.0 if total is None else _fraction(done, total)
        step = int(fraction * self._steps)
        if step <= self._last.get(name, -1):
            return
        self._last[name] = step
        if total is None:
            print(f"{self._verb} {name}: {done:,} {self._unit}", file=sys.stderr)
        else:
            print(f"{self._verb} {name}: {fraction:.0%} of {total:,} {self._unit}", file=sys.stderr)

    def finish(self) -> None:
        """End the terminal's line if it is still open."""
        with self._lock:
            if self._line_open:
                sys.stderr.write("\n")
                self._line_open = False


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


def staged_sets(staging: Bucket, run_id: str) -> dict[str, list[ManifestFile]]:
    """What is staged for ``run_id``, per index directory; a staging layout the manifest cannot
    describe is a UsageError."""
    from wheelgate.staging.errors import StageError
    from wheelgate.staging.staged_files import staged_sets as listed

    try:
        return listed(staging, run_id)
    except StageError as exc:
        raise UsageError(str(exc)) from exc
