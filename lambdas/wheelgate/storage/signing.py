"""The KMS adapter that signs verdicts: one asymmetric key (``ECC_NIST_P256``).

Errors are translated as the S3 adapters' are (:mod:`wheelgate.storage.errors`): throttling and
server errors that outlast the client's own retries (the promoter's KMS client retries in
botocore's adaptive mode, which also paces its requests) are :class:`StorageUnavailable` (the
promoter's message is retried), a refusal or a disabled key is :class:`AccessError`.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Final

from wheelgate.storage.errors import endpoint_of, translated

if TYPE_CHECKING:
    from mypy_boto3_kms import KMSClient
    from mypy_boto3_kms.literals import MessageTypeType

#: KMS Sign takes a message of at most 4,096 bytes; a longer one is signed as its SHA-256
#: digest (``MessageType=DIGEST``), which yields the same ECDSA-SHA256 signature.
RAW_MESSAGE_LIMIT = 4096
#: The only algorithm an ``ECC_NIST_P256`` key signs verdicts with.
SIGNING_ALGORITHM: Final = "ECDSA_SHA_256"


class KmsSigner:
    """Signs with the KMS key ``key_id`` (an ARN) through ``client`` (a boto3 KMS client,
    whose own retry configuration absorbs throttling)."""

    def __init__(self, client: KMSClient, key_id: str) -> None:
        self.client = client
        self.key_id = key_id
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

        Raises :class:`~wheelgate.storage.errors.StorageUnavailable` when KMS throttling
        outlasts the client's retries.
        """
        kind: MessageTypeType = "RAW"
        if len(message) > RAW_MESSAGE_LIMIT:
            message, kind = hashlib.sha256(message).digest(), "DIGEST"
        with self._translated("Sign"):
            response = self.client.sign(
                KeyId=self.key_id,
                Message=message,
                MessageType=kind,
                SigningAlgorithm=SIGNING_ALGORITHM,
            )
        return bytes(response["Signature"])
