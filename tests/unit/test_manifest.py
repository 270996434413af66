from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.samples import SHA_A, SHA_B, TORCH, manifest_bytes, manifest_dict, manifest_dict_v1
from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.manifest import (
    SCHEMA_V1,
    SCHEMA_V2,
    ArtifactSetV2,
    ManifestV1,
    ManifestV2,
    json_schema,
    parse_distribution_filename,
    parse_manifest,
)
from wheelgate.core.manifest_limits import MAX_INSTALLED_PER_TEST, MAX_MANIFEST_BYTES

SCHEMAS = Path(__file__).parents[2] / "lambdas/wheelgate/schemas"


def reason_of(doc: Any, **kwargs: Any) -> Reason:
    raw = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    with pytest.raises(PromotionRejected) as caught:
        parse_manifest(raw, **kwargs)
    assert caught.value.message
    return caught.value.reason


def test_the_documented_example_parses() -> None:
    manifest = parse_manifest(manifest_bytes(), expected_run_id="16454515470")
    assert isinstance(manifest, ManifestV2)
    assert manifest.sets[0].files[0].distribution.project == "torch"
    assert str(manifest.sets[0].files[0].distribution.version) == "2.7.0a0+rocm7.0.0"
    [test] = manifest.sets[0].tests
    assert [(i.sha256, i.filename) for i in test.installed] == [(SHA_A, TORCH)]
    assert parse_manifest(manifest.to_json().encode()) == manifest


def test_v2_round_trips_evidence_without_a_file_name() -> None:
    doc = manifest_dict()
    doc["sets"][0]["tests"][0]["installed"] = [
        {"sha256": SHA_A},
        {"sha256": SHA_B, "filename": None},
    ]
    manifest = parse_manifest(json.dumps(doc).encode())
    assert isinstance(manifest.sets[0], ArtifactSetV2)
    again = parse_manifest(manifest.to_json().encode())
    assert again == manifest
    assert [i.filename for i in again.sets[0].tests[0].installed] == [None, None]
    assert json.loads(manifest.to_json())["schema"] == SCHEMA_V2


def test_a_v2_test_may_omit_what_it_installed() -> None:
    doc = manifest_dict()
    del doc["sets"][0]["tests"][0]["installed"]
    manifest = parse_manifest(json.dumps(doc).encode())
    assert manifest.sets[0].tests[0].installed == ()


def test_v1_manifests_are_still_read() -> None:
    manifest = parse_manifest(json.dumps(manifest_dict_v1()).encode())
    assert isinstance(manifest, ManifestV1)
    assert manifest.schema_ == SCHEMA_V1
    assert not isinstance(manifest.sets[0], ArtifactSetV2)
    assert parse_manifest(manifest.to_json().encode()) == manifest


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_committed_json_schema_is_the_generated_one(version: str) -> None:
    committed = json.loads((SCHEMAS / f"manifest-{version}.json").read_text())
    assert committed == json_schema(f"wheelgate/manifest/{version}")


def test_the_schema_command_prints_the_current_version() -> None:
    assert json_schema()["$id"] == "urn:wheelgate:schema:manifest:v2"


def with_set(**changes: Any) -> dict[str, Any]:
    doc = manifest_dict()
    doc["sets"][0].update(changes)
    return doc


def with_installed(*installed: dict[str, Any]) -> dict[str, Any]:
    doc = manifest_dict()
    doc["sets"][0]["tests"][0]["installed"] = list(installed)
    return doc


def with_file(**changes: Any) -> dict[str, Any]:
    return with_set(files=[{"filename": TORCH, "sha256": SHA_A, "size": 1, **changes}])


