"""Signed verdicts: every released file carries a statement anyone can verify offline.

The local stack's promoter signs through moto's KMS (ECDSA P-256), as the stack's does through
AWS KMS. Verdicts are checked by ``wheelgate verify`` (real HTTP to the local nightly server) and
by implementations this project did not write: securesystemslib's DSSE envelope and ECDSA key,
and jsonschema against the in-toto Statement v1 and SLSA VSA v1 required fields.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import jsonschema
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import SSlibKey

from tests.integration.conftest import uv_binary
from tests.integration.test_promoter import COMMIT, Run, wheel
from tests.unit.test_verdicts import sign
from wheelgate.cli.main import main
from wheelgate.core.env_names import ENV_NIGHTLY_BASE_URL, ENV_VERDICT_KEY_ARN
from wheelgate.core.layout import STAGING, VERDICT_KEYS_KEY, VERDICT_SUFFIX
from wheelgate.core.signatures import check_verdict
from wheelgate.core.verdicts import EXTENSION_KEY, EvidenceTest, KeyDocument, VerdictFacts, pem_of
from wheelgate.lambda_function import handler
from wheelgate.local.stack import LocalWheelGate
from wheelgate.staging.hermetic import hermetic_env
from wheelgate.storage.bucket import Bucket

# The in-toto Statement v1 and SLSA VSA v1 required fields, as their specifications state them
# (in-toto/attestation spec/v1/statement.md; slsa.dev/spec/v1.0/verification_summary).
DIGEST_SET = {
    "type": "object",
    "minProperties": 1,
    "additionalProperties": {"type": "string", "pattern": "^[0-9a-f]+$"},
}
RESOURCE_DESCRIPTOR = {
    "type": "object",
    "anyOf": [{"required": ["uri"]}, {"required": ["digest"]}, {"required": ["content"]}],
    "properties": {"uri": {"type": "string"}, "digest": DIGEST_SET, "name": {"type": "string"}},
}
STATEMENT_V1 = {
    "type": "object",
    "required": ["_type", "subject", "predicateType", "predicate"],
    "properties": {
        "_type": {"const": "https://in-toto.io/Statement/v1"},
        "subject": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "digest"],
                "properties": {"name": {"type": "string"}, "digest": DIGEST_SET},
            },
        },
        "predicateType": {"type": "string", "format": "uri"},
        "predicate": {"type": "object"},
    },
}
VSA_V1 = {
    "type": "object",
    "required": [
        "verifier",
        "timeVerified",
        "resourceUri",
        "policy",
        "verificationResult",
        "verifiedLevels",
    ],
    "properties": {
        "verifier": {
            "type": "object",
            "required": ["id"],
            "properties": {"id": {"type": "string", "minLength": 1}},
        },
        "timeVerified": {"type": "string", "pattern": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$"},
        "resourceUri": {"type": "string", "minLength": 1},
        "policy": RESOURCE_DESCRIPTOR,
        "inputAttestations": {"type": "array", "items": RESOURCE_DESCRIPTOR},
        "verificationResult": {"enum": ["PASSED", "FAILED"]},
        "verifiedLevels": {
            "type": "array",
            "items": {"type": "string"},
        },
    },
}


@pytest.fixture
def run(buckets: tuple[Bucket, Bucket], tmp_path: Path, request: pytest.FixtureRequest) -> Run:
    name = "vd-" + request.node.name.replace("_", "-")[-50:].strip("-")
    return Run(buckets, tmp_path, name, f"vd/{name[-40:]}")


def promoted(run: Run, name: str = "signed", version: str = "1.0") -> Path:
    path = wheel(run.tmp, name, version)
    run.stage(path)
    record = run.report(run.manifest(test="smoke"))
    assert record["state"] == "promoted", record
    return path


def verdict_of(run: Run, path: Path) -> bytes:
    found = run.nightly.get(f"{run.index}/{path.name}.verdict.json")
    assert found is not None, f"no verdict for {path.name}"
    return found[0]


def published_pem(stack: LocalWheelGate, key_arn: str | None = None) -> str:
    der = boto3.client("kms").get_public_key(KeyId=key_arn or stack.verdict_key_arn)["PublicKey"]
    return pem_of(der)


def sslib_key(keyid: str, pem: str) -> SSlibKey:
    return SSlibKey.from_dict(
        keyid,
        {"keytype": "ecdsa", "scheme": "ecdsa-sha2-nistp256", "keyval": {"public": pem}},
    )


def sslib_envelope(doc: dict[str, Any]) -> Envelope:
    """securesystemslib's envelope of ``doc`` (its parser consumes the dict it is given)."""
    return Envelope.from_dict(copy.deepcopy(doc))


