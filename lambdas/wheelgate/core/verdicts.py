"""Signed verdicts: the statement the promoter signs for every file it releases. Pure.

A verdict is an in-toto Statement v1 whose predicate is a SLSA Verification Summary
Attestation v1 (VSA): *this gate* verified *these bytes* (the subject: file name and SHA-256)
against its release rules, on the evidence of *this manifest* (``inputAttestations``), and the
result was PASSED. WheelGate's own facts (run, commit, index directory, the tests whose install
evidence matched these bytes; for a break-glass override the reason and actor instead) travel
in the predicate under :data:`EXTENSION_KEY`. docs/verdicts.md documents every field.

The statement is wrapped in a DSSE envelope (``payloadType`` :data:`PAYLOAD_TYPE`); the
signature is ECDSA P-256 with SHA-256 over DSSE's pre-authentication encoding
(:func:`pae`) of the type and the payload bytes, made by an AWS KMS key
(``storage/signing.py``). A key is named by its ``keyid``: the SHA-256 (hex) of its public key's
DER SubjectPublicKeyInfo (:func:`keyid_of`), which anyone holding the PEM can recompute.

The envelope is stored beside the file in nightly as ``<file>`` + :data:`VERDICT_SUFFIX`,
written once; the public keys at :data:`~wheelgate.core.layout.VERDICT_KEYS_KEY`
(:class:`KeyDocument`). Checking an envelope needs ``cryptography``: see
:mod:`wheelgate.core.signatures` (the promoter never verifies, so it does not import it).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from wheelgate import __version__

#: in-toto Statement v1 and the SLSA VSA v1 predicate.
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
VSA_PREDICATE_TYPE = "https://slsa.dev/verification_summary/v1"
#: DSSE payload type of an in-toto statement.
PAYLOAD_TYPE = "application/vnd.in-toto+json"
#: WheelGate's fields inside the VSA predicate (an extension: VSA consumers ignore it).
EXTENSION_KEY = "https://wheelgate.dev/verdict/v1"
#: The release rules a promotion applies (docs/manifest.md, Acceptance): the VSA ``policy``.
#: Bump the version when what a promotion checks changes.
POLICY_URI = "https://wheelgate.dev/policy/release-rules/v2"
#: VSA ``verifiedLevels`` take custom values that do not start with ``SLSA_``: a verdict says
#: nothing about the build (no SLSA build level), only that the gate's checks passed.
LEVEL_TESTED = "WHEELGATE_TESTED_V1"
#: An override (tests skipped by the break-glass role) or an import: integrity checked, no tests.
LEVEL_UNTESTED = "WHEELGATE_INTEGRITY_ONLY_V1"
#: Kinds of release a verdict records.
KIND_PROMOTION = "promotion"
KIND_OVERRIDE = "override"
KIND_IMPORT = "import"
#: Signature algorithm of every verdict key (the KMS key spec ``ECC_NIST_P256`` with
#: ``ECDSA_SHA_256``); named in the keys document so a verifier need not guess.
KEY_ALGORITHM = "ecdsa-sha2-nistp256"
#: The JSON page field and HTML attribute that link a file's verdict (docs/verdicts.md: PEP 691
#: reserves keys starting with ``_`` for index-server-specific data; PEP 740's ``provenance``
#: means publish attestations, which a verdict is not).
JSON_FIELD = "_wheelgate_verdict"
HTML_ATTRIBUTE = "data-wheelgate-verdict"
#: Content type of a stored envelope.
ENVELOPE_CONTENT_TYPE = "application/json"


class VerdictFormatError(ValueError):
    """An envelope, statement or keys document that is not one WheelGate writes."""


@dataclass(frozen=True)
class EvidenceTest:
    """A passed test whose install evidence matched the file's bytes."""

    name: str
    url: str | None = None


@dataclass(frozen=True)
class VerdictFacts:
    """Everything one file's verdict states.

    ``gate`` is the deployment's identity (its nightly base URL), ``resource_uri`` the file's
    nightly URL, ``manifest_uri``/``manifest_sha256`` the manifest decided on, ``at`` the
    verification time (an upload-time string). ``override`` (``reason`` and ``by``) is set for a
    break-glass release or an import, whose ``tests`` are then empty; ``extra`` adds fields to
    the extension (an import's ``source``). ``commit`` is ``None`` for an import.
    """

    filename: str
    sha256: str
    gate: str
    resource_uri: str
    at: str
    manifest_uri: str
    manifest_sha256: str
    run_id: str
    commit: str | None
    index: str
    tests: tuple[EvidenceTest, ...] = ()
    override: Mapping[str, str] | None = None
    kind: str = KIND_PROMOTION
    extra: Mapping[str, str] = field(default_factory=dict)


def build_statement(facts: VerdictFacts) -> dict[str, Any]:
    """The in-toto Statement v1 (SLSA VSA v1 predicate) of ``facts``."""
    extension: dict[str, Any] = {
        "kind": facts.kind,
        "runId": facts.run_id,
        **({"commit": facts.commit} if facts.commit else {}),
        "index": facts.index,
        "tests": [{"name": t.name, **({"url": t.url} if t.url else {})} for t in facts.tests],
    }
    if facts.override is not None:
        extension["reason"] = facts.override.get("reason", "")
        extension["actor"] = facts.override.get("by", "")
    extension.update(facts.extra)
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": facts.filename, "digest": {"sha256": facts.sha256}}],
        "predicateType": VSA_PREDICATE_TYPE,
        "predicate": {
            "verifier": {"id": facts.gate, "version": {"wheelgate": __version__}},
            "timeVerified": facts.at,
            "resourceUri": facts.resource_uri,
            "policy": {"uri": POLICY_URI},
            "inputAttestations": [
                {"uri": facts.manifest_uri, "digest": {"sha256": facts.manifest_sha256}}
            ],
            "verificationResult": "PASSED",
            "verifiedLevels": [LEVEL_TESTED if facts.tests else LEVEL_UNTESTED],
            EXTENSION_KEY: extension,
        },
    }


