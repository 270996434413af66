"""Sample manifests and names shared by the unit tests."""

from __future__ import annotations

import json
from typing import Any

SHA_A = "a" * 64
SHA_B = "b" * 64
COMMIT = "c" * 40
TORCH = "torch-2.7.0a0+rocm7.0.0-cp312-cp312-linux_x86_64.whl"
INDEX = "v2/gfx94X-dcgpu"
#: deps.yml's python section with one pinned wheel (the file host: files.example.org).
DEPS_FILELOCK = """\
python:
  - requirement: filelock==3.18.0
    indexes: all
    wheels:
      - url: https://files.example.org/wheels/filelock-3.18.0-py3-none-any.whl
        sha256: e97ec1ff7ef0cd1f7a6b2ec5b58ea8a4c62a28d51bd7462fb1c60da8bc5ae9e5
        size: 16215
"""


def manifest_dict(**overrides: Any) -> dict[str, Any]:
    """The documented v2 example: one set, one file, one passed test that installed it."""
    doc: dict[str, Any] = {
        "schema": "wheelgate/manifest/v2",
        "run_id": "16454515470",
        "commit": COMMIT,
        "sets": [
            {
                "index": INDEX,
                "files": [{"filename": TORCH, "sha256": SHA_A, "size": 632000000}],
                "tests": [
                    {
                        "name": "pytorch-gfx94X",
                        "result": "passed",
                        "url": "https://ci/runs/1",
                        "installed": [{"sha256": SHA_A, "filename": TORCH}],
                    }
                ],
            }
        ],
    }
    doc.update(overrides)
    return doc


def manifest_dict_v1(**overrides: Any) -> dict[str, Any]:
    """The same run as a v1 manifest: its tests say nothing of what they installed."""
    doc = manifest_dict(schema="wheelgate/manifest/v1", **overrides)
    for artifact_set in doc["sets"]:
        for test in artifact_set["tests"]:
            test.pop("installed", None)
    return doc


def manifest_bytes(**overrides: Any) -> bytes:
    return json.dumps(manifest_dict(**overrides)).encode()


#: The smallest environment the promoter starts with: the buckets, the nightly URL, and the three
#: settings it never runs without (the reporter, the allowed directories, the verdict key).
PROMOTER_ENV = {
    "WHEELGATE_STAGING_BUCKET": "s",
    "WHEELGATE_NIGHTLY_BUCKET": "n",
    "WHEELGATE_NIGHTLY_BASE_URL": "https://nightly.example/",
    "WHEELGATE_TRUSTED_REPORTER_ID": "AROAREPORTER",
    "WHEELGATE_ALLOWED_INDEXES": json.dumps([INDEX]),
    "WHEELGATE_VERDICT_KEY_ARN": "arn:aws:kms:us-east-1:123456789012:key/verdicts",
}
