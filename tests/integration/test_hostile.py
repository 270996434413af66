"""A catalogue of hostile and broken manifests. Each one is written to the staging bucket and
delivered to the real promoter handler; each must be rejected with its reason code and a
message, be recorded once (a redelivery changes nothing), and leave nightly byte-identical."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_promoter import (
    COMMIT,
    Run,
    deliver,
    nightly_versions,
    wheel,
)
from wheelgate.core.env_names import ENV_ALLOWED_INDEXES, ENV_REQUIRED_TESTS
from wheelgate.lambda_function import handler
from wheelgate.local.names import LOCAL_REPORTER_PRINCIPAL
from wheelgate.local.sample_wheels import manifest_for
from wheelgate.storage.bucket import Bucket

Body = dict[str, Any] | bytes


@dataclass(frozen=True)
class Case:
    """``setup`` stages what it needs and returns the manifest body (and who writes it)."""

    name: str
    category: str
    reason: str
    setup: Callable[[Run], Body | tuple[Body, str | None]]


def valid(run: Run, **set_changes: Any) -> dict[str, Any]:
    if not run.files:
        run.stage(wheel(run.tmp, "pkg"))
    doc = run.manifest()
    doc["sets"][0].update(set_changes)
    return doc


def with_file(run: Run, **changes: Any) -> dict[str, Any]:
    doc = valid(run)
    doc["sets"][0]["files"][0].update(changes)
    return doc


def other_run_file(run: Run) -> dict[str, Any]:
    # The file exists, but under another run's prefix: it is not this run's file.
    other = Run((run.staging, run.nightly), run.tmp / "other", run.run_id + "-other", run.index)
    other.stage(wheel(run.tmp / "o", "pkg"))
    return other.manifest() | {"run_id": run.run_id}


def replay(run: Run) -> dict[str, Any]:
    first = valid(run)
    run.report(first)
    later = wheel(run.tmp, "later")
    run.stage(later)
    return run.manifest()


def nightly_conflict(run: Run) -> dict[str, Any]:
    doc = valid(run)
    name = run.files[0].name
    run.nightly.client.put_object(
        Bucket=run.nightly.name,
        Key=f"{run.index}/{name}",
        Body=b"an older, different release",
        ChecksumAlgorithm="SHA256",
    )
    return doc


def tampered(run: Run) -> dict[str, Any]:
    doc = valid(run)
    f = run.files[0]
    data = bytearray(f.read_bytes())
    data[-30] ^= 0xFF
    run.staging.client.put_object(
        Bucket=run.staging.name,
        Key=f"runs/{run.run_id}/{run.index}/{f.name}",
        Body=bytes(data),
        ChecksumAlgorithm="SHA256",
        Metadata={"wheelgate-commit": COMMIT},
    )
    return doc


def resized(run: Run) -> dict[str, Any]:
    doc = valid(run)
    doc["sets"][0]["files"][0]["size"] += 1
    return doc


def commit_mismatch(run: Run) -> dict[str, Any]:
    return valid(run) | {"commit": "f" * 40}


def extra_file(run: Run) -> dict[str, Any]:
    a = wheel(run.tmp, "a")
    run.stage(a, wheel(run.tmp, "b"))
    return run.manifest(files=[a])


def missing_file(run: Run) -> dict[str, Any]:
    doc = valid(run)
    ghost = {"filename": "ghost-1.0-py3-none-any.whl", "sha256": "a" * 64, "size": 10}
    doc["sets"][0]["files"].append(ghost)
    # Its test even claims to have installed it.
    doc["sets"][0]["tests"][0]["installed"].append({"sha256": ghost["sha256"]})
    return doc


def two_sets_one_failed(run: Run) -> dict[str, Any]:
    doc = valid(run)
    second = json.loads(json.dumps(doc["sets"][0]))
    second["index"] = run.index + "-b"
    second["tests"] = [{"name": "smoke", "result": "failed"}]
    other = Run((run.staging, run.nightly), run.tmp / "b", run.run_id, run.index + "-b")
    other.stage(wheel(run.tmp / "b", "pkgb"))
    second["files"] = other.manifest()["sets"][0]["files"]
    doc["sets"].append(second)
    return doc


def with_installed(run: Run, installed: list[dict[str, Any]]) -> dict[str, Any]:
    doc = valid(run)
    doc["sets"][0]["tests"][0]["installed"] = installed
    return doc


def evidence_for_another_hash(run: Run) -> dict[str, Any]:
    doc = valid(run)
    doc["sets"][0]["tests"][0]["installed"] = [{"sha256": "e" * 64, "filename": run.files[0].name}]
    return doc


def untested_sibling(run: Run) -> dict[str, Any]:
    # The build staged the wheel for another Python too; the test installed one of them.
    tested, sibling = wheel(run.tmp, "pkg", tag="cp312-cp312-any"), wheel(run.tmp, "pkg")
    run.stage(tested, sibling)
    return manifest_for(run.run_id, COMMIT, run.index, [tested, sibling], installed=[tested])


def evidence_on_a_failed_test_only(run: Run) -> dict[str, Any]:
    doc = valid(run)
    installed = doc["sets"][0]["tests"][0]["installed"]
    doc["sets"][0]["tests"] = [
        {"name": "smoke", "result": "passed", "installed": []},
        {"name": "gpu", "result": "failed", "installed": installed},
    ]
    return doc


def replaced_after_its_test(run: Run) -> dict[str, Any]:
    # The test installed the staged wheel; then a build step replaced it in place (no
    # If-None-Match), and the report lists what is staged now.
    tested = wheel(run.tmp / "tested", "pkg")
    run.stage(tested)
    replacement = wheel(run.tmp / "replacement", "pkg", module_source="EVIL = True\n")
    key = f"runs/{run.run_id}/{run.index}/{tested.name}"
    run.staging.client.put_object(
        Bucket=run.staging.name,
        Key=key,
        Body=replacement.read_bytes(),
        ChecksumAlgorithm="SHA256",
        Metadata={"wheelgate-commit": COMMIT},
    )
    return manifest_for(run.run_id, COMMIT, run.index, [replacement], installed=[tested])


def v1_manifest(run: Run) -> dict[str, Any]:
    doc = valid(run)
    doc["schema"] = "wheelgate/manifest/v1"
    for test in doc["sets"][0]["tests"]:
        del test["installed"]
    return doc


def dup_key(run: Run) -> bytes:
    text = json.dumps(valid(run))
    return text.replace('"commit":', '"commit": "' + "e" * 40 + '", "commit":', 1).encode()


CASES = [
    # Not a manifest at all.
    Case("truncated JSON", "syntax", "invalid-json", lambda r: b'{"schema": "wheelgate/man'),
    Case("binary garbage", "syntax", "invalid-json", lambda r: bytes(range(256)) * 4),
    Case(
        "nested 100,000 deep", "syntax", "invalid-json", lambda r: b"[" * 100_000 + b"]" * 100_000
    ),
    Case("JSON array", "syntax", "invalid-manifest", lambda r: b"[]"),
    Case("duplicate key", "syntax", "invalid-manifest", dup_key),
    Case("5 MiB manifest", "syntax", "manifest-too-large", lambda r: b" " * (5 * 1024 * 1024)),
    Case(
        "schema v3",
        "schema",
        "unsupported-schema",
        lambda r: valid(r) | {"schema": "wheelgate/manifest/v3"},
    ),
    Case(
        "no schema",
        "schema",
        "unsupported-schema",
        lambda r: {k: v for k, v in valid(r).items() if k != "schema"},
    ),
    Case(
        "unknown field", "schema", "invalid-manifest", lambda r: valid(r) | {"promote_anyway": True}
    ),
    Case("short commit", "schema", "invalid-manifest", lambda r: valid(r) | {"commit": "abc"}),
    Case(
        "run id of another key",
        "schema",
        "run-id-mismatch",
        lambda r: valid(r) | {"run_id": "someone-else"},
    ),
    Case("uppercase sha256", "schema", "invalid-manifest", lambda r: with_file(r, sha256="A" * 64)),
    Case("negative size", "schema", "invalid-manifest", lambda r: with_file(r, size=-1)),
    Case("size 10**30", "schema", "invalid-manifest", lambda r: with_file(r, size=10**30)),
    Case(
        "javascript: test URL",
        "schema",
        "invalid-manifest",
        lambda r: valid(r, tests=[{"name": "t", "result": "passed", "url": "javascript:alert(1)"}]),
    ),
    Case(
        "two sets for one index",
        "schema",
        "invalid-manifest",
        lambda r: valid(r) | {"sets": valid(r)["sets"] * 2},
    ),
    Case(
        "duplicate file",
        "schema",
        "invalid-manifest",
        lambda r: valid(r, files=valid(r)["sets"][0]["files"] * 2),
    ),
    # Names and paths.
    Case(
        "../ in file name",
        "paths",
        "invalid-manifest",
        lambda r: with_file(r, filename="../pkg-1.0-py3-none-any.whl"),
    ),
    Case(
        "absolute file name",
        "paths",
        "invalid-manifest",
        lambda r: with_file(r, filename="/etc/pkg-1.0-py3-none-any.whl"),
    ),
    Case(
        "backslash",
        "paths",
        "invalid-manifest",
        lambda r: with_file(r, filename="..\\pkg-1.0-py3-none-any.whl"),
    ),
    Case("// in index", "paths", "invalid-manifest", lambda r: valid(r, index="v2//x")),
    Case("absolute index", "paths", "invalid-manifest", lambda r: valid(r, index="/v2")),
    Case(
        "traversing index", "paths", "invalid-manifest", lambda r: valid(r, index="v2/../records")
    ),
    Case("reserved index", "paths", "invalid-manifest", lambda r: valid(r, index="runs/x")),
    Case(
        "Cyrillic look-alike",
        "paths",
        "invalid-manifest",
        lambda r: with_file(r, filename="pkg-1.0-py3-n\u043ene-any.whl"),
    ),
    Case(
        "control character",
        "paths",
        "invalid-manifest",
        lambda r: with_file(r, filename="pkg-1.0-py3-none-any\x07.whl"),
    ),
    Case(
        "not a wheel name", "paths", "invalid-manifest", lambda r: with_file(r, filename="pkg.whl")
    ),
    Case(
        "executable",
        "paths",
        "invalid-manifest",
        lambda r: with_file(r, filename="pkg-1.0-py3-none-any.exe"),
    ),
    # Tests.
    Case(
        "failed test",
        "tests",
        "tests-failed",
        lambda r: valid(r, tests=[{"name": "smoke", "result": "failed"}]),
    ),
    Case(
        "skipped test",
        "tests",
        "tests-failed",
        lambda r: valid(r, tests=[{"name": "smoke", "result": "skipped"}]),
    ),
    Case("no tests", "tests", "tests-missing", lambda r: valid(r, tests=[])),
    Case(
        "required test absent",
        "tests",
        "tests-missing",
        lambda r: valid(r, tests=[{"name": "lint", "result": "passed"}]),
    ),
    Case("other set failed", "tests", "tests-failed", two_sets_one_failed),
    Case("index not allowed", "tests", "index-not-allowed", lambda r: valid(r)),
    # The set against what is staged and released.
    Case("listed file not staged", "integrity", "file-missing", missing_file),
    Case("extra staged file", "integrity", "file-not-listed", extra_file),
    Case("file of another run", "integrity", "file-missing", other_run_file),
    Case("size mismatch", "integrity", "size-mismatch", resized),
    Case("tampered bytes", "integrity", "checksum-mismatch", tampered),
    Case("commit mismatch", "integrity", "commit-mismatch", commit_mismatch),
    Case("nightly has other bytes", "integrity", "nightly-conflict", nightly_conflict),
    Case("replay with other content", "integrity", "replay-conflict", replay),
    # What the tests installed: the only files released are the bytes a passed test installed.
    Case("evidence for another hash", "evidence", "untested-file", evidence_for_another_hash),
    Case("no evidence", "evidence", "untested-file", lambda r: with_installed(r, [])),
    Case("untested sibling wheel", "evidence", "untested-file", untested_sibling),
    Case("replaced after its test", "evidence", "untested-file", replaced_after_its_test),
    # A failed test fails the set first; and its installs are never evidence.
    Case(
        "evidence on a failed test only", "evidence", "tests-failed", evidence_on_a_failed_test_only
    ),
    Case("v1 manifest", "evidence", "evidence-missing", v1_manifest),
    Case(
        "oversized evidence list",
        "evidence",
        "invalid-manifest",
        lambda r: with_installed(r, [{"sha256": f"{n:064x}"} for n in range(5001)]),
    ),
    # Who wrote it.
    Case(
        "another principal",
        "provenance",
        "untrusted-writer",
        lambda r: (valid(r), "AWS:AROAINTRUDER0000000:x"),
    ),
    Case("no principal", "provenance", "untrusted-writer", lambda r: (valid(r), None)),
    Case(
        "reporter id as a prefix",
        "provenance",
        "untrusted-writer",
        lambda r: (
            valid(r),
            LOCAL_REPORTER_PRINCIPAL.split(":")[0]
            + ":"
            + LOCAL_REPORTER_PRINCIPAL.split(":")[1]
            + "X:x",
        ),
    ),
]


def test_the_catalogue_is_large_and_covers_every_category() -> None:
    assert len(CASES) >= 30
    assert {c.category for c in CASES} == {
        "syntax",
        "schema",
        "paths",
        "tests",
        "integrity",
        "evidence",
        "provenance",
    }


@pytest.fixture
def policy(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[None]:
    case: Case = request.node.callspec.params["case"]
    if case.name == "required test absent":
        monkeypatch.setenv(ENV_REQUIRED_TESTS, json.dumps({"h/required-test-absent": ["smoke"]}))
    if case.name == "index not allowed":
        monkeypatch.setenv(ENV_ALLOWED_INDEXES, json.dumps(["v2/somewhere-else"]))
    handler.promoter.cache_clear()
    yield
    handler.promoter.cache_clear()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_manifest_is_rejected_once_and_nightly_is_untouched(
    case: Case,
    policy: None,
    buckets: tuple[Bucket, Bucket],
    s3: Any,
    tmp_path: Path,
) -> None:
    slug = hashlib.sha256(case.name.encode()).hexdigest()[:10]
    name = case.name.replace(" ", "-").replace("'", "").replace(",", "")
    index = "h/required-test-absent" if case.name == "required test absent" else f"h/{slug}"
    run = Run(buckets, tmp_path, f"hostile-{slug}", index)
    made = case.setup(run)
    body, principal = made if isinstance(made, tuple) else (made, LOCAL_REPORTER_PRINCIPAL)
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    before = nightly_versions(s3)
    key = f"manifests/{run.run_id}.json"
    run.staging.put(key, raw, content_type="application/json")

    assert deliver(key, principal) == {"batchItemFailures": []}, name

    found = run.staging.get(f"records/{run.run_id}.json")
    assert found is not None
    record = json.loads(found[0])
    decision = record["history"][-1]
    # A write by a principal not trusted for it is noted, never decides the run.
    assert decision["state"] == ("pending" if case.reason == "untrusted-writer" else "rejected")
    assert decision["reason"] == case.reason, decision["message"]
    assert len(decision["message"]) > 20
    assert nightly_versions(s3) == before
    # Delivered again (at-least-once delivery): recorded once, nothing retried or changed.
    assert deliver(key, principal) == {"batchItemFailures": []}
    again = run.staging.get(f"records/{run.run_id}.json")
    assert again is not None
    assert json.loads(again[0]) == record
    assert nightly_versions(s3) == before
