from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

import pytest

from wheelgate.core.wheelmeta import (
    MAX_METADATA_BYTES,
    FileRangeReader,
    WheelIdentityError,
    WheelMetadataError,
    read_core_metadata,
)
from wheelgate.local.sample_wheels import build_wheel


def read(path: Path) -> tuple[bytes, str | None, int]:
    with path.open("rb") as handle:
        reader = FileRangeReader(handle, path.stat().st_size)
        meta = read_core_metadata(reader, path.name)
    return meta.content, meta.requires_python, reader.bytes_read


def metadata_in_zip(path: Path, member: str) -> bytes:
    with zipfile.ZipFile(path) as archive:
        return archive.read(member)


def test_metadata_matches_the_member_in_the_wheel(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path, "demo-torch", "2.7.0", requires=["demo-filelock>=3"])
    content, requires_python, _ = read(wheel)
    assert content == metadata_in_zip(wheel, "demo_torch-2.7.0.dist-info/METADATA")
    assert b"Requires-Dist: demo-filelock>=3" in content
    assert requires_python == ">=3.9"


def test_a_large_wheel_is_read_with_a_few_kilobytes(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path, "big", "1.0", payload_bytes=20_000_000)
    _, _, bytes_read = read(wheel)
    assert bytes_read < 100_000 < wheel.stat().st_size // 100


def write_zip(path: Path, members: dict[str, bytes], *, zip64: bool = False) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            with archive.open(info, "w", force_zip64=zip64) as handle:
                handle.write(data)
    return path


WHEEL_X = b"Wheel-Version: 1.0\nTag: py3-none-any\n"


def test_zip64_archives_are_read(tmp_path: Path) -> None:
    data = b"Metadata-Version: 2.1\nName: x\nVersion: 1\n\n"
    wheel = write_zip(
        tmp_path / "x-1-py3-none-any.whl",
        {"x/a.py": b"", "x-1.dist-info/METADATA": data, "x-1.dist-info/WHEEL": WHEEL_X},
        zip64=True,
    )
    assert read(wheel)[0] == data


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ({"x/a.py": b""}, "found 0"),
        ({"x-1.dist-info/METADATA": b"a", "X-1.dist-info/METADATA": b"b"}, "found 2"),
        ({"sub/x-1.dist-info/METADATA": b"a"}, "found 0"),
        ({"other-1.dist-info/METADATA": b"a"}, "found 0"),
    ],
)
def test_wheels_without_exactly_one_metadata_are_refused(
    tmp_path: Path, members: dict[str, bytes], message: str
) -> None:
    wheel = write_zip(tmp_path / "x-1-py3-none-any.whl", members)
    with pytest.raises(WheelMetadataError, match=message):
        read(wheel)


def test_not_a_zip_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x-1-py3-none-any.whl"
    path.write_bytes(b"not a zip at all" * 100)
    with pytest.raises(WheelMetadataError, match="not a zip"):
        read(path)


def test_corrupt_metadata_fails_its_crc(tmp_path: Path) -> None:
    data = b"Metadata-Version: 2.1\nName: x\nVersion: 1\n\n"
    wheel = write_zip(tmp_path / "x-1-py3-none-any.whl", {"x-1.dist-info/METADATA": data})
    raw = bytearray(wheel.read_bytes())
    at = raw.index(b"Name: x")
    raw[at] = ord("n")
    wheel.write_bytes(bytes(raw))
    with pytest.raises(WheelMetadataError, match="CRC"):
        read(wheel)


def test_metadata_hash_is_sha256_of_the_bytes(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path, "x", "1.0")
    with wheel.open("rb") as handle:
        meta = read_core_metadata(FileRangeReader(handle, wheel.stat().st_size), wheel.name)
    assert meta.sha256 == hashlib.sha256(meta.content).hexdigest()
    assert isinstance(io.BytesIO(meta.content).read(), bytes)


def deflated_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def lie_about_size(wheel: Path, member: str, size: int) -> None:
    """Rewrite the uncompressed size the central directory records for ``member``."""
    raw = bytearray(wheel.read_bytes())
    name = member.encode()
    at = raw.rindex(b"PK\x01\x02", 0, raw.rindex(name))
    raw[at + 24 : at + 28] = size.to_bytes(4, "little")
    wheel.write_bytes(bytes(raw))


