"""What the tests installed is exactly what ships: every check runs before the first copy, and
a run rejected for any reason leaves nightly byte-identical.

Each test plays a misbehaving writer (a build step, a re-run) against the real S3 API (moto
server) and the promoter's own handler. moto enforces no bucket policy, so these show what the
promoter's checks catch on their own.
"""

from __future__ import annotations

import hashlib
import io
import re
import shutil
import subprocess
import sys
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.integration.test_promoter import COMMIT, Run, nightly_versions, wheel
from tests.unit.test_wheelmeta import lie_about_size
from wheelgate.core.errors import PromotionRejected
from wheelgate.core.objects import META_COMMIT, META_SHA256
from wheelgate.core.wheelmeta import MAX_METADATA_BYTES
from wheelgate.local.names import STAGING_BUCKET
from wheelgate.promotion.verification import wheel_identity
from wheelgate.storage.bucket import Bucket

# Each case stages and promotes wheels of megabytes through the promoter: `make test` only.
pytestmark = pytest.mark.slow

T = TypeVar("T")


@pytest.fixture
def run(buckets: tuple[Bucket, Bucket], tmp_path: Path, request: pytest.FixtureRequest) -> Run:
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[-50:].strip("-")
    return Run(buckets, tmp_path, f"ws-{name}", f"ws/{name}")


def rejected(run: Run, s3: Any, reason: str, manifest: dict[str, Any] | None = None) -> str:
    """Report the run; assert it is rejected for ``reason`` with nightly byte-identical."""
    before = nightly_versions(s3)
    record = run.report(manifest or run.manifest())
    assert (record["state"], record["reason"]) == ("rejected", reason), record["message"]
    assert nightly_versions(s3) == before
    return str(record["message"])


def put_staged(s3: Any, run: Run, name: str, body: bytes, **extra: Any) -> None:
    """Write a staged object directly, as a build step that skips `wheelgate stage` would."""
    s3.put_object(
        Bucket=STAGING_BUCKET,
        Key=f"runs/{run.run_id}/{run.index}/{name}",
        Body=body,
        Metadata={META_COMMIT: COMMIT, **extra.pop("Metadata", {})},
        **extra,
    )


def rewrite_member(path: Path, member_suffix: str, content: bytes) -> bytes:
    """The wheel at ``path`` with one member's bytes replaced (the zip stays valid)."""
    out = io.BytesIO()
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = content if info.filename.endswith(member_suffix) else src.read(info)
            dst.writestr(info.filename, data)
    return out.getvalue()


def manifest_of(run: Run, files: dict[str, bytes]) -> dict[str, Any]:
    """The run's manifest listing ``files``, each installed by its passed test (so only the
    checks under test can refuse it)."""
    manifest = run.manifest()
    listed = [
        {"filename": n, "sha256": hashlib.sha256(b).hexdigest(), "size": len(b)}
        for n, b in files.items()
    ]
    manifest["sets"][0]["files"] = listed
    manifest["sets"][0]["tests"][0]["installed"] = [
        {"sha256": f["sha256"], "filename": f["filename"]} for f in listed
    ]
    return manifest


def test_a_forged_metadata_sidecar_is_refused_before_any_copy(run: Run, s3: Any) -> None:
    # Given a staged wheel whose .metadata sidecar was replaced with one that declares a
    # dependency the wheel does not...
    good = wheel(run.tmp, "side")
    run.stage(good)
    forged = b"Metadata-Version: 2.1\nName: side\nVersion: 1.0\nRequires-Dist: evil\n\n"
    s3.put_object(
        Bucket=STAGING_BUCKET,
        Key=f"runs/{run.run_id}/{run.index}/{good.name}.metadata",
        Body=forged,
    )
    # Then the run is rejected, and nightly never serves the forged Requires-Dist.
    assert "not the wheel's own METADATA" in rejected(run, s3, "metadata-mismatch")