def statement_bytes(statement: Mapping[str, Any]) -> bytes:
    """The payload bytes of ``statement``: compact, sorted JSON (the bytes signed)."""
    return json.dumps(statement, sort_keys=True, separators=(",", ":")).encode()


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: what a DSSE signature signs.

    ``"DSSEv1" SP LEN(type) SP type SP LEN(body) SP body``, lengths as ASCII decimals of the
    byte lengths.
    """
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def envelope_bytes(payload: bytes, *, keyid: str, signature: bytes) -> bytes:
    """The DSSE envelope (JSON) of ``payload`` signed by ``keyid`` with ``signature`` (DER)."""
    doc = {
        "payloadType": PAYLOAD_TYPE,
        "payload": base64.b64encode(payload).decode(),
        "signatures": [{"keyid": keyid, "sig": base64.b64encode(signature).decode()}],
    }
    return (json.dumps(doc, indent=2) + "\n").encode()


@dataclass(frozen=True)
class Envelope:
    """A parsed DSSE envelope: its payload bytes and ``(keyid, signature)`` pairs."""

    payload_type: str
    payload: bytes
    signatures: tuple[tuple[str, bytes], ...]

    def statement(self) -> dict[str, Any]:
        """The payload as a JSON object; :class:`VerdictFormatError` if it is not one."""
        try:
            doc = json.loads(self.payload)
        except ValueError as exc:
            raise VerdictFormatError(f"the envelope's payload is not JSON: {exc}") from exc
        if not isinstance(doc, dict):
            raise VerdictFormatError("the envelope's payload is not a JSON object")
        return doc


def parse_envelope(raw: bytes) -> Envelope:
    """Read a DSSE envelope; raise :class:`VerdictFormatError` naming what is wrong."""
    try:
        doc = json.loads(raw)
        payload_type = doc["payloadType"]
        payload = base64.b64decode(doc["payload"], validate=True)
        signatures = tuple(
            (str(s["keyid"]), base64.b64decode(s["sig"], validate=True)) for s in doc["signatures"]
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise VerdictFormatError(f"not a DSSE envelope: {exc!r}") from exc
    if not isinstance(payload_type, str) or not signatures:
        raise VerdictFormatError("not a DSSE envelope: no payload type or no signature")
    return Envelope(payload_type=payload_type, payload=payload, signatures=signatures)


def keyid_of(public_key_der: bytes) -> str:
    """A verdict key's id: SHA-256 (hex) of its DER SubjectPublicKeyInfo."""
    return hashlib.sha256(public_key_der).hexdigest()


def pem_of(public_key_der: bytes) -> str:
    """The PEM text of a DER SubjectPublicKeyInfo."""
    body = base64.b64encode(public_key_der).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "\n".join(["-----BEGIN PUBLIC KEY-----", *lines, "-----END PUBLIC KEY-----", ""])


class PublishedKey(BaseModel):
    """One verdict key in the keys document. ``retired`` is when a newer key took over
    (statements it signed before still verify); ``revoked`` marks a compromised key, under
    which nothing verifies (docs/operations.md)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    keyid: str
    algorithm: str = KEY_ALGORITHM
    pem: str
    valid_from: str
    retired: str | None = None
    revoked: str | None = None


class KeyDocument(BaseModel):
    """The public keys verdicts are signed with, oldest first; the last unretired one signs."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    schema_version: int = 1
    keys: list[PublishedKey] = []

    def find(self, keyid: str) -> PublishedKey | None:
        return next((k for k in self.keys if k.keyid == keyid), None)

    def with_signing_key(self, key: PublishedKey) -> KeyDocument:
        """This document with ``key`` as the signing key: added if new, every other unretired
        key retired as of ``key.valid_from``. The same document when ``key`` signs already."""
        if self.find(key.keyid) is not None and all(
            (k.keyid == key.keyid) == (k.retired is None) for k in self.keys
        ):
            return self
        keys = []
        for k in self.keys:
            if k.keyid == key.keyid:
                keys.append(k.model_copy(update={"retired": None}))
            elif k.retired is None:
                keys.append(k.model_copy(update={"retired": key.valid_from}))
            else:
                keys.append(k)
        if self.find(key.keyid) is None:
            keys.append(key)
        return KeyDocument(schema_version=self.schema_version, keys=keys)

    def to_bytes(self) -> bytes:
        return (self.model_dump_json(indent=2, exclude_none=True) + "\n").encode()


def parse_key_document(raw: bytes) -> KeyDocument:
    """Read a keys document; raise :class:`VerdictFormatError` if it is not one."""
    try:
        return KeyDocument.model_validate_json(raw)
    except ValidationError as exc:
        raise VerdictFormatError(f"not a WheelGate verdict keys document: {exc}") from exc


def evidence_tests(
    names: Sequence[str], tests: Sequence[Mapping[str, str]]
) -> tuple[EvidenceTest, ...]:
    """The tests named in ``names`` (a file's evidence), with the URLs ``tests`` (a set's
    recorded tests) give them."""
    urls = {t.get("name"): t.get("url") for t in tests}
    return tuple(EvidenceTest(name=n, url=urls.get(n)) for n in names)
