"""``wheelgate local``: the whole WheelGate stack on this machine.

An embedded S3/SQS (moto server) on 127.0.0.1 with the buckets, queue, dead-letter queue and
manifest notification laid out as the CDK stack lays them out; a loop that receives from the
queue and calls the promoter Lambda's own handler with the SQS event; and two HTTP servers that
serve the staging and nightly indexes the way the CloudFront distributions do.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus

import boto3
from botocore.awsrequest import AWSRequest
from botocore.exceptions import ClientError

from wheelgate.core.env_names import ENV_LISTING_RETENTION, ENV_STAGING_BASE_URL
from wheelgate.core.layout import (
    HTML_PAGE,
    JSON_PAGE,
    MANIFEST_SUFFIX,
    MANIFESTS_PREFIX,
    MIRROR_RUN_PREFIX,
    STATUS_PREFIX,
)
from wheelgate.core.setting_values import ListingRetention
from wheelgate.core.settings import PromoterSettings
from wheelgate.index.pages import JSON_CONTENT_TYPE

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

STAGING_BUCKET = "wheelgate-staging"
NIGHTLY_BUCKET = "wheelgate-nightly"
QUEUE_NAME = "wheelgate-manifests"
DLQ_NAME = "wheelgate-manifests-dlq"
REGION = "us-east-1"
#: The local nightly bucket's default retention, which its pages' own lock repeats.
_LOCAL_RETENTION_MODE = "GOVERNANCE"
_LOCAL_RETENTION_DAYS = 1
#: Unique id the local reporter role would have; the event loop stamps it on manifest events.
LOCAL_REPORTER_ID = "AROALOCALREPORTER0001"
LOCAL_REPORTER_PRINCIPAL = f"AWS:{LOCAL_REPORTER_ID}:wheelgate-local"
#: The same for the dependency-mirror role, which alone writes ``manifests/deps-*``.
LOCAL_DEPS_ID = "AROALOCALDEPS00000001"
LOCAL_DEPS_PRINCIPAL = f"AWS:{LOCAL_DEPS_ID}:wheelgate-local"
MIRROR_MANIFEST_PREFIX = f"{MANIFESTS_PREFIX}{MIRROR_RUN_PREFIX}"
#: The state machine local mode names: its executions run in the promoter's process.
LOCAL_FANOUT_STATE_MACHINE = f"arn:aws:states:{REGION}:000000000000:stateMachine:wheelgate-fanout"
#: A Lambda handler as the loop calls it: the SQS event and a context (duck-typed) in.
LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]
#: After this many failed receives a message moves to the DLQ: fewer than the stack's five
#: (``stacks/promoter_function.py``), so a poison message reaches the local DLQ within seconds.
MAX_RECEIVE_COUNT = 3
# The media types stacks/functions/index_router.js ranks (tests/infra/index_router_cases.json).
_JSON_TYPES = (JSON_CONTENT_TYPE, "application/vnd.pypi.simple.latest+json")
_HTML_TYPES = (
    "application/vnd.pypi.simple.v1+html",
    "application/vnd.pypi.simple.latest+html",
    "text/html",
    "text/*",
    "*/*",
)
# What JavaScript's parseFloat reads from the start of a q value.
_LEADING_NUMBER = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?")


@dataclass(frozen=True)
class Redirect:
    """A 301 to ``location``: a directory URL without its trailing slash."""

    location: str

    def send(self, handler: BaseHTTPRequestHandler) -> None:
        """Answer ``handler``'s request with this redirect (no body)."""
        handler.send_response(301)
        handler.send_header("Location", self.location)
        handler.send_header("Content-Length", "0")
        handler.end_headers()


