"""Immutability on a real S3 server: the promoter into an Object Lock bucket on Ceph RGW.

Ceph RGW (Pacific, Debian 12) enforces Object Lock retention like AWS S3 but ignores
``If-None-Match: *`` on versioned buckets and neither stores nor returns
``x-amz-checksum-sha256``. So these tests show what Ceph can show: every promoted copy carries
retention, a locked version cannot be deleted or have its retention shortened, the promoter
itself never sends a write to a released key (it HEADs first and refuses a conflict before any
copy), and index pages carry the promoter's own short lock while files keep the default.
Checksums and conditional writes are covered against moto in ``test_promoter.py``.
The buckets here carry none of the stack's bucket policies: Ceph never sets ``s3:if-none-match``,
so the staging policy's write-once Deny on ``runs/*`` would refuse every staged file. That rule
is proven by the IAM evaluator instead (``tests/infra/iam_matrix.py``).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from botocore.exceptions import ClientError

from tests.integration.ceph import INSTALL_SCRIPT, CephCluster, CephEndpoint, missing_binaries
from tests.tools import missing_tool
from wheelgate.core.records import PromotionRecord
from wheelgate.core.setting_values import PageRetention
from wheelgate.core.settings import PromoterSettings
from wheelgate.local.sample_wheels import build_wheel, manifest_for
from wheelgate.local.snapshot import version_snapshot
from wheelgate.promotion.compose import build_service
from wheelgate.promotion.event import ManifestEvent
from wheelgate.promotion.service import PromotionService
from wheelgate.staging.local_artifacts import inspect_files
from wheelgate.staging.stage import stage
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.limits import TransferLimits

# A Ceph RGW cluster started for the session: `make test` only.
pytestmark = pytest.mark.slow

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

STAGING = "wheelgate-staging"
NIGHTLY = "wheelgate-nightly"
GOVERNED = "wheelgate-governed"
#: A nightly bucket as the stack makes it for page locks: files held 30 days by default, each
#: index page version 1 day by the promoter's own lock (nightly_page_retention_days).
PAGED = "wheelgate-paged"
PAGED_FILE_DAYS = 30
PAGE_LOCK = PageRetention(mode="GOVERNANCE", days=1)
NIGHTLY_URL = "http://nightly.invalid/"
COMMIT = "c" * 40
INDEX = "v2/ceph"
#: Operations that create or replace an object (or a version of one).
WRITES = {"PutObject", "CopyObject", "CreateMultipartUpload", "CompleteMultipartUpload"}


@pytest.fixture(scope="session")
def ceph() -> Iterator[CephEndpoint]:
    """A single-node Ceph cluster with RGW, started for the session and deleted after it."""
    missing = missing_binaries()
    if missing:
        missing_tool(
            "Ceph RGW",
            f"missing {', '.join(missing)}; {INSTALL_SCRIPT} installs ceph-mon, ceph-osd and "
            "radosgw",
        )
    with CephCluster(Path(tempfile.mkdtemp(prefix="wheelgate-ceph-"))) as cluster:
        endpoint = cluster.start()
        print(f"\nCeph RGW at {endpoint.endpoint_url}, started in {endpoint.started_in:.1f} s")
        yield endpoint


@pytest.fixture(scope="module")
def s3(ceph: CephEndpoint) -> S3Client:
    client = ceph.client()
    client.create_bucket(Bucket=STAGING)
    for bucket, mode, days in (
        (NIGHTLY, "COMPLIANCE", 1),
        (GOVERNED, "GOVERNANCE", 1),
        (PAGED, PAGE_LOCK.mode, PAGED_FILE_DAYS),
    ):
        client.create_bucket(Bucket=bucket, ObjectLockEnabledForBucket=True)
        client.put_object_lock_configuration(
            Bucket=bucket,
            ObjectLockConfiguration={
                "ObjectLockEnabled": "Enabled",
                "Rule": {"DefaultRetention": {"Mode": mode, "Days": days}},  # type: ignore[typeddict-item]
            },
        )
    return client


class WriteSpy:
    """Every S3 call the client makes, as (operation, bucket, key), from its API parameters.

    ``before-parameter-build`` sees the caller's parameters (``before-call`` sees only the
    serialised request), so the key is exactly what the promoter asked for.
    """

    def __init__(self, client: S3Client) -> None:
        self.calls: list[tuple[str, str, str]] = []
        self._client = client
        client.meta.events.register("before-parameter-build.s3.*", self._record)

    def _record(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.calls.append((model.name, params.get("Bucket", ""), params.get("Key", "")))

    def writes_to(self, bucket: str) -> list[tuple[str, str]]:
        return [(op, key) for op, b, key in self.calls if b == bucket and op in WRITES]

    def close(self) -> None:
        self._client.meta.events.unregister("before-parameter-build.s3.*", self._record)


@pytest.fixture
def spy(s3: S3Client) -> Iterator[WriteSpy]:
    recorder = WriteSpy(s3)
    yield recorder
    recorder.close()


#: The reporter role's unique id, which the promoter trusts for a run's manifest.
REPORTER_ID = "AROAREPORTER"


def promoter(
    s3: S3Client, nightly: str = NIGHTLY, page_retention: PageRetention | None = None
) -> PromotionService:
    return build_service(
        settings=PromoterSettings(
            staging_bucket=STAGING,
            nightly_bucket=nightly,
            nightly_base_url=NIGHTLY_URL,
            trusted_reporter_id=REPORTER_ID,
            allowed_indexes=frozenset(),
            # No signer is given: this service writes no verdicts.
            verdict_key_arn="arn:aws:kms:us-east-1:000000000000:key/unused",
            nightly_retention_mode=page_retention.mode if page_retention else None,
            nightly_page_retention_days=page_retention.days if page_retention else None,
        ),
        staging=Bucket(s3, STAGING, limits=TransferLimits(workers=4)),
        nightly=Bucket(s3, nightly, limits=TransferLimits(workers=4)),
    )


def promote(
    s3: S3Client,
    run_id: str,
    wheels: list[Path],
    nightly_bucket: str = NIGHTLY,
    page_retention: PageRetention | None = None,
) -> PromotionRecord:
    """Stage ``wheels`` as ``wheelgate stage`` does, write the manifest, run the promoter."""
    staging, nightly = Bucket(s3, STAGING), Bucket(s3, nightly_bucket)
    stage(
        staging=staging,
        nightly=nightly,
        nightly_base_url=NIGHTLY_URL,
        run_id=run_id,
        index=INDEX,
        commit=COMMIT,
        artifacts=inspect_files(wheels),
    )
    manifest = manifest_for(run_id, COMMIT, INDEX, wheels)
    key = f"manifests/{run_id}.json"
    staging.put(key, json.dumps(manifest).encode(), content_type="application/json")
    # Written by the reporter role, the one writer the promoter trusts for a run's manifest.
    event = ManifestEvent(key=key, principal_id=f"AWS:{REPORTER_ID}:ceph")
    decision = promoter(s3, nightly_bucket, page_retention).handle(event)
    record = None if decision is None else decision.record
    assert record is not None
    return record


def versions(s3: S3Client, bucket: str = NIGHTLY) -> dict[str, str]:
    return version_snapshot(s3, bucket)


def error_code(exc: pytest.ExceptionInfo[ClientError]) -> str:
    return str(exc.value.response["Error"]["Code"])


@pytest.fixture(scope="module")
def released(s3: S3Client, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two wheels promoted into the COMPLIANCE bucket by the real promoter."""
    tmp = tmp_path_factory.mktemp("released")
    wheels = [build_wheel(tmp, "alpha", "1.0"), build_wheel(tmp, "beta", "2.0")]
    record = promote(s3, "ceph-run-1", wheels)
    assert record.state.value == "promoted", record.message
    return wheels


