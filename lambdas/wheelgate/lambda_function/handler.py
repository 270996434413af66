"""The promoter function's handler: SQS messages carrying S3 events for
``manifests/<run_id>.json``.

Thin by design: parse the event, build the service once per container, hand it each manifest
(:meth:`wheelgate.promotion.service.PromotionService.handle`) and report the decision it
returns. A permanent rejection is recorded and the
message is done; a transient error fails only that message (partial batch response) so SQS
retries it and, after the redrive limit, moves it to the dead-letter queue. Missing or bad
settings fail every message and step in the same way, each time with an ERROR line naming each
variable and a ``SettingsErrors`` count (the stack alarms on it). What a decision means
elsewhere is the service's projections, in order: its metrics
(:class:`wheelgate.lambda_function.telemetry.DecisionMetrics`; a redelivered manifest counts
nothing), the run history, and the status site
(:class:`wheelgate.lambda_function.status_site.StatusSite`). A message whose index
directory is leased by another promotion is made visible again after
``LEASE_BUSY_RETRY_SECONDS`` rather than the queue's whole visibility timeout (a fan-out job's
lease: ``FANOUT_LEASE_BUSY_RETRY_SECONDS``).

The same function runs the fan-out state machine's steps: an event with ``FANOUT_STEP_FIELD``
is a step (:meth:`wheelgate.promotion.service.PromotionService.step`), not an SQS batch; its
exception, if any, is the step's error (``PromotionRejected`` is not retried).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache, partial
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus

import boto3
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.parser.exceptions import InvalidModelTypeError
from aws_lambda_powertools.utilities.parser.models import S3Model
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.config import Config

from wheelgate.core import redact
from wheelgate.core.fanout_steps import FANOUT_STEP_FIELD
from wheelgate.core.limits import FANOUT_LEASE_BUSY_RETRY_SECONDS, LEASE_BUSY_RETRY_SECONDS
from wheelgate.core.metrics import (
    METRIC_INDEX_BUSY,
    METRIC_POISON_MESSAGES,
    METRIC_PROMOTION_ERRORS,
    METRIC_SETTINGS_ERRORS,
    METRICS_NAMESPACE,
    SERVICE_NAME,
)
from wheelgate.core.records import PromotionRecord, State
from wheelgate.core.setting_values import SettingProblem, SettingsError
from wheelgate.core.settings import PromoterSettings
from wheelgate.history.page_writer import HistoryPageWriter
from wheelgate.lambda_function.status_site import StatusSite
from wheelgate.lambda_function.telemetry import DecisionMetrics
from wheelgate.promotion.compose import build_service
from wheelgate.promotion.event import ManifestEvent
from wheelgate.promotion.fanout.ports import Launcher
from wheelgate.promotion.lease import LeaseBusy
from wheelgate.promotion.service import PromotionService
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.cdn import CloudFrontInvalidator
from wheelgate.storage.signing import KmsSigner
from wheelgate.storage.workflow import SqsSender, StepFunctionsLauncher

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

logger = Logger(service=SERVICE_NAME)
tracer = Tracer(service=SERVICE_NAME)
# The stack's alarms watch these metrics with only the service dimension: add no others.
metrics = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE_NAME)
# A wholly failed batch is reported item by item (not raised): SQS retries exactly those
# messages, and the failure shows in the PromotionErrors metric.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)

#: S3 sends this once when a notification is configured; it names no object.
S3_TEST_EVENT = "s3:TestEvent"


#: The service the function hands each manifest event and fan-out step to (named here for
#: the local stack, which may not import promotion).
Promoter = PromotionService
#: What starts fan-out executions, given the settings and the staging bucket (``None``: every
#: run is promoted in one invocation).
LauncherFactory = Callable[[PromoterSettings, Bucket], Launcher | None]
#: A Lambda handler: the event and the context in, the response out.
LambdaHandler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]


def state_machine_launcher(settings: PromoterSettings, staging: Bucket) -> Launcher | None:
    """What starts fan-out executions: none without a state machine, else Step Functions."""
    if not settings.fanout_state_machine_arn:
        return None
    return StepFunctionsLauncher(boto3.client("stepfunctions"), settings.fanout_state_machine_arn)


def build_promoter(launchers: LauncherFactory = state_machine_launcher) -> PromotionService:
    """The promotion service with its projections, from the environment's settings;
    ``launchers`` builds what starts the service's fan-out executions."""
    redact.install(streams=False)
    settings = PromoterSettings.from_env(os.environ)
    # Adaptive retries absorb S3 503 SlowDown before a message has to be redelivered.
    config = Config(retries={"mode": "adaptive", "max_attempts": 8}, max_pool_connections=32)
    s3 = boto3.client("s3", config=config)
    invalidator = None
    if settings.nightly_distribution_id:
        invalidator = CloudFrontInvalidator(boto3.client("cloudfront", config=config))
    staging = Bucket(s3, settings.staging_bucket)
    launcher = launchers(settings, staging)
    # The queues take back a failed fan-out execution's event and an import that goes on in
    # the next invocation.
    queue = None
    if settings.manifest_queue_url or settings.dead_letter_queue_url:
        queue = SqsSender(queue_client())
    signer = None
    if settings.verdict_key_arn:
        signer = KmsSigner(boto3.client("kms", config=config), settings.verdict_key_arn)
    return build_service(
        settings=settings,
        staging=staging,
        nightly=Bucket(s3, settings.nightly_bucket),
        invalidator=invalidator,
        metrics=DecisionMetrics(metrics, namespace=METRICS_NAMESPACE),
        status_site=StatusSite.of(settings, staging, metrics),
        launcher=launcher,
        queue=queue,
        signer=signer,
        page_writer=HistoryPageWriter(
            staging,
            nightly_base_url=settings.nightly_base_url,
            repository_url=settings.repository_url,
            clock=lambda: datetime.now(UTC),
        ),
    )


