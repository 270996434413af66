"""What the storage adapters raise instead of botocore's exceptions, and the one translation.

Every adapter call goes through :func:`translated`, so no ``ClientError`` or ``BotoCoreError``
(nor a urllib3 error botocore let through) leaves ``storage/``: a lost condition is
:class:`PreconditionFailed`, an endpoint that cannot be reached, a timeout, throttling or a
server error that outlasted the client's retries is :class:`StorageUnavailable` (a
:class:`~wheelgate.core.errors.TransientError`: the promoter retries its message), and a refusal
(permissions, bad or missing credentials, a missing bucket, a bad configuration) is
:class:`AccessError`. Each names the operation, what it acted on, the endpoint and the error
class, on one line.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import (
    BotoCoreError,
    ChecksumError,
    ClientError,
    ConnectionError,
    CredentialRetrievalError,
    FlexibleChecksumError,
    HTTPClientError,
    IncompleteReadError,
    NoAuthTokenError,
    NoCredentialsError,
    PartialCredentialsError,
    SSOError,
    TokenRetrievalError,
)
from urllib3.exceptions import HTTPError as Urllib3Error

from wheelgate.core.errors import TransientError

#: Error codes of a conditional write that lost (If-None-Match / If-Match).
PRECONDITION_CODES = frozenset({"412", "PreconditionFailed", "ConditionalRequestConflict", "409"})
#: Error codes worth retrying: throttling and server errors.
TRANSIENT_CODES = frozenset(
    {
        "SlowDown",
        "InternalError",
        "ServiceUnavailable",
        "RequestTimeout",
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
    }
)
#: botocore errors of the network or the transfer: the same call may well succeed later.
_UNAVAILABLE = (
    ConnectionError,
    HTTPClientError,
    IncompleteReadError,
    ChecksumError,
    FlexibleChecksumError,
    Urllib3Error,
)
#: botocore errors of the caller's credentials.
_CREDENTIALS = (
    NoCredentialsError,
    PartialCredentialsError,
    CredentialRetrievalError,
    NoAuthTokenError,
    TokenRetrievalError,
    SSOError,
)


class PreconditionFailed(Exception):
    """A conditional write lost: the object exists (If-None-Match) or changed (If-Match)."""


class StorageError(Exception):
    """A storage call failed: ``operation`` (``GetObject``...) on ``target``
    (``s3://bucket/key``, a queue, a distribution) at ``endpoint``, with ``error`` (botocore's
    exception class, or the service's error code) and botocore's ``detail``."""

    def __init__(
        self, *, operation: str, target: str, endpoint: str | None, error: str, detail: str
    ) -> None:
        self.operation = operation
        self.target = target
        self.endpoint = endpoint
        self.error = error
        self.detail = " ".join(detail.split())
        super().__init__(str(self))

    def __str__(self) -> str:
        at = f" at {self.endpoint}" if self.endpoint else ""
        return f"{self.operation} {self.target}{at}: {self.error}: {self.detail}"


class AccessError(StorageError):
    """Storage refused the call: permissions, bad or missing credentials, a missing bucket,
    a configuration botocore cannot use."""


class StorageUnavailable(StorageError, TransientError):
    """Storage could not be reached or did not answer in time, or kept throttling or failing
    after the client's retries."""


def error_code(exc: ClientError) -> str:
    """The service's error code of ``exc`` (``SlowDown``, ``NoSuchKey``...)."""
    return str(exc.response.get("Error", {}).get("Code", ""))


def http_status(exc: ClientError) -> str:
    """The HTTP status of ``exc``'s response, as text (empty when there was none)."""
    return str(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))


def _client_error(exc: ClientError, operation: str, target: str, endpoint: str | None) -> Exception:
    code, status = error_code(exc), http_status(exc)
    if code in PRECONDITION_CODES or status in ("412", "409"):
        return PreconditionFailed(f"{target}: {code or status}")
    attempts = int(exc.response.get("ResponseMetadata", {}).get("RetryAttempts", 0)) + 1
    # An error without a body (any HEAD's) has only its status for a code.
    named = bool(code) and code != status
    said = ([f"HTTP {status}"] if named and status else []) + (
        [f"{attempts} attempts"] if attempts > 1 else []
    )
    kind = StorageUnavailable if code in TRANSIENT_CODES or status.startswith("5") else AccessError
    return kind(
        operation=exc.operation_name or operation,
        target=target,
        endpoint=endpoint,
        error=(code if named else f"HTTP {status}") + (f" ({', '.join(said)})" if said else ""),
        detail=str(exc.response.get("Error", {}).get("Message", "")) or str(exc),
    )


def translate(
    exc: ClientError | BotoCoreError | Urllib3Error,
    *,
    operation: str,
    target: str,
    endpoint: str | None,
) -> Exception:
    """The adapter's exception for botocore's (or urllib3's) ``exc``, raised by ``operation``
    on ``target`` at ``endpoint``."""
    if isinstance(exc, ClientError):
        return _client_error(exc, operation, target, endpoint)
    unavailable = isinstance(exc, _UNAVAILABLE) and not isinstance(exc, _CREDENTIALS)
    kind = StorageUnavailable if unavailable else AccessError
    return kind(
        operation=operation,
        target=target,
        endpoint=endpoint,
        error=type(exc).__name__,
        detail=str(exc),
    )


def endpoint_of(client: Any) -> str | None:
    """The endpoint URL a boto3 client sends to (``None`` for an object without one)."""
    url = getattr(getattr(client, "meta", None), "endpoint_url", None)
    return str(url) if url else None


@contextmanager
def translated(operation: str, target: str, endpoint: str | None) -> Iterator[None]:
    """Raise the adapter's exception (:func:`translate`) for any botocore or urllib3 error
    raised inside the block."""
    try:
        yield
    except (ClientError, BotoCoreError, Urllib3Error) as exc:
        raise translate(exc, operation=operation, target=target, endpoint=endpoint) from exc


def s3_translated(client: Any, operation: str, bucket: str, key: str) -> Any:
    """:func:`translated` for ``operation`` on ``s3://bucket/key`` through ``client``'s
    endpoint."""
    return translated(operation, f"s3://{bucket}/{key}", endpoint_of(client))
