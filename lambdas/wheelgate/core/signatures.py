"""Checking a verdict: the envelope's signature, and that its statement is about these bytes.

Pure (no I/O); needs ``cryptography`` for ECDSA, which the base install of ``wheelgate``
carries and the promoter does not import (it signs through KMS and never verifies). The checks,
in the order :func:`check_verdict` makes them:

1. the envelope is a DSSE envelope of an in-toto statement (``payloadType``);
2. one of its signatures verifies, under a key of the given keys that is not revoked
   (ECDSA P-256 / SHA-256 over DSSE's PAE of the payload);
3. the statement is an in-toto Statement v1 with the SLSA VSA v1 predicate, PASSED;
4. its subject names the expected file name and its sha256 is the file's;
5. (when a gate is expected) its verifier is that gate.

Each failure raises :class:`VerdictRejected` with a machine ``code`` and a sentence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from wheelgate.core.verdicts import (
    EXTENSION_KEY,
    PAYLOAD_TYPE,
    STATEMENT_TYPE,
    VSA_PREDICATE_TYPE,
    PublishedKey,
    VerdictFormatError,
    keyid_of,
    pae,
    parse_envelope,
)


class VerdictRejected(Exception):
    """A verdict that does not verify or is not about the file: ``code`` says which check."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(message)


@dataclass(frozen=True)
class VerifiedVerdict:
    """What a verified statement says, as ``wheelgate verify`` prints it."""

    filename: str
    sha256: str
    keyid: str
    gate: str
    time_verified: str
    resource_uri: str
    statement: dict[str, Any]

    @property
    def facts(self) -> Mapping[str, Any]:
        """WheelGate's extension (run, commit, index, tests; reason and actor)."""
        found = self.statement["predicate"].get(EXTENSION_KEY, {})
        return found if isinstance(found, Mapping) else {}


def load_public_key(pem: str | bytes) -> ec.EllipticCurvePublicKey:
    """A P-256 public key from PEM; :class:`VerdictFormatError` for anything else."""
    data = pem.encode() if isinstance(pem, str) else pem
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError as exc:
        raise VerdictFormatError(f"not a PEM public key: {exc}") from exc
    if not isinstance(key, ec.EllipticCurvePublicKey) or not isinstance(key.curve, ec.SECP256R1):
        raise VerdictFormatError("not an ECDSA P-256 public key")
    return key


def published_key(pem: str | bytes, *, valid_from: str = "") -> PublishedKey:
    """A key given as PEM (``--key``), as the keys document would list it."""
    key = load_public_key(pem)
    der = key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    text = pem.decode() if isinstance(pem, bytes) else pem
    return PublishedKey(keyid=keyid_of(der), pem=text, valid_from=valid_from)


def _signed_by(
    payload: bytes, signatures: Sequence[tuple[str, bytes]], keys: Sequence[PublishedKey]
) -> str:
    """The keyid of the first signature that verifies under a non-revoked key of ``keys``."""
    by_id = {k.keyid: k for k in keys}
    message = pae(PAYLOAD_TYPE, payload)
    known = [(keyid, sig) for keyid, sig in signatures if keyid in by_id]
    if not known:
        ids = ", ".join(keyid for keyid, _ in signatures)
        raise VerdictRejected("unknown-key", f"signed by key {ids}, which is not a published key")
    for keyid, sig in known:
        key = by_id[keyid]
        if key.revoked is not None:
            raise VerdictRejected(
                "revoked-key", f"signed by key {keyid}, revoked since {key.revoked}"
            )
        try:
            load_public_key(key.pem).verify(sig, message, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            continue
        return keyid
    raise VerdictRejected("bad-signature", "the signature does not verify under its key")


def check_verdict(
    raw_envelope: bytes,
    *,
    keys: Sequence[PublishedKey],
    filename: str,
    sha256: str,
    gate: str | None = None,
) -> VerifiedVerdict:
    """Verify ``raw_envelope`` (a stored verdict) for the file ``filename`` whose bytes have
    SHA-256 ``sha256``, under ``keys``; with ``gate``, the statement must be that gate's.

    Raises :class:`VerdictRejected` for a verdict that does not verify or is about other
    bytes, another file or another gate; :class:`~wheelgate.core.verdicts.VerdictFormatError`
    for bytes that are no envelope at all.
    """
    envelope = parse_envelope(raw_envelope)
    if envelope.payload_type != PAYLOAD_TYPE:
        raise VerdictRejected(
            "payload-type", f"payload type is {envelope.payload_type!r}, not {PAYLOAD_TYPE!r}"
        )
    keyid = _signed_by(envelope.payload, envelope.signatures, keys)
    statement = envelope.statement()
    predicate = statement.get("predicate")
    if (
        statement.get("_type") != STATEMENT_TYPE
        or statement.get("predicateType") != VSA_PREDICATE_TYPE
        or not isinstance(predicate, dict)
    ):
        raise VerdictRejected("not-a-vsa", "the statement is not an in-toto SLSA VSA v1 statement")
    if predicate.get("verificationResult") != "PASSED":
        raise VerdictRejected(
            "not-passed", f"verification result is {predicate.get('verificationResult')!r}"
        )
    subjects = statement.get("subject")
    subject = subjects[0] if isinstance(subjects, list) and len(subjects) == 1 else None
    if not isinstance(subject, dict) or not isinstance(subject.get("digest"), dict):
        raise VerdictRejected("subject", "the statement does not have exactly one subject")
    if subject.get("name") != filename:
        raise VerdictRejected(
            "wrong-file", f"the statement is about {subject.get('name')!r}, not {filename!r}"
        )
    stated = subject["digest"].get("sha256")
    if stated != sha256:
        raise VerdictRejected(
            "digest-mismatch",
            f"{filename} has sha256 {sha256}; the statement is about sha256 {stated}",
        )
    verifier = predicate.get("verifier")
    verifier_id = str(verifier.get("id", "")) if isinstance(verifier, dict) else ""
    if gate is not None and verifier_id.rstrip("/") != gate.rstrip("/"):
        raise VerdictRejected(
            "other-gate", f"the statement was made by {verifier_id!r}, not by {gate!r}"
        )
    return VerifiedVerdict(
        filename=filename,
        sha256=sha256,
        keyid=keyid,
        gate=verifier_id,
        time_verified=str(predicate.get("timeVerified", "")),
        resource_uri=str(predicate.get("resourceUri", "")),
        statement=statement,
    )