@cache
def promoter() -> PromotionService:
    """The function's service, built on first use and kept for the container's life (no work
    at import). A build that raised is not kept: the next message builds it again."""
    return build_promoter()


def built(parts: Callable[[], PromotionService]) -> PromotionService:
    """What ``parts`` returns; on a :class:`SettingsError`, an ERROR line for each missing or
    bad variable and one count of ``METRIC_SETTINGS_ERRORS``, then the error again, so the
    message (or step) fails and nothing is released. Any other failure to build (a client
    that cannot be made, say) is logged at ERROR with its traceback and counted as one
    ``METRIC_PROMOTION_ERRORS``, then raised. The batch
    processor logs a message's exception at debug only: without these lines the gate would
    fail closed in silence."""
    try:
        return parts()
    except SettingsError as exc:
        problems = exc.problems or (SettingProblem("", str(exc)),)
        for problem in problems:
            logger.error(
                f"promoter settings error, nothing released: {problem.problem}",
                extra={"variable": problem.variable, "problem": problem.problem},
            )
        metrics.add_metric(name=METRIC_SETTINGS_ERRORS, unit=MetricUnit.Count, value=1)
        raise
    except Exception as exc:
        logger.exception(
            f"promoter could not be built, nothing released: {type(exc).__name__}: {exc}"
        )
        metrics.add_metric(name=METRIC_PROMOTION_ERRORS, unit=MetricUnit.Count, value=1)
        raise


@cache
def queue_client() -> SQSClient:
    """The SQS client that retries busy messages sooner, built on first use."""
    return boto3.client("sqs")


def queue_url(queue_arn: str) -> str:
    """The URL of the queue ``arn:<partition>:sqs:<region>:<account>:<name>`` (SQS routes a
    request by the client's endpoint; the URL names the account and the queue)."""
    parts = queue_arn.split(":")
    if len(parts) != 6 or parts[2] != "sqs":
        raise ValueError(f"not an SQS queue ARN: {queue_arn!r}")
    _, partition, _, region, account, name = parts
    domain = "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com"
    return f"https://sqs.{region}.{domain}/{account}/{name}"


def retry_soon(record: SQSRecord, seconds: int) -> None:
    """Make ``record``'s message visible again after ``seconds``. Best effort: when this
    fails, the message comes back after the queue's visibility timeout."""
    try:
        queue_client().change_message_visibility(
            QueueUrl=queue_url(record.event_source_arn),
            ReceiptHandle=record.receipt_handle,
            VisibilityTimeout=seconds,
        )
    except Exception:
        logger.exception("message visibility not shortened")


def quoted_etag(etag: str | None) -> str | None:
    """An event's ``eTag`` (S3 sends it bare) as S3's If-Match takes it, quoted."""
    if not etag:
        return None
    return etag if etag.startswith('"') else f'"{etag}"'