def choose_page(path: str, accept: str) -> str | Redirect:
    """The object key a CDN request path maps to, or the redirect the CDN answers (same rules
    as the CloudFront Function).

    Empty segments (doubled slashes) are dropped. A last segment without a ``.`` (before
    decoding) and without a trailing slash is a directory named without its slash: a
    :class:`Redirect` to the slash form, query kept. ``/dir/`` is a directory: its
    ``index.json`` when the client prefers the PEP 691 JSON type in ``Accept``, else
    ``index.html``. Anything else is a file. Each segment is percent-decoded as S3 decodes a
    request path: a raw ``+`` is a space, ``%2B`` a ``+``. The requests the function refuses
    with 400 (dot segments, malformed escapes) are not refused here: their keys simply do not
    exist.
    """
    raw, question, query = path.partition("?")
    segments = [s for s in raw.split("/") if s]
    slash = raw.endswith("/")
    if segments and not slash and "." not in segments[-1]:
        return Redirect("/" + "/".join(segments) + "/" + question + query)
    key = "/".join(unquote_plus(s) for s in segments)
    if not slash:
        return key
    page = JSON_PAGE if prefers_json(accept) else HTML_PAGE
    return (key + "/" if key else "") + page


def prefers_json(accept: str) -> bool:
    """True when ``Accept`` gives the PEP 691 JSON type a nonzero quality at least as high as
    every HTML type's (``text/*`` and ``*/*`` count as HTML). A q value outside 0..1 or not a
    number counts as 0, as in the CloudFront Function."""
    best_json, best_html = 0.0, 0.0
    for part in accept.split(","):
        fields = part.split(";")
        media = fields[0].strip().lower()
        quality = 1.0
        for field_ in fields[1:]:
            param = field_.strip().lower()
            if param.startswith("q="):
                number = _LEADING_NUMBER.match(param[2:])
                quality = float(number.group()) if number else 0.0
                if not 0.0 <= quality <= 1.0:
                    quality = 0.0
        if media in _JSON_TYPES:
            best_json = max(best_json, quality)
        elif media in _HTML_TYPES:
            best_html = max(best_html, quality)
    return best_json > 0 and best_json >= best_html


def _add_copy_checksum_header(request: AWSRequest, **_: Any) -> None:
    # moto refuses CopyObject into an Object Lock bucket without this header (AWS does not
    # need it for a copy); harmless on a real endpoint.
    request.headers["x-amz-sdk-checksum-algorithm"] = "SHA256"


def install_moto_compatibility() -> None:
    """Register the local-only request fix-ups on boto3's default session."""
    boto3.setup_default_session()
    session = boto3.DEFAULT_SESSION
    assert session is not None
    session.events.register("before-sign.s3.CopyObject", _add_copy_checksum_header)


class _IndexHandler(BaseHTTPRequestHandler):
    server: _IndexServer

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def do_GET(self) -> None:
        self._serve(body=True)

    def _serve(self, *, body: bool) -> None:
        key = choose_page(self.path, self.headers.get("Accept", ""))
        if isinstance(key, Redirect):
            key.send(self)
            return
        buckets = self.server.buckets
        for prefix, routed in self.server.routes.items():
            if key.startswith(prefix):
                buckets = routed
        for bucket in buckets:
            try:
                obj = self.server.s3.get_object(Bucket=bucket, Key=key)
            except ClientError:
                continue
            self.send_response(200)
            self.send_header("Content-Type", obj.get("ContentType", "application/octet-stream"))
            self.send_header("Content-Length", str(obj["ContentLength"]))
            self.send_header("ETag", obj["ETag"])
            self.send_header("Vary", "Accept")
            self.end_headers()
            stream = obj["Body"]
            while body and (chunk := stream.read(1024 * 1024)):
                self.wfile.write(chunk)
                self.server.count(key, len(chunk))
            stream.close()
            return
        self.send_error(404, f"no object {key}")


class _IndexServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        port: int,
        s3: S3Client,
        buckets: list[str],
        verbose: bool,
        routes: dict[str, list[str]] | None = None,
    ) -> None:
        super().__init__(("127.0.0.1", port), _IndexHandler)
        self.s3 = s3
        self.buckets = buckets
        #: Key prefixes served from other buckets (a CloudFront behavior with another origin).
        self.routes = routes or {}
        self.verbose = verbose
        #: Body bytes served per key, for benchmarks of what clients download.
        self.bytes_sent: dict[str, int] = {}
        self._lock = threading.Lock()

    def count(self, key: str, size: int) -> None:
        with self._lock:
            self.bytes_sent[key] = self.bytes_sent.get(key, 0) + size