def test_every_promoted_copy_carries_retention(s3: S3Client, released: list[Path]) -> None:
    keys = [f"{INDEX}/{w.name}" for w in released]
    keys += [key + ".metadata" for key in keys]
    for key in keys:
        retention = s3.get_object_retention(Bucket=NIGHTLY, Key=key)["Retention"]
        assert retention["Mode"] == "COMPLIANCE", key
        until = retention["RetainUntilDate"]
        assert until > datetime.now(UTC) + timedelta(hours=23), (key, until)
        head = s3.head_object(Bucket=NIGHTLY, Key=key)
        assert head["ObjectLockMode"] == "COMPLIANCE"


def test_deleting_a_locked_version_is_refused(s3: S3Client, released: list[Path]) -> None:
    key = f"{INDEX}/{released[0].name}"
    version = s3.head_object(Bucket=NIGHTLY, Key=key)["VersionId"]
    before = versions(s3)
    with pytest.raises(ClientError) as refused:
        s3.delete_object(Bucket=NIGHTLY, Key=key, VersionId=version)
    assert error_code(refused) == "AccessDenied"
    with pytest.raises(ClientError) as bypass:
        s3.delete_object(Bucket=NIGHTLY, Key=key, VersionId=version, BypassGovernanceRetention=True)
    assert error_code(bypass) == "AccessDenied", "COMPLIANCE ignores the governance bypass"
    assert versions(s3) == before
    body = s3.get_object(Bucket=NIGHTLY, Key=key, VersionId=version)["Body"].read()
    assert body == released[0].read_bytes()


