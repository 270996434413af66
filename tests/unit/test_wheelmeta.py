from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

import pytest

from wheelgate.core.wheelmeta import FileRangeReader, WheelMetadataError, read_core_metadata
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


def test_zip64_archives_are_read(tmp_path: Path) -> None:
    data = b"Metadata-Version: 2.1\nName: x\nVersion: 1\n\n"
    wheel = write_zip(
        tmp_path / "x-1-py3-none-any.whl",
        {"x/a.py": b"", "x-1.dist-info/METADATA": data},
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