def verify(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()  # what the promoter logged
    code = main(["verify", *args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def flip_one_byte(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


def test_a_promotion_signs_each_file_and_the_pages_link_its_verdict(
    stack: LocalWheelGate, run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a promoted run
    path = promoted(run)
    # Then nightly holds its verdict beside it, the record names it, both pages link it
    verdict_key = f"{run.index}/{path.name}.verdict.json"
    record = json.loads(run.staging.get(f"records/{run.run_id}.json")[0])  # type: ignore[index]
    assert record["sets"][0]["files"][0]["verdict"] == verdict_key
    page = json.loads(run.nightly.get(f"{run.index}/signed/index.json")[0])  # type: ignore[index]
    assert page["files"][0]["_wheelgate_verdict"] == f"../{path.name}.verdict.json"
    html = run.nightly.get(f"{run.index}/signed/index.html")[0].decode()  # type: ignore[index]
    assert f'data-wheelgate-verdict="../{path.name}.verdict.json"' in html
    # And the public keys document lists the signing key
    keys = json.loads(run.nightly.get(VERDICT_KEYS_KEY)[0])  # type: ignore[index]
    assert any(k["pem"] == published_pem(stack) and "retired" not in k for k in keys["keys"])
    # When a user verifies the file by its nightly URL, naming the gate
    code, report = verify(
        f"{stack.nightly_url}{run.index}/{path.name}",
        "--nightly-url",
        stack.nightly_url,
        capsys=capsys,
    )
    # Then it verifies and says what was verified
    assert code == 0, report
    assert report["run_id"] == run.run_id
    assert report["commit"] == COMMIT
    assert report["index"] == run.index
    assert [t["name"] for t in report["tests"]] == ["smoke"]
    assert report["gate"] == stack.nightly_url
    assert report["kind"] == "promotion"
    # And by the downloaded file, through the index's project page (the gate from
    # WHEELGATE_NIGHTLY_BASE_URL, which the local stack sets as CI would)
    local = run.tmp / "download" / path.name
    local.parent.mkdir()
    local.write_bytes(path.read_bytes())
    code, report = verify(
        str(local), "--index-url", f"{stack.nightly_url}{run.index}/", capsys=capsys
    )
    assert code == 0, report


def test_verify_refuses_tampered_files_statements_names_and_keys(
    stack: LocalWheelGate, run: Run, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = promoted(run)
    envelope = verdict_of(run, path)
    key = tmp_path / "key.pem"
    key.write_text(published_pem(stack))
    statement = tmp_path / "verdict.json"
    statement.write_bytes(envelope)
    # Offline: the file, the statement and the key are all local
    code, report = verify(
        str(path), "--statement", str(statement), "--key", str(key), capsys=capsys
    )
    assert code == 0, report
    # A file with other bytes
    tampered = tmp_path / "t" / path.name
    tampered.parent.mkdir()
    tampered.write_bytes(path.read_bytes() + b"\0")
    code, report = verify(
        str(tampered), "--statement", str(statement), "--key", str(key), capsys=capsys
    )
    assert (code, report["code"]) == (1, "digest-mismatch")
    # The same bytes under another name
    renamed = tmp_path / "r" / path.name.replace("signed", "other")
    renamed.parent.mkdir()
    renamed.write_bytes(path.read_bytes())
    code, report = verify(
        str(renamed), "--statement", str(statement), "--key", str(key), capsys=capsys
    )
    assert (code, report["code"]) == (1, "wrong-file")
    # A statement whose payload changed by one byte (its subject digest's last hex digit)
    doc = json.loads(envelope)
    payload = base64.b64decode(doc["payload"])
    at = payload.index(b'"sha256":"') + len(b'"sha256":"') + 63
    doc["payload"] = base64.b64encode(flip_one_byte(payload, at)).decode()
    statement.write_text(json.dumps(doc))
    forged_file = tmp_path / "f" / path.name
    forged_file.parent.mkdir()
    forged_file.write_bytes(path.read_bytes())
    code, report = verify(
        str(forged_file), "--statement", str(statement), "--key", str(key), capsys=capsys
    )
    assert (code, report["code"]) == (1, "bad-signature")
    # A key that did not sign it
    other_arn = boto3.client("kms").create_key(KeySpec="ECC_NIST_P256", KeyUsage="SIGN_VERIFY")[
        "KeyMetadata"
    ]["Arn"]
    key.write_text(published_pem(stack, other_arn))
    statement.write_bytes(envelope)
    code, report = verify(
        str(path), "--statement", str(statement), "--key", str(key), capsys=capsys
    )
    assert (code, report["code"]) == (1, "unknown-key")
    # Bad input: no such file, a key that is not PEM
    assert main(["verify", str(tmp_path / "missing.whl"), "--key", str(key)]) == 2
    key.write_text("not a key")
    assert main(["verify", str(path), "--statement", str(statement), "--key", str(key)]) == 2
    # Storage or network error: nothing answers
    assert main(["verify", f"http://127.0.0.1:9/{run.index}/{path.name}"]) == 4


@dataclass(frozen=True)
class Planted:
    """What a build job planted in its own run folder: the staged file's URL, the gate its
    verdict names (the run folder's URL) and its key's PEM."""

    file_url: str
    fake_gate: str
    pem: str


def planted_by_a_build_job(stack: LocalWheelGate, run: Run, path: Path) -> Planted:
    """Stage ``path`` as a build job, then, as the same job, create a keys document with a key
    of its own and a verdict for the file signed with it, both under its run's folder: the build
    role may create any key under staging ``runs/`` (If-None-Match, as here;
    ``tests/infra/test_iam_matrix.py``, ``EXPECTED_ALLOWED[("build", "staging runs/")]``)."""
    run.stage(path)
    folder = STAGING.run_prefix(run.run_id)
    fake_gate = stack.staging_url + folder
    file_key = STAGING.artifact(run.run_id, run.index, path.name)
    facts = VerdictFacts(
        filename=path.name,
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        gate=fake_gate,
        resource_uri=stack.staging_url + file_key,
        at="2026-01-01T00:00:00Z",
        manifest_uri=f"s3://{run.staging.name}/{STAGING.manifest(run.run_id)}",
        manifest_sha256="0" * 64,
        run_id=run.run_id,
        commit=COMMIT,
        index=run.index,
        tests=(EvidenceTest(name="smoke"),),
    )
    verdict, key = sign(ec.generate_private_key(ec.SECP256R1()), facts)
    run.staging.put(
        folder + VERDICT_KEYS_KEY,
        KeyDocument(keys=[key]).to_bytes(),
        content_type="application/json",
        if_none_match=True,
    )
    run.staging.put(
        file_key + VERDICT_SUFFIX, verdict, content_type="application/json", if_none_match=True
    )
    # A well-made forgery: under its own key and its own gate, it verifies.
    check_verdict(verdict, keys=[key], filename=path.name, sha256=facts.sha256, gate=fake_gate)
    return Planted(stack.staging_url + file_key, fake_gate, key.pem)


def test_verify_without_a_gate_trusts_no_keys_a_build_job_planted_beside_its_file(
    stack: LocalWheelGate,
    run: Run,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a build job's staged file, with a keys document and a verdict it planted in its run
    # folder, and a user who names no gate (no --nightly-url, no variable, no --key)
    planted = planted_by_a_build_job(stack, run, wheel(tmp_path, "planted", "1.0"))
    monkeypatch.delenv(ENV_NIGHTLY_BASE_URL)
    capsys.readouterr()
    # When they verify the file by its staging URL
    code = main(["verify", planted.file_url, "--json"])
    out = capsys.readouterr()
    # Then it refuses as bad input before reading anything, says how to name the gate, and
    # verifies nothing
    assert code == 2, out
    assert out.out == ""
    assert "--nightly-url" in out.err
    assert "--key" in out.err
    assert ENV_NIGHTLY_BASE_URL in out.err
    assert planted.fake_gate not in out.err


def test_verify_with_a_gate_refuses_a_planted_verdict_and_another_gates_verdict(
    stack: LocalWheelGate,
    run: Run,
    buckets: tuple[Bucket, Bucket],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a gate that has released a file (so it publishes its keys), and a build job's
    # planted verdict
    released = Run(buckets, tmp_path / "released", f"{run.run_id}-rel"[-60:], run.index)
    promoted(released, "genuine")
    planted = planted_by_a_build_job(stack, run, wheel(tmp_path, "planted", "1.0"))
    # When the user names the gate: the planted key is not one it publishes
    code, report = verify(planted.file_url, "--nightly-url", stack.nightly_url, capsys=capsys)
    assert (code, report["code"]) == (1, "unknown-key"), report
    # When the user is handed the build job's key as --key and names the gate: the signature
    # verifies, and the verdict is refused for naming another gate
    key = tmp_path / "handed.pem"
    key.write_text(planted.pem)
    code, report = verify(
        planted.file_url, "--key", str(key), "--nightly-url", stack.nightly_url, capsys=capsys
    )
    assert (code, report["code"]) == (1, "other-gate"), report
    assert planted.fake_gate in report["message"]


def test_an_independent_implementation_verifies_the_envelope_and_the_schemas(
    stack: LocalWheelGate, run: Run
) -> None:
    path = promoted(run)
    envelope = json.loads(verdict_of(run, path))
    keys = json.loads(run.nightly.get(VERDICT_KEYS_KEY)[0])["keys"]  # type: ignore[index]
    published = [sslib_key(k["keyid"], k["pem"]) for k in keys]
    # securesystemslib's DSSE verifies the promoter's signature with the published key
    verified = sslib_envelope(envelope).verify(published, 1)
    assert envelope["signatures"][0]["keyid"] in verified
    statement = json.loads(base64.b64decode(envelope["payload"]))
    jsonschema.validate(statement, STATEMENT_V1)
    assert statement["predicateType"] == "https://slsa.dev/verification_summary/v1"
    jsonschema.validate(statement["predicate"], VSA_V1)
    assert statement["subject"] == [
        {"name": path.name, "digest": {"sha256": run.manifest()["sets"][0]["files"][0]["sha256"]}}
    ]
    assert statement["predicate"]["verificationResult"] == "PASSED"
    assert statement["predicate"][EXTENSION_KEY]["tests"][0]["name"] == "smoke"
    # One byte changed in the payload, the signature or the subject digest: it fails
    payload = base64.b64decode(envelope["payload"])
    signature = base64.b64decode(envelope["signatures"][0]["sig"])
    digest_at = payload.index(b'"sha256":"') + len(b'"sha256":"')
    changed = [
        {**envelope, "payload": base64.b64encode(flip_one_byte(payload, 5)).decode()},
        {**envelope, "payload": base64.b64encode(flip_one_byte(payload, digest_at)).decode()},
        {
            **envelope,
            "signatures": [
                {
                    **envelope["signatures"][0],
                    "sig": base64.b64encode(flip_one_byte(signature, 10)).decode(),
                }
            ],
        },
    ]
    for forged in changed:
        with pytest.raises(VerificationError):
            sslib_envelope(forged).verify(published, 1)
    # A key that is not published: its signature does not count
    other_arn = boto3.client("kms").create_key(KeySpec="ECC_NIST_P256", KeyUsage="SIGN_VERIFY")[
        "KeyMetadata"
    ]["Arn"]
    unpublished = sslib_key(envelope["signatures"][0]["keyid"], published_pem(stack, other_arn))
    with pytest.raises(VerificationError):
        sslib_envelope(envelope).verify([unpublished], 1)


def test_a_rejected_run_writes_no_verdict(run: Run) -> None:
    path = wheel(run.tmp, "rejected", "1.0")
    run.stage(path)
    assert run.report(run.manifest(result="failed"))["state"] == "rejected"
    assert run.nightly.head(f"{run.index}/{path.name}.verdict.json") is None
    assert run.nightly.head(f"{run.index}/{path.name}") is None


def test_after_a_rotation_the_new_key_signs_and_old_verdicts_still_verify(
    stack: LocalWheelGate,
    buckets: tuple[Bucket, Bucket],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a file signed under the deployment's key
    old = Run(buckets, tmp_path / "old", "vd-rot-old", "vd/rot")
    old_path = promoted(old, "rotold")
    old_keyid = json.loads(verdict_of(old, old_path))["signatures"][0]["keyid"]
    # When the promoter is given a new key (the stack's new key ARN) and promotes another run
    rotated = boto3.client("kms").create_key(KeySpec="ECC_NIST_P256", KeyUsage="SIGN_VERIFY")[
        "KeyMetadata"
    ]["Arn"]
    monkeypatch.setenv(ENV_VERDICT_KEY_ARN, rotated)
    handler.promoter.cache_clear()
    try:
        new = Run(buckets, tmp_path / "new", "vd-rot-new", "vd/rot")
        new_path = promoted(new, "rotnew")
    finally:
        monkeypatch.setenv(ENV_VERDICT_KEY_ARN, stack.verdict_key_arn)
        handler.promoter.cache_clear()
    new_keyid = json.loads(verdict_of(new, new_path))["signatures"][0]["keyid"]
    # Then the new key signed, the document lists both, the old one retired
    assert new_keyid != old_keyid
    document = json.loads(new.nightly.get(VERDICT_KEYS_KEY)[0])  # type: ignore[index]
    keys = {k["keyid"]: k for k in document["keys"]}
    assert keys[old_keyid].get("retired")
    assert "retired" not in keys[new_keyid]
    assert keys[new_keyid]["pem"] == published_pem(stack, rotated)
    # And both files verify under the published keys
    for path in (old_path, new_path):
        code, report = verify(
            f"{stack.nightly_url}vd/rot/{path.name}",
            "--nightly-url",
            stack.nightly_url,
            capsys=capsys,
        )
        assert code == 0, report


def test_pip_and_uv_install_from_pages_that_link_verdicts(
    stack: LocalWheelGate, run: Run, tmp_path: Path
) -> None:
    path = promoted(run, "installme", "1.0")
    page = json.loads(run.nightly.get(f"{run.index}/installme/index.json")[0])  # type: ignore[index]
    assert page["files"][0]["_wheelgate_verdict"] == f"../{path.name}.verdict.json"
    index_url = f"{stack.nightly_url}{run.index}/"
    for name, command in (
        ("pip", [sys.executable, "-m", "pip", "install", "--no-deps", "--no-cache-dir"]),
        ("uv", [uv_binary(), "pip", "install", "--no-deps", "--python", sys.executable]),
    ):
        target = tmp_path / name
        result = subprocess.run(
            [*command, "--target", str(target), "--index-url", index_url, "installme==1.0"],
            env=hermetic_env(),
            capture_output=True,
            text=True,
            check=False,
            timeout=180,
        )
        assert result.returncode == 0, (name, result.stderr)
        assert (target / "installme" / "__init__.py").exists(), name


def test_an_index_rebuild_keeps_the_verdict_links(run: Run) -> None:
    from wheelgate.index.rebuild import scan_nightly

    path = promoted(run, "rebuilt")
    # A rebuild reads the bucket, not the pages: the verdict beside the file is what it links.
    (entry,) = scan_nightly(run.nightly, run.index)["rebuilt"]
    assert entry.verdict
    assert entry.verdict_url == f"../{path.name}.verdict.json"
