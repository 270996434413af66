"""Build small, real, installable wheels for the demo, tests and benchmarks.

The wheels follow the binary distribution format (METADATA, WHEEL, RECORD with hashes), so pip
and uv install them like any other; ``payload_bytes`` pads one to a chosen size with
incompressible data, to stand in for a large GPU wheel.
"""

from __future__ import annotations

import base64
import hashlib
import os
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def build_wheel(
    directory: Path,
    name: str,
    version: str,
    *,
    requires: Sequence[str] = (),
    requires_python: str | None = ">=3.9",
    tag: str = "py3-none-any",
    payload_bytes: int = 0,
    module_source: str | None = None,
    files: Mapping[str, bytes] | None = None,
) -> Path:
    """Write ``<name>-<version>-<tag>.whl`` into ``directory`` and return its path.

    ``tag`` may start with a build tag (``1-py3-none-any``), which goes to WHEEL's ``Build``.
    ``files`` adds members (path in the wheel -> bytes), such as ``<dist>.data/scripts/x``
    (``{data}`` in a path is the wheel's ``.data`` directory, ``{dist_info}`` its
    ``.dist-info``).
    """
    build, wheel_tag = tag.split("-", 1) if tag.count("-") == 3 else ("", tag)
    module = canonicalize_name(name).replace("-", "_")
    dist = f"{module}-{version}"
    info = f"{dist}.dist-info"
    metadata_lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if requires_python:
        metadata_lines.append(f"Requires-Python: {requires_python}")
    metadata_lines += [f"Requires-Dist: {r}" for r in requires]
    members: dict[str, bytes] = {
        f"{module}/__init__.py": (module_source or f'__version__ = "{version}"\n').encode(),
        f"{info}/METADATA": ("\n".join(metadata_lines) + "\n\n").encode(),
        f"{info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: wheelgate\nRoot-Is-Purelib: true\n"
            + (f"Build: {build}\n" if build else "")
            + f"Tag: {wheel_tag}\n"
        ).encode(),
    }
    if payload_bytes:
        members[f"{module}/payload.bin"] = os.urandom(payload_bytes)
    for member, data in (files or {}).items():
        members[member.format(data=f"{dist}.data", dist_info=info)] = data
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in members.items())
    record += f"{info}/RECORD,,\n"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{module}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for member, data in members.items():
            compress = zipfile.ZIP_STORED if member.endswith(".bin") else zipfile.ZIP_DEFLATED
            archive.writestr(member, data, compress_type=compress)
        archive.writestr(f"{info}/RECORD", record)
    return path


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def manifest_for(
    run_id: str,
    commit: str,
    index: str,
    files: Sequence[Path],
    *,
    result: str = "passed",
    test: str = "smoke",
    installed: Sequence[Path] | None = None,
) -> dict[str, Any]:
    """A manifest v2 document with one set: ``files`` (their real SHA-256 and size) and one
    test with ``result`` that installed ``installed`` (default: exactly ``files``).

    It writes the evidence itself, without installing anything: for the tests and benchmarks
    whose subject is the promoter's decision on a given manifest (the hostile catalogue, the
    promoter's checks, fan-out, Ceph). A test of the whole cycle installs the run with pip
    instead and reports pip's installation report (``tests/integration/installs.py``)."""
    return {
        "schema": "wheelgate/manifest/v2",
        "run_id": run_id,
        "commit": commit,
        "sets": [
            {
                "index": index,
                "files": [
                    {"filename": f.name, "sha256": _sha256(f), "size": f.stat().st_size}
                    for f in files
                ],
                "tests": [
                    {
                        "name": test,
                        "result": result,
                        "installed": [
                            {"sha256": _sha256(f), "filename": f.name}
                            for f in (files if installed is None else installed)
                        ],
                    }
                ],
            }
        ],
    }
