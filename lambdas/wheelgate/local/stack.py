"""``wheelgate local``: the whole WheelGate stack on this machine.

An embedded S3/SQS/KMS (moto server) on 127.0.0.1 with the buckets, queue, dead-letter queue,
manifest notification and verdict key laid out as the CDK stack lays them out; two HTTP
servers that serve the staging and nightly indexes the way the CloudFront distributions do
(:mod:`wheelgate.local.cdn`); and, once its environment is in place, a loop that feeds the
queue's messages to the promoter Lambda's own handler (:mod:`wheelgate.local.promoter_loop`).

Starting it writes no process environment: :meth:`LocalWheelGate.start` returns the variables
that point clients and the promoter at it, and its caller sets them where they run.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import boto3
from botocore.awsrequest import AWSRequest

from wheelgate.core.env_names import ENV_LISTING_RETENTION
from wheelgate.core.import_sources import check_import_sources
from wheelgate.core.layout import (
    HISTORY_ENTRIES_DIR,
    HISTORY_PREFIX,
    MANIFEST_SUFFIX,
    MANIFESTS_PREFIX,
    STATUS_PREFIX,
)
from wheelgate.core.metrics import SERVICE_NAME
from wheelgate.core.setting_values import ListingRetention
from wheelgate.core.settings import PromoterSettings
from wheelgate.local.cdn import IndexServer
from wheelgate.local.names import (
    DLQ_NAME,
    ENV_LOCAL_BREAK_GLASS_KEY,
    LOCAL_BREAK_GLASS_ID,
    LOCAL_BREAK_GLASS_KEY,
    LOCAL_DEPS_ID,
    LOCAL_FANOUT_STATE_MACHINE,
    LOCAL_REPORTER_ID,
    LOCAL_REPORTER_PRINCIPAL,
    MAX_RECEIVE_COUNT,
    NIGHTLY_BUCKET,
    QUEUE_NAME,
    REGION,
    STAGING_BUCKET,
)
from wheelgate.local.promoter_loop import LambdaHandler, PromoterLoop
from wheelgate.local.writers import principal_of

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

#: The local nightly bucket's default retention, which its pages' own lock repeats.
_LOCAL_RETENTION_MODE = "GOVERNANCE"
_LOCAL_RETENTION_DAYS = 1
#: The run expiry the history records for staged files: the stack's default (cdk.json's
#: ``staging_run_expiry_days``); local mode has no lifecycle, so this only dates the history.
_LOCAL_RUN_EXPIRY_DAYS = 14
#: The embedded endpoints' credentials (moto accepts any).
LOCAL_ACCESS_KEY = "wheelgate-local"


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


def _install_moto_patches(verbose: bool) -> None:
    """Refuse a moto the patches were not written for, then patch it (this process only)."""
    from wheelgate.local import atomic_writes, large_objects, writers
    from wheelgate.local.moto_version import require_patched_moto

    require_patched_moto()
    large_objects.install()
    # S3's conditional writes check and write in one step; moto's need this to do so.
    atomic_writes.install()
    # Who signed each request: the break-glass role's reach the promoter as its own.
    writers.install()
    if not verbose:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)


@dataclass
class LocalWheelGate:
    """Local S3/SQS/KMS, the two index servers and, on request, the promoter loop.

    ``handler`` defaults to the promoter function's own handler (see
    :meth:`promoter_handler`). ``principal`` is the identity the loop stamps on manifest events.
    Until :meth:`run_promoter` nothing consumes the queue (tests deliver events to the handler
    themselves). ``fanout_min_files`` turns fan-out promotion on from that many files to copy,
    its executions run in this process (``None``: off, every run in one invocation).
    ``listing_retention`` is the value of ``WHEELGATE_LISTING_RETENTION`` (``listing_retention``
    of cdk.json, as JSON) for the promoter and, through the environment, for the CLI's
    ``index rebuild``; ``None``: every version listed.
    """

    s3_port: int = 0
    staging_port: int = 0
    nightly_port: int = 0
    required_tests: Mapping[str, list[str]] = field(default_factory=dict)
    #: The index directories the promoter and the CLI allow (``index_dirs`` of cdk.json);
    #: empty: any directory (``WHEELGATE_ALLOWED_INDEXES`` is then ``"*"``, local mode's own).
    allowed_indexes: Sequence[str] = ()
    principal: str = LOCAL_REPORTER_PRINCIPAL
    verbose: bool = False
    fanout_min_files: int | None = None
    listing_retention: str | None = None
    #: A break-glass role of local mode's own (``LOCAL_BREAK_GLASS_ID``), whose key
    #: (``ENV_LOCAL_BREAK_GLASS_KEY`` in the environment) signs override and import requests.
    break_glass: bool = False
    #: Where import requests may read from, as ``import_sources`` in cdk.json
    #: (``bucket`` or ``bucket/prefix/``, buckets of the embedded S3); empty: nowhere.
    import_sources: Sequence[str] = ()
    handler: LambdaHandler | None = None
    #: What :meth:`start` returned: the variables that point clients and the promoter here.
    env: dict[str, str] = field(default_factory=dict)
    staging_url: str = ""
    nightly_url: str = ""
    #: The KMS key (in the local KMS) the promoter signs verdicts with.
    verdict_key_arn: str = ""
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _servers: list[Any] = field(default_factory=list)

    def start(self) -> dict[str, str]:
        """Start the embedded endpoints and the index servers; return the environment of
        clients and of the promoter: the endpoint and its credentials, every promoter setting
        (explicitly, as the stack writes them), the staging URL and Powertools' service."""
        from moto.server import ThreadedMotoServer

        if self.fanout_min_files is not None and self.fanout_min_files < 0:
            raise ValueError(
                f"the fan-out threshold must be 0 or more files, not {self.fanout_min_files}"
            )
        _install_moto_patches(self.verbose)
        moto = ThreadedMotoServer(ip_address="127.0.0.1", port=self.s3_port, verbose=self.verbose)
        moto.start()
        self._servers.append(moto)
        host, port = moto.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        session = boto3.Session(
            aws_access_key_id=LOCAL_ACCESS_KEY,
            aws_secret_access_key=LOCAL_ACCESS_KEY,
            region_name=REGION,
        )
        install_moto_compatibility()
        s3 = session.client("s3", endpoint_url=endpoint)
        self.sqs = session.client("sqs", endpoint_url=endpoint)
        self._create(s3, self.sqs)
        # The verdict key, as the stack's: moto's KMS signs with ECDSA P-256 like AWS's.
        self.verdict_key_arn = session.client("kms", endpoint_url=endpoint).create_key(
            KeySpec="ECC_NIST_P256",
            KeyUsage="SIGN_VERIFY",
            Description="WheelGate local verdict key",
        )["KeyMetadata"]["Arn"]
        self._serve_indexes(s3)
        self.env = {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": LOCAL_ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": LOCAL_ACCESS_KEY,
            "AWS_DEFAULT_REGION": REGION,
            **self.settings().to_env(),
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_SERVICE_NAME": SERVICE_NAME,
        }
        if self.break_glass:
            self.env[ENV_LOCAL_BREAK_GLASS_KEY] = LOCAL_BREAK_GLASS_KEY
        return dict(self.env)

    def _serve_indexes(self, s3: S3Client) -> None:
        self.staging_server = IndexServer(
            self.staging_port, s3, [STAGING_BUCKET, NIGHTLY_BUCKET], self.verbose
        )
        self.nightly_server = IndexServer(
            self.nightly_port,
            s3,
            [NIGHTLY_BUCKET],
            self.verbose,
            # As the nightly distribution does: /status/ comes from the staging bucket.
            routes={STATUS_PREFIX: [STAGING_BUCKET]},
        )
        self.staging_url = f"http://127.0.0.1:{self.staging_server.server_address[1]}/"
        self.nightly_url = f"http://127.0.0.1:{self.nightly_server.server_address[1]}/"
        for server in (self.staging_server, self.nightly_server):
            self._servers.append(server)
            self._spawn(server.serve_forever)

    def settings(self) -> PromoterSettings:
        """The local promoter's settings, every one explicit as the stack's are: local mode's
        reporter and mirror roles (and break-glass role with ``break_glass``), its verdict key,
        its import sources, and its directories (``"*"`` without ``allowed_indexes``). A bad
        import source raises ``ValueError``."""
        retention = (
            ListingRetention()
            if self.listing_retention is None
            else ListingRetention.from_value(
                json.loads(self.listing_retention), name=ENV_LISTING_RETENTION
            )
        )
        return PromoterSettings(
            staging_bucket=STAGING_BUCKET,
            nightly_bucket=NIGHTLY_BUCKET,
            nightly_base_url=self.nightly_url,
            staging_base_url=self.staging_url,
            trusted_reporter_id=LOCAL_REPORTER_ID,
            trusted_deps_id=LOCAL_DEPS_ID,
            required_tests={k: tuple(v) for k, v in self.required_tests.items()},
            allowed_indexes=frozenset(self.allowed_indexes),
            # Pages get their own lock as in the stack; the shortest one, the local default's.
            nightly_retention_mode=_LOCAL_RETENTION_MODE,
            nightly_page_retention_days=_LOCAL_RETENTION_DAYS,
            run_expiry_days=_LOCAL_RUN_EXPIRY_DAYS,
            listing_retention=retention,
            verdict_key_arn=self.verdict_key_arn,
            break_glass_id=LOCAL_BREAK_GLASS_ID if self.break_glass else None,
            import_sources=check_import_sources(self.import_sources),
            **self._fan_out(),
        )

    def _fan_out(self) -> dict[str, Any]:
        """The fan-out settings: from ``fanout_min_files`` files, executions run in this
        process (see :meth:`promoter_handler`); a failed one sends its manifest's event back to
        the local queue (or its dead-letter queue). None when it is ``None``."""
        if self.fanout_min_files is None:
            return {}
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

    def _create(self, s3: S3Client, sqs: SQSClient) -> None:
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
                                    {"Name": "prefix", "Value": prefix},
                                    {"Name": "suffix", "Value": MANIFEST_SUFFIX},
                                ]
                            }
                        },
                    }
                    # Manifests and requests, and the run history's stage entries, which the
                    # promoter folds into the history (as the stack sends both).
                    for prefix in (MANIFESTS_PREFIX, HISTORY_PREFIX + HISTORY_ENTRIES_DIR)
                ]
            },
        )
        self.queue_url, self.dlq_url, self.queue_arn = queue_url, dlq_url, queue_arn

    def promoter_handler(self) -> LambdaHandler:
        """What the loop calls with each batch: ``handler`` if given, else the promoter
        function's own handler, with its fan-out executions run in this process when
        ``fanout_min_files`` is set."""
        if self.handler is not None:
            return self.handler
        if self.fanout_min_files is not None:
            from wheelgate.local.executions import in_process_handler

            return in_process_handler()
        from wheelgate.lambda_function.handler import lambda_handler

        return lambda_handler

    def run_promoter(self) -> None:
        """Consume the manifest queue with :meth:`promoter_handler`, in this process. The
        handler reads its settings from this process's environment, as a Lambda function's
        does: set :meth:`start`'s environment in it first."""
        loop = PromoterLoop(
            self.sqs,
            self.queue_url,
            self.queue_arn,
            self.promoter_handler(),
            self.principal,
            stop=self._stop,
            writer_of=principal_of,
        )
        self._spawn(loop.run)

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