def aware(moment: datetime) -> datetime:
    """An event time as an aware datetime (S3 writes UTC with a ``Z``; a bare one is UTC too)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def manifest_events(body: str, staging_bucket: str) -> list[ManifestEvent]:
    """The manifest events in one SQS message body (none for S3's test event).

    Raises ``ValueError`` (and so sends the message towards the dead-letter queue) for a body
    that is not an S3 event notification.
    """
    try:
        payload = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ValueError(f"message body is not JSON: {exc}") from exc
    if isinstance(payload, dict) and payload.get("Event") == S3_TEST_EVENT:
        return []
    try:
        records = parse(event=payload, model=S3Model).Records
    except (InvalidModelTypeError, TypeError, AttributeError, KeyError) as exc:
        raise ValueError(f"message body is not an S3 event notification: {exc!r}") from exc
    events = []
    for record in records:
        if not record.eventName.startswith("ObjectCreated"):
            continue
        if record.s3.bucket.name != staging_bucket:
            logger.warning(
                "event for another bucket ignored", extra={"bucket": record.s3.bucket.name}
            )
            continue
        key = unquote_plus(record.s3.object.key) if record.s3.object else ""
        events.append(
            ManifestEvent(
                key=key,
                principal_id=record.userIdentity.principalId,
                etag=quoted_etag(record.s3.object.eTag) if record.s3.object else None,
                body=body,
                event_time=aware(record.eventTime),
            )
        )
    return events


@tracer.capture_method
def record_handler(record: SQSRecord, parts: Callable[[], PromotionService] = promoter) -> None:
    """Hand each manifest event of one SQS message to the service ``parts`` returns and report
    its decision; raise (and so fail only this message) on a poison body, a settings error or
    a transient error."""
    service = built(parts)
    try:
        events = manifest_events(record.body, service.settings.staging_bucket)
    except ValueError:
        logger.exception("poison message: retried, then moved to the dead-letter queue")
        metrics.add_metric(name=METRIC_POISON_MESSAGES, unit=MetricUnit.Count, value=1)
        raise
    for event in events:
        logger.append_keys(manifest_key=event.key)
        try:
            decision = service.handle(event)
        except LeaseBusy as exc:
            # A fan-out job may hold the lease for hours: come back less often, so the
            # receives before the dead-letter queue outlast it.
            delay = FANOUT_LEASE_BUSY_RETRY_SECONDS if exc.fanout else LEASE_BUSY_RETRY_SECONDS
            logger.warning(
                "index directory busy; the message will be retried",
                extra={"retry_in_seconds": delay, "error": str(exc)},
            )
            metrics.add_metric(name=METRIC_INDEX_BUSY, unit=MetricUnit.Count, value=1)
            service.record_failure(event.key, exc)
            retry_soon(record, delay)
            raise
        except Exception as exc:
            logger.exception("promotion failed; the message will be retried")
            metrics.add_metric(name=METRIC_PROMOTION_ERRORS, unit=MetricUnit.Count, value=1)
            service.record_failure(event.key, exc)
            raise
        if decision is None:
            logger.info("not a manifest, or the manifest is gone; nothing to do")
            continue
        report(decision.record)


def report(result: PromotionRecord) -> None:
    """Log the decision ``result`` records, at WARNING for a rejection or an ignored write."""
    decision = {
        "run_id": result.run_id,
        "state": result.state.value,
        "reason": result.reason,
        "decision_message": result.message,
    }
    if result.state is State.PENDING and result.reason is None:
        logger.info("promotion handed to a fan-out execution", extra=decision)
    elif result.state is State.PENDING:
        # An untrusted write, noted without deciding the run.
        logger.warning("manifest ignored", extra=decision)
    elif result.state is State.PROMOTED:
        logger.info("promoted", extra=decision)
    else:
        logger.warning("rejected", extra=decision)


def entry_point(parts: Callable[[], PromotionService]) -> LambdaHandler:
    """A handler of SQS batches and fan-out steps over the service ``parts`` returns (called
    once per message or step, so a cached ``parts`` builds it on the first), with the
    function's logging, tracing and metrics."""

    # Named as the function's entry point: X-Ray names the handler's subsegment after it.
    # clear_state: keys a step appended (its job id) must not label a later invocation's logs
    # in the same warm container.
    @logger.inject_lambda_context(clear_state=True)
    @tracer.capture_lambda_handler
    @metrics.log_metrics
    def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        if FANOUT_STEP_FIELD in event:
            return fanout_step(event, parts)
        return dict(
            process_partial_response(
                event=event,
                record_handler=partial(record_handler, parts=parts),
                processor=processor,
                context=context,
            )
        )

    return lambda_handler


#: The function's handler over the container's own :func:`promoter`.
_container_handler = entry_point(promoter)


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """The promoter function's entry point, which the stack names: SQS batches of manifest
    events, and the fan-out state machine's steps."""
    return _container_handler(event, context)


def fanout_step(
    event: dict[str, Any], parts: Callable[[], PromotionService] = promoter
) -> dict[str, Any]:
    """Run one step of a fan-out execution; its exception is the step's error."""
    service = built(parts)
    logger.append_keys(fanout_step=event.get(FANOUT_STEP_FIELD), job_id=event.get("job_id"))
    return service.step(event)
