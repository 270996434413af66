"""Verdicts without storage: the statement, DSSE's PAE, the keys document, the page fields, and
the KMS signer's retries of throttling."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from wheelgate.core.signatures import VerdictRejected, check_verdict, published_key
from wheelgate.core.verdicts import (
    PAYLOAD_TYPE,
    KeyDocument,
    PublishedKey,
    VerdictFacts,
    build_statement,
    envelope_bytes,
    keyid_of,
    pae,
    pem_of,
    statement_bytes,
)
from wheelgate.index.pages import (
    IndexEntry,
    ProjectPage,
    parse_project_json,
    render_project_html,
    render_project_json,
)
from wheelgate.storage.errors import StorageUnavailable
from wheelgate.storage.signing import KmsSigner

SHA = "ab" * 32
FACTS = VerdictFacts(
    filename="pkg-1.0-py3-none-any.whl",
    sha256=SHA,
    gate="https://nightly.example/",
    resource_uri="https://nightly.example/v2/pkg-1.0-py3-none-any.whl",
    at="2026-01-01T00:00:00.000000Z",
    manifest_uri="s3://staging/manifests/r1.json",
    manifest_sha256="cd" * 32,
    run_id="r1",
    commit="e" * 40,
    index="v2",
)


def test_pae_is_dssev1s_length_prefixed_encoding() -> None:
    # The DSSE v1 specification's own example.
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


def sign(
    private: ec.EllipticCurvePrivateKey, facts: VerdictFacts = FACTS
) -> tuple[bytes, PublishedKey]:
    payload = statement_bytes(build_statement(facts))
    der = private.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    signature = private.sign(pae(PAYLOAD_TYPE, payload), ec.ECDSA(hashes.SHA256()))
    key = published_key(pem_of(der))
    assert key.keyid == keyid_of(der)
    return envelope_bytes(payload, keyid=key.keyid, signature=signature), key


def test_a_verdict_verifies_for_its_file_only_and_under_its_key_only() -> None:
    envelope, key = sign(ec.generate_private_key(ec.SECP256R1()))
    verified = check_verdict(envelope, keys=[key], filename=FACTS.filename, sha256=SHA)
    assert verified.facts["runId"] == "r1"
    with pytest.raises(VerdictRejected, match="sha256"):
        check_verdict(envelope, keys=[key], filename=FACTS.filename, sha256="00" * 32)
    with pytest.raises(VerdictRejected, match="not 'other"):
        check_verdict(envelope, keys=[key], filename="other-1.0-py3-none-any.whl", sha256=SHA)
    with pytest.raises(VerdictRejected, match=r"other\.example"):
        check_verdict(
            envelope, keys=[key], filename=FACTS.filename, sha256=SHA, gate="https://other.example/"
        )
    _, stranger = sign(ec.generate_private_key(ec.SECP256R1()))
    forged = stranger.model_copy(update={"keyid": key.keyid})
    with pytest.raises(VerdictRejected) as refused:
        check_verdict(envelope, keys=[forged], filename=FACTS.filename, sha256=SHA)
    assert refused.value.code == "bad-signature"
    revoked = key.model_copy(update={"revoked": "2026-02-01T00:00:00Z"})
    with pytest.raises(VerdictRejected, match="revoked"):
        check_verdict(envelope, keys=[revoked], filename=FACTS.filename, sha256=SHA)


def test_an_override_verdict_names_reason_and_actor_and_no_tests() -> None:
    statement = build_statement(
        VerdictFacts(
            **{
                **FACTS.__dict__,
                "override": {"by": "oncall", "reason": "GPU down"},
                "kind": "override",
            }
        )
    )
    extension = statement["predicate"]["https://wheelgate.dev/verdict/v1"]
    assert (extension["reason"], extension["actor"], extension["tests"]) == (
        "GPU down",
        "oncall",
        [],
    )
    assert statement["predicate"]["verifiedLevels"] == ["WHEELGATE_INTEGRITY_ONLY_V1"]


def test_a_new_signing_key_retires_the_old_one_and_keeps_it() -> None:
    old = PublishedKey(keyid="a", pem="A", valid_from="t0")
    new = PublishedKey(keyid="b", pem="B", valid_from="t1")
    doc = KeyDocument().with_signing_key(old)
    assert doc.with_signing_key(old) == doc
    rotated = doc.with_signing_key(new)
    assert [(k.keyid, k.retired) for k in rotated.keys] == [("a", "t1"), ("b", None)]
    assert rotated.with_signing_key(new) == rotated


def test_pages_link_the_verdict_and_read_it_back() -> None:
    entry = IndexEntry(
        "pkg-1.0-py3-none-any.whl", "../pkg-1.0-py3-none-any.whl", SHA, 1, "t", verdict=True
    )
    page = ProjectPage(name="pkg", entries=(entry,))
    assert '"_wheelgate_verdict":"../pkg-1.0-py3-none-any.whl.verdict.json"' in render_project_json(
        page
    )
    assert (
        'data-wheelgate-verdict="../pkg-1.0-py3-none-any.whl.verdict.json"'
        in render_project_html(page)
    )
    assert parse_project_json(render_project_json(page)).entries == (entry,)
    unsigned = ProjectPage(
        name="pkg", entries=(IndexEntry(entry.filename, entry.url, SHA, 1, "t"),)
    )
    assert "verdict" not in render_project_json(unsigned) + render_project_html(unsigned)


class ThrottledKms:
    def __init__(self, throttled: int) -> None:
        self.throttled = throttled
        self.calls: list[dict[str, Any]] = []

    def sign(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        if len(self.calls) <= self.throttled:
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow"}}, "Sign")
        return {"Signature": b"sig"}


def test_the_signer_signs_long_messages_as_digests_and_leaves_retries_to_the_client() -> None:
    kms = ThrottledKms(throttled=0)
    signer = KmsSigner(kms, "arn:key")  # type: ignore[arg-type]
    assert signer.sign(b"m" * 5000) == b"sig"
    assert {c["MessageType"] for c in kms.calls} == {"DIGEST"}
    assert len(kms.calls[0]["Message"]) == 32
    assert KmsSigner(ThrottledKms(0), "k").sign(b"short") == b"sig"  # type: ignore[arg-type]
    # Throttling that outlasts the client's own (adaptive) retries is one call here, and a
    # transient error the message is retried on.
    throttled = ThrottledKms(1)
    with pytest.raises(StorageUnavailable, match="ThrottlingException"):
        KmsSigner(throttled, "k").sign(b"m")  # type: ignore[arg-type]
    assert len(throttled.calls) == 1


def test_the_signing_budget_stays_under_kms_ecc_quota() -> None:
    from stacks.promoter_function import MAX_CONCURRENCY
    from wheelgate.core.quotas import (
        KMS_ECC_REQUESTS_PER_SECOND,
        VERDICT_SIGNS_PER_SECOND_FANOUT,
        VERDICT_SIGNS_PER_SECOND_PROMOTION,
    )

    # Every invocation that can run at once, and a fan-out execution's publish step (its copy
    # steps sign nothing, whatever the copy map's concurrency), each at its own pace
    worst = MAX_CONCURRENCY * VERDICT_SIGNS_PER_SECOND_PROMOTION + VERDICT_SIGNS_PER_SECOND_FANOUT
    assert worst <= KMS_ECC_REQUESTS_PER_SECOND


def test_the_pacer_spaces_calls_by_its_rate() -> None:
    from wheelgate.promotion.verdicts import Pacer

    now = [100.0]
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    pacer = Pacer(4, clock=lambda: now[0], sleep=sleep)
    for _ in range(5):
        pacer.wait()
    # The first goes at once; each next one a quarter second after the one before.
    assert waits == [0.25, 0.25, 0.25, 0.25]
    now[0] += 10
    pacer.wait()
    assert len(waits) == 4


def test_pypi_simple_reads_pages_that_link_verdicts() -> None:
    import json

    import pypi_simple

    entry = IndexEntry(
        "pkg-1.0-py3-none-any.whl",
        "../pkg-1.0-py3-none-any.whl",
        SHA,
        1,
        "2026-01-01T00:00:00.000000Z",
        verdict=True,
    )
    page = ProjectPage(name="pkg", entries=(entry,))
    base = "https://nightly.example/v2/pkg/"
    for parsed in (
        pypi_simple.ProjectPage.from_json_data(json.loads(render_project_json(page)), base),
        pypi_simple.ProjectPage.from_html("pkg", render_project_html(page), base),
    ):
        (package,) = parsed.packages
        assert package.filename == entry.filename
        assert package.url == "https://nightly.example/v2/pkg-1.0-py3-none-any.whl"
        assert package.digests == {"sha256": SHA}