def test_compliance_retention_cannot_be_shortened(s3: S3Client, released: list[Path]) -> None:
    key = f"{INDEX}/{released[1].name}"
    current = s3.get_object_retention(Bucket=NIGHTLY, Key=key)["Retention"]
    shorter = {"Mode": "COMPLIANCE", "RetainUntilDate": datetime.now(UTC) + timedelta(minutes=1)}
    for bypass in (False, True):
        with pytest.raises(ClientError) as refused:
            s3.put_object_retention(
                Bucket=NIGHTLY,
                Key=key,
                Retention=shorter,  # type: ignore[arg-type]
                BypassGovernanceRetention=bypass,
            )
        assert error_code(refused) == "AccessDenied"
    assert s3.get_object_retention(Bucket=NIGHTLY, Key=key)["Retention"] == current


def test_governance_retention_gives_way_only_to_an_explicit_bypass(s3: S3Client) -> None:
    # Given an object under the GOVERNANCE default retention (the other mode the stack allows)
    version = s3.put_object(Bucket=GOVERNED, Key="w.whl", Body=b"wheel")["VersionId"]
    shorter = {"Mode": "GOVERNANCE", "RetainUntilDate": datetime.now(UTC) + timedelta(minutes=1)}
    # When it is shortened or deleted without the bypass header, Ceph refuses
    with pytest.raises(ClientError) as shorten:
        s3.put_object_retention(Bucket=GOVERNED, Key="w.whl", Retention=shorter)  # type: ignore[arg-type]
    assert error_code(shorten) == "AccessDenied"
    with pytest.raises(ClientError) as delete:
        s3.delete_object(Bucket=GOVERNED, Key="w.whl", VersionId=version)
    assert error_code(delete) == "AccessDenied"
    # Then only a principal allowed s3:BypassGovernanceRetention (which the stack's bucket
    # policy denies to everyone, docs/security.md) could remove it
    s3.delete_object(
        Bucket=GOVERNED, Key="w.whl", VersionId=version, BypassGovernanceRetention=True
    )
    assert versions(s3, GOVERNED) == {}


def test_promoter_refuses_other_bytes_for_a_released_name_before_any_write(
    s3: S3Client, released: list[Path], spy: WriteSpy, tmp_path: Path
) -> None:
    # Given a later run that built a file of a released name with other bytes
    impostor = build_wheel(tmp_path, "alpha", "1.0", payload_bytes=4096)
    assert impostor.name == released[0].name
    assert impostor.read_bytes() != released[0].read_bytes()
    before = versions(s3)
    # When the promoter handles its manifest
    record = promote(s3, "ceph-run-2", [impostor])
    # Then it is rejected for the conflict, and nothing was written to nightly at all: the
    # promoter found the released copy by reading nightly, not by trying to overwrite it
    assert (record.state.value, record.reason) == ("rejected", "nightly-conflict")
    assert impostor.name in record.message
    assert spy.writes_to(NIGHTLY) == []
    assert any(bucket == NIGHTLY for _, bucket, _ in spy.calls), "the spy saw no nightly call"
    assert versions(s3) == before