def test_metadata_that_inflates_past_the_limit_is_refused_without_inflating_it(
    tmp_path: Path,
) -> None:
    # Given a wheel whose METADATA claims 100 bytes but inflates to far more than the limit
    bomb = b"Metadata-Version: 2.1\nName: x\nVersion: 1\n" + b"X" * (4 * MAX_METADATA_BYTES)
    wheel = deflated_zip(
        tmp_path / "x-1-py3-none-any.whl",
        {"x-1.dist-info/METADATA": bomb, "x-1.dist-info/WHEEL": WHEEL_X},
    )
    assert wheel.stat().st_size < 1_000_000
    lie_about_size(wheel, "x-1.dist-info/METADATA", 100)
    # When it is read, Then the read stops at the limit with a clear error
    with pytest.raises(WheelMetadataError, match="inflates past the 16777216-byte limit"):
        read(wheel)


def identity_wheel(tmp_path: Path, filename: str, metadata: str, tags: str) -> Path:
    dist_info = filename.split("-")[0] + "-" + filename.split("-")[1] + ".dist-info"
    wheel_lines = "".join(f"Tag: {t}\n" for t in tags.split())
    return deflated_zip(
        tmp_path / filename,
        {
            f"{dist_info}/METADATA": f"Metadata-Version: 2.1\n{metadata}\n\n".encode(),
            f"{dist_info}/WHEEL": f"Wheel-Version: 1.0\n{wheel_lines}".encode(),
        },
    )


@pytest.mark.parametrize(
    ("filename", "metadata", "tags", "problem"),
    [
        (
            "torch-2.7.0-cp311-cp311-linux_x86_64.whl",
            "Name: torch\nVersion: 2.7.0+rocm6.4",
            "cp311-cp311-linux_x86_64",
            "METADATA says Version 2.7.0+rocm6.4, the file name says 2.7.0",
        ),
        (
            "torch-2.7.0-py3-none-any.whl",
            "Name: pytorch\nVersion: 2.7.0",
            "py3-none-any",
            "METADATA says Name pytorch, the file name says torch",
        ),
        (
            "torch-2.7.0-py3-none-any.whl",
            "Name: torch\nVersion: 2.7.0",
            "cp311-cp311-linux_x86_64",
            "WHEEL says tags cp311-cp311-linux_x86_64; the file name says py3-none-any",
        ),
        (
            "torch-2.7.0-py3-none-any.whl",
            "Name: torch\nVersion: not a version",
            "py3-none-any",
            "METADATA says Version not a version",
        ),
        ("torch-2.7.0-py3-none-any.whl", "Name: torch\nVersion: 2.7.0", "", "WHEEL names no Tag"),
    ],
)
def test_a_wheel_that_is_not_what_its_name_says_is_refused(
    tmp_path: Path, filename: str, metadata: str, tags: str, problem: str
) -> None:
    wheel = identity_wheel(tmp_path, filename, metadata, tags)
    with pytest.raises(WheelIdentityError) as caught:
        read(wheel)
    assert problem in str(caught.value)


@pytest.mark.parametrize(
    ("filename", "metadata", "tags"),
    [
        # Names compare normalized, versions as PEP 440 versions, tags as the expanded set.
        ("Foo_Bar-1.0-py3-none-any.whl", "Name: foo.bar\nVersion: 1.0.0", "py3-none-any"),
        ("x-1.0-py2.py3-none-any.whl", "Name: x\nVersion: 1.0", "py2-none-any py3-none-any"),
        (
            "torch-2.7.0+rocm6.4-cp311-cp311-linux_x86_64.whl",
            "Name: torch\nVersion: 2.7.0+rocm6.4",
            "cp311-cp311-linux_x86_64",
        ),
    ],
)
def test_equivalent_spellings_are_accepted(
    tmp_path: Path, filename: str, metadata: str, tags: str
) -> None:
    read(identity_wheel(tmp_path, filename, metadata, tags))