def test_a_hash_only_in_user_metadata_is_not_trusted(run: Run, s3: Any) -> None:
    # Given a build step that stages other bytes without an S3 checksum, and writes the
    # tested file's SHA-256 into the object's user metadata...
    tested = wheel(run.tmp, "meta")
    other = bytearray(tested.read_bytes())
    other[len(other) // 2] ^= 0xFF
    run.files = [tested]
    put_staged(
        s3,
        run,
        tested.name,
        bytes(other),
        Metadata={META_SHA256: hashlib.sha256(tested.read_bytes()).hexdigest()},
    )
    # Then the promoter hashes the bytes S3 serves, and the run is rejected.
    assert "staged object has" in rejected(run, s3, "checksum-mismatch")


def identity_mismatch(path: Path) -> bytes:
    """A torch wheel renamed from 2.7.0+rocm6.4 to 2.7.0: METADATA still says the former."""
    with zipfile.ZipFile(path) as archive:
        [member] = [n for n in archive.namelist() if n.endswith("METADATA")]
        metadata = archive.read(member).replace(b"Version: 2.7.0", b"Version: 2.7.0+rocm6.4")
    return rewrite_member(path, "METADATA", metadata)


def test_a_wheel_that_is_not_what_its_name_says_is_refused_at_stage_and_by_the_promoter(
    run: Run, s3: Any, tmp_path: Path
) -> None:
    original = wheel(run.tmp / "src", "torch", "2.7.0")
    renamed = tmp_path / original.name
    renamed.write_bytes(identity_mismatch(original))
    # `wheelgate stage` refuses it with a clear error before uploading anything...
    staged = subprocess.run(
        [
            sys.executable,
            "-m",
            "wheelgate",
            "stage",
            "--run-id",
            run.run_id,
            "--index",
            run.index,
            "--commit",
            COMMIT,
            "--nightly-url",
            "http://n/",
            str(renamed),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert staged.returncode == 2
    assert "METADATA says Version 2.7.0+rocm6.4, the file name says 2.7.0" in staged.stderr
    assert "Traceback" not in staged.stderr
    # ...and a writer that stages it another way gets it rejected before any copy.
    body = renamed.read_bytes()
    put_staged(s3, run, renamed.name, body, ChecksumAlgorithm="SHA256")
    message = rejected(run, s3, "wheel-name-mismatch", manifest_of(run, {renamed.name: body}))
    assert "2.7.0+rocm6.4" in message


def test_an_unreadable_wheel_leaves_nightly_untouched_even_after_good_files(
    run: Run, s3: Any
) -> None:
    # Given a set of good wheels and one whose zip directory is broken: the broken one would
    # once have been found after the good ones were copied, and left them locked in nightly.
    goods = [wheel(run.tmp, f"good{i}") for i in range(3)]
    run.stage(*goods)
    broken = b"PK\x03\x04 not really a zip" * 50
    put_staged(s3, run, "zzz-1.0-py3-none-any.whl", broken, ChecksumAlgorithm="SHA256")
    files = {g.name: g.read_bytes() for g in goods} | {"zzz-1.0-py3-none-any.whl": broken}
    rejected(run, s3, "metadata-unreadable", manifest_of(run, files))


#: What METADATA inflates to in the bomb: 1 GiB and a bit, past any limit.
BOMB_BYTES = (1024 + 1) * 1024 * 1024
#: The most memory the promoter may allocate while it refuses a bomb: twice the capped
#: inflation (zlib's output blocks, then the bytes joined from them), and 16 MiB for the rest:
#: the compressed member it reads, the moto server's copies of the object (it runs in this
#: process) and the promotion's own objects (about 11 MiB when nothing is inflated).
BOMB_PEAK_LIMIT = 2 * MAX_METADATA_BYTES + 16 * 1024 * 1024


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel of about a megabyte whose METADATA inflates to ``BOMB_BYTES`` (its headers say
    so: 32-bit sizes, which a liar can rewrite)."""
    tmp = tmp_path_factory.mktemp("bomb")
    base = wheel(tmp / "src", "bomb")
    with zipfile.ZipFile(base) as archive:
        [member] = [n for n in archive.namelist() if n.endswith("METADATA")]
    out = tmp / base.name
    with zipfile.ZipFile(base) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename == member:
                with dst.open(member, "w") as handle:
                    chunk = b"X" * (1 << 20)
                    for _ in range(BOMB_BYTES // len(chunk)):
                        handle.write(chunk)
            else:
                dst.writestr(info.filename, src.read(info))
    assert out.stat().st_size < 4 * 1024 * 1024
    return out


def peak_allocated(action: Callable[[], T]) -> tuple[T, int]:
    """``action()`` and the most memory Python allocated (every thread) while it ran."""
    tracemalloc.start()
    try:
        result = action()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


@pytest.mark.parametrize("header", ["honest", "lying"])
def test_a_metadata_bomb_is_refused_within_bounded_memory(
    run: Run, s3: Any, bomb: Path, tmp_path: Path, header: str
) -> None:
    # Given a wheel of a megabyte whose METADATA inflates to 1 GiB, its zip headers saying so
    # or (rewritten) claiming 100 bytes...
    staged = tmp_path / bomb.name
    shutil.copy(bomb, staged)
    if header == "lying":
        lie_about_size(staged, f"{bomb.name.split('-')[0]}-1.0.dist-info/METADATA", 100)
    body = staged.read_bytes()
    put_staged(s3, run, bomb.name, body, ChecksumAlgorithm="SHA256")
    # When the promoter decides the run
    message = rejected(run, s3, "metadata-unreadable", manifest_of(run, {bomb.name: body}))
    # Then it is refused, from its header or once the inflation reaches the limit...
    limit = f"{MAX_METADATA_BYTES}-byte limit"
    limit = f"over the {limit}" if header == "honest" else f"inflates past the {limit}"
    assert limit in message
    # ...and the promoter's read of the staged wheel (the same call its verification makes,
    # measured alone: the decision around it also reads and writes the session's status
    # state, whose size depends on the tests run before) never held more than the limit and
    # its margin: the bomb was not inflated
    key = f"runs/{run.run_id}/{run.index}/{bomb.name}"
    head = s3.head_object(Bucket=STAGING_BUCKET, Key=key)

    staging = Bucket(s3, STAGING_BUCKET)

    def read() -> str:
        with pytest.raises(PromotionRejected) as refused:
            wheel_identity(staging, key, head["ETag"], len(body), bomb.name, index=run.index)
        return str(refused.value)

    again, peak = peak_allocated(read)
    assert limit in again
    assert peak < BOMB_PEAK_LIMIT, f"{peak / 2**20:.0f} MiB allocated while refusing the bomb"


def test_the_same_release_under_another_file_name_is_refused(run: Run, s3: Any) -> None:
    # Given alias 1.0 released...
    first = wheel(run.tmp / "1", "alias", "1.0")
    run.stage(first)
    assert run.report(run.manifest())["state"] == "promoted"
    # When a later run stages alias 1.0.0 (other bytes), or a build-tag rebuild of 1.0...
    for n, (version, tag) in enumerate((("1.0.0", "py3-none-any"), ("1.0", "1-py3-none-any"))):
        later = Run(
            (run.staging, run.nightly), run.tmp / f"later{n}", f"{run.run_id}-{n}", run.index
        )
        respelled = wheel(later.tmp, "alias", version, tag=tag, module_source="OTHER = 1\n")
        later.stage(respelled)
        # Then it is refused: `pip install alias==1.0` would silently change bytes.
        assert "would change what it installs" in rejected(later, s3, "release-conflict")
