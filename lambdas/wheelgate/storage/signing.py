"""The KMS adapter that signs verdicts: one asymmetric key (``ECC_NIST_P256``).

Errors are translated as the S3 adapters' are (:mod:`wheelgate.storage.errors`): throttling and
server errors that outlast the retries here are :class:`StorageUnavailable` (the promoter's
message is retried), a refusal or a disabled key is :class:`AccessError`.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ClientError

from wheelgate.storage.bucket import retry_delay
from wheelgate.storage.errors import TRANSIENT_CODES, endpoint_of, error_code, translated

if TYPE_CHECKING:
    from mypy_boto3_kms import KMSClient
    from mypy_boto3_kms.literals import MessageTypeType

#: KMS Sign takes a message of at most 4,096 bytes; a longer one is signed as its SHA-256
#: digest (``MessageType=DIGEST``), which yields the same ECDSA-SHA256 signature.
RAW_MESSAGE_LIMIT = 4096
#: The only algorithm an ``ECC_NIST_P256`` key signs verdicts with.
SIGNING_ALGORITHM: Final = "ECDSA_SHA_256"
#: Attempts at one Sign that KMS throttles (its request quota is shared by the account and
#: region: docs/verdicts.md, Cost), on top of the client's own retries.
SIGN_ATTEMPTS = 6


class KmsSigner:
    """Signs with the KMS key ``key_id`` (an ARN) through ``client`` (a boto3 KMS client).

    ``sleep`` waits between throttled attempts (tests pass a recorder).
    """

    def __init__(
        self, client: KMSClient, key_id: str, *, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.client = client
        self.key_id = key_id
        self.sleep = sleep
        self._public_key: bytes | None = None

    def _translated(self, operation: str) -> Any:
        return translated(operation, f"kms key {self.key_id}", endpoint_of(self.client))

    def public_key_der(self) -> bytes:
        """The key's DER SubjectPublicKeyInfo (read once per signer)."""
        if self._public_key is None:
            with self._translated("GetPublicKey"):
                response = self.client.get_public_key(KeyId=self.key_id)
            self._public_key = bytes(response["PublicKey"])
        return self._public_key

    def sign(self, message: bytes) -> bytes:
        """The DER ECDSA P-256 / SHA-256 signature of ``message``.

        Retries KMS throttling with jittered exponential backoff (``SIGN_ATTEMPTS`` in all);
        raises :class:`~wheelgate.storage.errors.StorageUnavailable` when it persists.
        """
        kind: MessageTypeType = "RAW"
        if len(message) > RAW_MESSAGE_LIMIT:
            message, kind = hashlib.sha256(message).digest(), "DIGEST"
        for attempt in range(1, SIGN_ATTEMPTS + 1):
            with self._translated("Sign"):
                try:
                    response = self.client.sign(
                        KeyId=self.key_id,
                        Message=message,
                        MessageType=kind,
                        SigningAlgorithm=SIGNING_ALGORITHM,
                    )
                except ClientError as exc:
                    if error_code(exc) not in TRANSIENT_CODES or attempt == SIGN_ATTEMPTS:
                        raise
                    self.sleep(retry_delay(attempt))
                    continue
            return bytes(response["Signature"])
        raise AssertionError("unreachable: the last attempt returns or raises")