@dataclass
class _LocalContext:
    """The attributes of a Lambda context the Powertools decorators read."""

    function_name: str = "wheelgate-promoter-local"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = (
        f"arn:aws:lambda:{REGION}:000000000000:function:wheelgate-promoter-local"
    )
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def get_remaining_time_in_millis(self) -> int:
        return 900_000


def sqs_lambda_event(messages: list[Any], queue_arn: str) -> dict[str, Any]:
    """The event Lambda's SQS event source would deliver for ``messages``."""
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "messageAttributes": {},
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": REGION,
            }
            for m in messages
        ]
    }


def stamp_identity(body: str, principal: str) -> str:
    """Fill in what a real S3 notification carries and moto leaves out: who wrote the object
    (the identity local mode knows: its reporter, or its mirror role for a mirror run's
    manifest), and the request fields."""
    try:
        payload = json.loads(body)
    except json.JSONDecodeError:
        return body
    if not isinstance(payload, dict) or "Records" not in payload:
        return body
    for record in payload["Records"]:
        if not isinstance(record, dict):
            continue
        key = unquote_plus(str(record.get("s3", {}).get("object", {}).get("key", "")))
        # Only the mirror role may write a mirror run's manifest (the stack's bucket policy);
        # local mode has no IAM, so it stamps the identity that policy would have allowed.
        writer = (
            LOCAL_DEPS_PRINCIPAL
            if principal == LOCAL_REPORTER_PRINCIPAL and key.startswith(MIRROR_MANIFEST_PREFIX)
            else principal
        )
        record.setdefault("userIdentity", {"principalId": writer})
        record.setdefault("requestParameters", {"sourceIPAddress": "127.0.0.1"})
        record.setdefault("responseElements", {"x-amz-request-id": "LOCAL", "x-amz-id-2": "LOCAL"})
        bucket = record.get("s3", {}).get("bucket", {})
        bucket.setdefault("ownerIdentity", {"principalId": "LOCAL"})
    return json.dumps(payload)