@pytest.mark.parametrize(
    ("doc", "reason"),
    [
        (b"{not json", Reason.INVALID_JSON),
        (b"\xff\xfe", Reason.INVALID_JSON),
        (b"[]", Reason.INVALID_MANIFEST),
        (manifest_dict(schema="wheelgate/manifest/v3"), Reason.UNSUPPORTED_SCHEMA),
        ({k: v for k, v in manifest_dict().items() if k != "schema"}, Reason.UNSUPPORTED_SCHEMA),
        (manifest_dict(commit="abc"), Reason.INVALID_MANIFEST),
        (manifest_dict(run_id="../1"), Reason.INVALID_MANIFEST),
        (manifest_dict(sets=[]), Reason.INVALID_MANIFEST),
        (manifest_dict(extra=1), Reason.INVALID_MANIFEST),
        (with_set(index="../etc"), Reason.INVALID_MANIFEST),
        (with_set(index="/abs"), Reason.INVALID_MANIFEST),
        (with_set(index="a//b"), Reason.INVALID_MANIFEST),
        (with_set(index="runs/x"), Reason.INVALID_MANIFEST),
        (with_set(files=[]), Reason.INVALID_MANIFEST),
        (with_file(sha256="A" * 64), Reason.INVALID_MANIFEST),
        (with_file(sha256="a" * 63), Reason.INVALID_MANIFEST),
        (with_file(size=0), Reason.INVALID_MANIFEST),
        (with_file(size=-5), Reason.INVALID_MANIFEST),
        (with_file(filename="torch.whl"), Reason.INVALID_MANIFEST),
        (with_file(filename="../torch-1.0-py3-none-any.whl"), Reason.INVALID_MANIFEST),
        (with_file(filename="torch-1.0-py3-none-any.exe"), Reason.INVALID_MANIFEST),
        (with_file(filename="torch-1.0-py3-none-any.whl\n"), Reason.INVALID_MANIFEST),
        (with_set(tests=[{"name": "t", "result": "maybe"}]), Reason.INVALID_MANIFEST),
        (
            with_set(tests=[{"name": "t", "result": "passed", "url": "javascript:x"}]),
            Reason.INVALID_MANIFEST,
        ),
        (with_installed({"sha256": "A" * 64}), Reason.INVALID_MANIFEST),
        (with_installed({"sha256": SHA_A, "filename": "../x.whl"}), Reason.INVALID_MANIFEST),
        (with_installed({"sha256": SHA_A, "size": 1}), Reason.INVALID_MANIFEST),
        (
            with_installed(*[{"sha256": SHA_A}] * (MAX_INSTALLED_PER_TEST + 1)),
            Reason.INVALID_MANIFEST,
        ),
        # v1 has no place for evidence: a v1 manifest claiming some is not a v1 manifest.
        (
            manifest_dict(schema="wheelgate/manifest/v1"),
            Reason.INVALID_MANIFEST,
        ),
    ],
)
def test_bad_manifests_are_rejected_with_their_reason(doc: Any, reason: Reason) -> None:
    assert reason_of(doc) is reason


@pytest.mark.parametrize(
    ("url", "carried"),
    [
        ("http://ci.example/1", "should match pattern '^https://"),
        ("https://u:secretpw1@ci.example/1", "carries user information"),
        ("https://ci.example/1?token=secretpw1", "carries the query parameter 'token'"),
        ("https://ci.example/1?a=1&X-Amz-Credential=secretpw1", "'X-Amz-Credential'"),
        ("https://ci.example/eyJhbGciOiJI.eyJzdWIiOiIx.secretpw1", "carries a JSON Web Token"),
    ],
)
def test_a_test_url_with_credentials_is_refused_naming_the_field(url: str, carried: str) -> None:
    doc = with_set(tests=[{"name": "t", "result": "passed", "url": url}])
    with pytest.raises(PromotionRejected) as caught:
        parse_manifest(json.dumps(doc).encode())
    assert caught.value.reason is Reason.INVALID_MANIFEST
    assert carried in str(caught.value)
    assert "sets.0.tests.0.url" in str(caught.value)
    # The record, the status page and the logs get this message: no credential in it.
    assert "secretpw1" not in str(caught.value)


def test_duplicate_file_in_a_set_is_rejected() -> None:
    entry = {"filename": TORCH, "sha256": SHA_A, "size": 1}
    doc = with_set(files=[entry, entry])
    with pytest.raises(PromotionRejected, match="listed twice") as caught:
        parse_manifest(json.dumps(doc).encode())
    assert caught.value.reason is Reason.INVALID_MANIFEST


def test_two_sets_for_one_index_are_rejected() -> None:
    doc = manifest_dict()
    doc["sets"].append(doc["sets"][0])
    with pytest.raises(PromotionRejected, match="more than one set"):
        parse_manifest(json.dumps(doc).encode())


def test_huge_manifest_is_rejected_before_parsing() -> None:
    assert reason_of(b" " * (MAX_MANIFEST_BYTES + 1)) is Reason.MANIFEST_TOO_LARGE


def test_manifest_for_another_run_is_rejected() -> None:
    assert reason_of(manifest_bytes(), expected_run_id="other") is Reason.RUN_ID_MISMATCH


@pytest.mark.parametrize(
    ("filename", "project", "kind"),
    [
        ("torch-2.7.0a0+rocm7.0.0-cp312-cp312-linux_x86_64.whl", "torch", "wheel"),
        ("Filelock-3.18.0-py3-none-any.whl", "filelock", "wheel"),
        (
            "pytorch_triton_rocm-3.3.0-1-cp312-cp312-linux_x86_64.whl",
            "pytorch-triton-rocm",
            "wheel",
        ),
        ("filelock-3.18.0.tar.gz", "filelock", "sdist"),
    ],
)
def test_distribution_names_are_parsed_with_packaging(
    filename: str, project: str, kind: str
) -> None:
    dist = parse_distribution_filename(filename)
    assert (dist.project, dist.kind) == (project, kind)