def test_promoter_does_not_copy_a_file_that_is_already_released(
    s3: S3Client, released: list[Path], spy: WriteSpy, tmp_path: Path
) -> None:
    # Given a new run with the released alpha (same bytes) and a new gamma
    gamma = build_wheel(tmp_path, "gamma", "1.0")
    record = promote(s3, "ceph-run-3", [released[0], gamma])
    assert record.state.value == "promoted", record.message
    actions = {f.filename: f.action for s in record.sets for f in s.files}
    assert actions == {released[0].name: "already-released", gamma.name: "copied"}
    # The spy sees the copy it should (so it would see a write to alpha) and none to alpha.
    written = {key for _, key in spy.writes_to(NIGHTLY)}
    assert f"{INDEX}/{gamma.name}" in written
    assert not any(key.startswith(f"{INDEX}/{released[0].name}") for key in written)
    assert len([k for k in versions(s3) if k.startswith(f"{INDEX}/{released[0].name}@")]) == 1


# -- index pages: a short lock of their own; files keep the default ---------------------------


def _page_versions(s3: S3Client, key: str) -> list[dict[str, Any]]:
    listing = s3.list_object_versions(Bucket=PAGED, Prefix=key)
    return sorted(
        (v for v in listing.get("Versions", []) if v["Key"] == key),
        key=lambda v: v["LastModified"],
    )


def test_pages_get_a_short_lock_and_files_the_bucket_default(s3: S3Client, tmp_path: Path) -> None:
    # Given a nightly bucket whose default retention is 30 days, and the promoter configured to
    # lock its pages for 1 day (the stack's nightly_page_retention_days)
    first, second = build_wheel(tmp_path, "paged", "1.0"), build_wheel(tmp_path, "paged", "2.0")
    # When two runs release a version each, so the project page is written, then replaced
    for run_id, wheel in (("ceph-page-1", first), ("ceph-page-2", second)):
        record = promote(s3, run_id, [wheel], nightly_bucket=PAGED, page_retention=PAGE_LOCK)
        assert record.state.value == "promoted", record.message
    now = datetime.now(UTC)
    # Then every released file and .metadata carries the bucket's 30-day default
    for wheel in (first, second):
        for key in (f"{INDEX}/{wheel.name}", f"{INDEX}/{wheel.name}.metadata"):
            retention = s3.get_object_retention(Bucket=PAGED, Key=key)["Retention"]
            assert retention["Mode"] == "GOVERNANCE", key
            assert retention["RetainUntilDate"] > now + timedelta(days=PAGED_FILE_DAYS - 1), key
    # And every version of every page the promoter wrote carries its own 1-day date
    pages = [
        f"{INDEX}/paged/index.html",
        f"{INDEX}/paged/index.json",
        f"{INDEX}/index.html",
        f"{INDEX}/index.json",
    ]
    for key in pages:
        found = _page_versions(s3, key)
        assert found, key
        for version in found:
            retention = s3.get_object_retention(
                Bucket=PAGED, Key=key, VersionId=version["VersionId"]
            )["Retention"]
            assert retention["Mode"] == "GOVERNANCE", key
            until = retention["RetainUntilDate"]
            assert now + timedelta(hours=23) < until < now + timedelta(days=1, hours=1), (
                key,
                until,
            )
    # And the replaced project page version is still held until its date: a delete is refused
    replaced = _page_versions(s3, f"{INDEX}/paged/index.json")
    assert len(replaced) == 2, "the second run did not replace the project page"
    old = replaced[0]["VersionId"]
    with pytest.raises(ClientError) as refused:
        s3.delete_object(Bucket=PAGED, Key=f"{INDEX}/paged/index.json", VersionId=old)
    assert error_code(refused) == "AccessDenied"
    body = s3.get_object(Bucket=PAGED, Key=f"{INDEX}/paged/index.json", VersionId=old)["Body"]
    assert first.name in body.read().decode()