@dataclass
class LocalStack:
    """Local S3/SQS, the promoter loop and the two index servers.

    ``handler`` defaults to the promoter function's own handler (see
    :meth:`promoter_handler`). ``principal`` is the identity the loop stamps on manifest events.
    Without ``run_loop`` nothing consumes the queue (tests deliver events to the handler
    themselves). ``fanout_min_files`` turns fan-out promotion on from that many files to copy,
    its executions run in this process (``None``: off, every run in one invocation).
    ``listing_retention`` is the value of ``WHEELGATE_LISTING_RETENTION`` (``listing_retention``
    of cdk.json, as JSON) for the promoter and, through the ready line's environment, for the
    CLI's ``index rebuild``; ``None`` leaves the variable as it is (unset: every version listed).
    """

    s3_port: int = 0
    staging_port: int = 0
    nightly_port: int = 0
    required_tests: Mapping[str, list[str]] = field(default_factory=dict)
    #: The index directories the promoter and the CLI allow (``index_dirs`` of cdk.json); empty
    #: leaves ``WHEELGATE_ALLOWED_INDEXES`` as it is (unset: any directory).
    allowed_indexes: Sequence[str] = ()
    principal: str = LOCAL_REPORTER_PRINCIPAL
    verbose: bool = False
    run_loop: bool = True
    fanout_min_files: int | None = None
    listing_retention: str | None = None
    handler: LambdaHandler | None = None
    env: dict[str, str] = field(default_factory=dict)
    staging_url: str = ""
    nightly_url: str = ""
    #: The KMS key (in the local KMS) the promoter signs verdicts with.
    verdict_key_arn: str = ""
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _servers: list[Any] = field(default_factory=list)

    def start(self) -> LocalStack:
        from moto.server import ThreadedMotoServer

        from wheelgate.local import atomic_writes, large_objects
        from wheelgate.local.moto_version import require_patched_moto

        require_patched_moto()
        large_objects.install()
        # S3's conditional writes check and write in one step; moto's need this to do so.
        atomic_writes.install()
        if not self.verbose:
            logging.getLogger("werkzeug").setLevel(logging.WARNING)

        moto = ThreadedMotoServer(ip_address="127.0.0.1", port=self.s3_port, verbose=self.verbose)
        moto.start()
        self._servers.append(moto)
        host, port = moto.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        credentials = {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "wheelgate-local",
            "AWS_SECRET_ACCESS_KEY": "wheelgate-local",
            "AWS_DEFAULT_REGION": REGION,
        }
        os.environ.update(credentials)
        install_moto_compatibility()
        s3 = boto3.client("s3")
        sqs = boto3.client("sqs")
        queue_url, queue_arn = self._create(s3, sqs)
        # The verdict key, as the stack's: moto's KMS signs with ECDSA P-256 like AWS's.
        self.verdict_key_arn = boto3.client("kms").create_key(
            KeySpec="ECC_NIST_P256",
            KeyUsage="SIGN_VERIFY",
            Description="WheelGate local verdict key",
        )["KeyMetadata"]["Arn"]
        staging_server = _IndexServer(
            self.staging_port, s3, [STAGING_BUCKET, NIGHTLY_BUCKET], self.verbose
        )
        nightly_server = _IndexServer(
            self.nightly_port,
            s3,
            [NIGHTLY_BUCKET],
            self.verbose,
            # As the nightly distribution does: /status/ comes from the staging bucket.
            routes={STATUS_PREFIX: [STAGING_BUCKET]},
        )
        self.staging_url = f"http://127.0.0.1:{staging_server.server_address[1]}/"
        self.nightly_url = f"http://127.0.0.1:{nightly_server.server_address[1]}/"
        # Every setting explicit, as the stack's are: local mode's reporter and mirror roles,
        # its verdict key, and its directories (ANY_INDEX, shown in the ready line, without
        # --index).
        settings = PromoterSettings(
            staging_bucket=STAGING_BUCKET,
            nightly_bucket=NIGHTLY_BUCKET,
            nightly_base_url=self.nightly_url,
            trusted_reporter_id=LOCAL_REPORTER_ID,
            trusted_deps_id=LOCAL_DEPS_ID,
            required_tests={k: tuple(v) for k, v in self.required_tests.items()},
            allowed_indexes=frozenset(self.allowed_indexes),
            # Pages get their own lock as in the stack; the shortest one, the local default's.
            nightly_retention_mode=_LOCAL_RETENTION_MODE,
            nightly_page_retention_days=_LOCAL_RETENTION_DAYS,
            listing_retention=(
                ListingRetention()
                if self.listing_retention is None
                else ListingRetention.from_value(
                    json.loads(self.listing_retention), name=ENV_LISTING_RETENTION
                )
            ),
            verdict_key_arn=self.verdict_key_arn,
            **self._fan_out(),
        )
        self.env = {
            **credentials,
            **settings.to_env(),
            ENV_STAGING_BASE_URL: self.staging_url,
        }
        os.environ.update(self.env)
        os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
        os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "wheelgate-promoter")
        self.staging_server, self.nightly_server = staging_server, nightly_server
        for server in (staging_server, nightly_server):
            self._servers.append(server)
            self._spawn(server.serve_forever)
        self.queue_arn = queue_arn
        if self.run_loop:
            self._spawn(lambda: self._loop(sqs, queue_url, queue_arn))
        return self

    def _fan_out(self) -> dict[str, Any]:
        """The fan-out settings: from ``fanout_min_files`` files, executions run in this
        process (see :meth:`promoter_handler`); a failed one sends its manifest's event back to
        the local queue (or its dead-letter queue). None when it is ``None``."""
        if self.fanout_min_files is None:
            return {}
        if self.fanout_min_files < 0:
            raise ValueError(
                f"the fan-out threshold must be 0 or more files, not {self.fanout_min_files}"
            )
        return {
            "fanout_state_machine_arn": LOCAL_FANOUT_STATE_MACHINE,
            "fanout_min_files": self.fanout_min_files,
            "manifest_queue_url": self.queue_url,
            "dead_letter_queue_url": self.dlq_url,
        }

    def _spawn(self, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _create(self, s3: S3Client, sqs: SQSClient) -> tuple[str, str]:
        s3.create_bucket(Bucket=STAGING_BUCKET)
        s3.create_bucket(Bucket=NIGHTLY_BUCKET, ObjectLockEnabledForBucket=True)
        s3.put_object_lock_configuration(
            Bucket=NIGHTLY_BUCKET,
            ObjectLockConfiguration={
                "ObjectLockEnabled": "Enabled",
                "Rule": {
                    "DefaultRetention": {
                        "Mode": _LOCAL_RETENTION_MODE,  # type: ignore[typeddict-item]
                        "Days": _LOCAL_RETENTION_DAYS,
                    }
                },
            },
        )
        dlq_url = sqs.create_queue(QueueName=DLQ_NAME)["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        queue_url = sqs.create_queue(
            QueueName=QUEUE_NAME,
            Attributes={
                "VisibilityTimeout": "5",
                "RedrivePolicy": json.dumps(
                    {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(MAX_RECEIVE_COUNT)}
                ),
            },
        )["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        s3.put_bucket_notification_configuration(
            Bucket=STAGING_BUCKET,
            NotificationConfiguration={
                "QueueConfigurations": [
                    {
                        "QueueArn": queue_arn,
                        "Events": ["s3:ObjectCreated:*"],
                        "Filter": {
                            "Key": {
                                "FilterRules": [
                                    {"Name": "prefix", "Value": MANIFESTS_PREFIX},
                                    {"Name": "suffix", "Value": MANIFEST_SUFFIX},
                                ]
                            }
                        },
                    }
                ]
            },
        )
        self.queue_url, self.dlq_url = queue_url, dlq_url
        return queue_url, queue_arn

    def promoter_handler(self) -> LambdaHandler:
        """What the loop calls with each batch: ``handler`` if given, else the promoter
        function's own handler, with its fan-out executions run in this process when
        ``fanout_min_files`` is set."""
        if self.handler is not None:
            return self.handler
        if self.fanout_min_files is not None:
            from wheelgate.local.fanout import in_process_handler

            return in_process_handler()
        from wheelgate.lambda_function.handler import lambda_handler

        return lambda_handler

    def _loop(self, sqs: SQSClient, queue_url: str, queue_arn: str) -> None:
        handler = self.promoter_handler()
        while not self._stop.is_set():
            try:
                received = sqs.receive_message(
                    QueueUrl=queue_url,
                    MaxNumberOfMessages=10,
                    WaitTimeSeconds=1,
                    MessageSystemAttributeNames=["All"],
                )
            except Exception:
                time.sleep(0.2)
                continue
            messages = received.get("Messages", [])
            if not messages:
                continue
            for m in messages:
                m["Body"] = stamp_identity(m["Body"], self.principal)
            try:
                response = handler(sqs_lambda_event(messages, queue_arn), _LocalContext())
                failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
            except Exception:
                failed = {m["MessageId"] for m in messages}
            for m in messages:
                if m["MessageId"] in failed:
                    # Retry soon rather than after the full visibility timeout.
                    sqs.change_message_visibility(
                        QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=1
                    )
                else:
                    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])

    def ready_line(self) -> str:
        return json.dumps(
            {
                "ready": True,
                "env": self.env,
                "staging_url": self.staging_url,
                "nightly_url": self.nightly_url,
            }
        )

    def stop(self) -> None:
        self._stop.set()
        for server in self._servers:
            if isinstance(server, ThreadingHTTPServer):
                server.shutdown()
                server.server_close()
            else:
                server.stop()
