"""The CloudFront Function (stacks/functions/index_router.js) run under node."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from stacks.cdn import INDEX_ROUTER_SOURCE
from wheelgate.layout import HTML_PAGE, JSON_PAGE

HARNESS = Path(__file__).with_name("index_router_harness.js")
NODE = shutil.which("node")
PEP691_PIP = (
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
    "text/html;q=0.01"
)
JSON_TYPE = "application/vnd.pypi.simple.v1+json"

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def _event(uri: str, accept: str | None = None, querystring: str = "") -> dict[str, Any]:
    headers = {"host": {"value": "d111111abcdef8.cloudfront.net"}}
    if accept is not None:
        headers["accept"] = {"value": accept}
    query = {}
    if querystring:
        key, _, value = querystring.partition("=")
        query[key] = {"value": value}
    return {
        "version": "1.0",
        "context": {"eventType": "viewer-request"},
        "viewer": {"ip": "192.0.2.1"},
        "request": {
            "method": "GET",
            "uri": uri,
            "querystring": query,
            "headers": headers,
            "cookies": {},
        },
    }


def _run(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    assert NODE is not None
    completed = subprocess.run(
        [NODE, str(HARNESS), str(INDEX_ROUTER_SOURCE)],
        input=json.dumps(events),
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    results: list[dict[str, Any]] = json.loads(completed.stdout)
    return results


# (uri, Accept, expected uri, expected normalized Accept)
ROUTES = [
    ("/v2/gfx94X-dcgpu/", None, "/v2/gfx94X-dcgpu/index.html", "text/html"),
    ("/v2/gfx94X-dcgpu", None, "/v2/gfx94X-dcgpu/index.html", "text/html"),
    ("/v2/gfx94X-dcgpu/torch/", "text/html", "/v2/gfx94X-dcgpu/torch/index.html", "text/html"),
    ("/v2/gfx94X-dcgpu/torch/", PEP691_PIP, "/v2/gfx94X-dcgpu/torch/index.json", JSON_TYPE),
    ("/v2/gfx94X-dcgpu/torch", JSON_TYPE, "/v2/gfx94X-dcgpu/torch/index.json", JSON_TYPE),
    # The client prefers HTML: serve HTML even though JSON is acceptable.
    (
        "/v2/gfx94X-dcgpu/torch/",
        "application/vnd.pypi.simple.v1+json;q=0.5, text/html",
        "/v2/gfx94X-dcgpu/torch/index.html",
        "text/html",
    ),
    (
        "/v2/gfx94X-dcgpu/torch/",
        "application/vnd.pypi.simple.latest+json",
        "/v2/gfx94X-dcgpu/torch/index.json",
        JSON_TYPE,
    ),
    # JSON explicitly refused (q=0) falls back to HTML.
    ("/v2/gfx94X-dcgpu/", f"{JSON_TYPE};q=0", "/v2/gfx94X-dcgpu/index.html", "text/html"),
    ("/v2/gfx94X-dcgpu/", "*/*", "/v2/gfx94X-dcgpu/index.html", "text/html"),
    # Files pass through untouched, whatever the Accept header says.
    (
        "/v2/gfx94X-dcgpu/torch-2.7.0-cp312-cp312-linux_x86_64.whl",
        PEP691_PIP,
        "/v2/gfx94X-dcgpu/torch-2.7.0-cp312-cp312-linux_x86_64.whl",
        JSON_TYPE,
    ),
    (
        "/v2/gfx94X-dcgpu/torch-2.7.0-cp312-cp312-linux_x86_64.whl.metadata",
        None,
        "/v2/gfx94X-dcgpu/torch-2.7.0-cp312-cp312-linux_x86_64.whl.metadata",
        "text/html",
    ),
    (
        "/v2/gfx94X-dcgpu/torch-2.7.0+rocm7.0-cp312-cp312-linux_x86_64.whl",
        None,
        "/v2/gfx94X-dcgpu/torch-2.7.0%2Brocm7.0-cp312-cp312-linux_x86_64.whl",
        "text/html",
    ),
    (
        "/v2/gfx94X-dcgpu/torch-2.7.0%2Brocm7.0-cp312-cp312-linux_x86_64.whl",
        None,
        "/v2/gfx94X-dcgpu/torch-2.7.0%2Brocm7.0-cp312-cp312-linux_x86_64.whl",
        "text/html",
    ),
    # Odd but harmless paths are normalized, so they share one cache entry.
    ("/", None, "/index.html", "text/html"),
    ("//", None, "/index.html", "text/html"),
    ("//v2//gfx94X-dcgpu//", None, "/v2/gfx94X-dcgpu/index.html", "text/html"),
    ("/v2/gfx94X-dcgpu/torch%2Bcpu/", None, "/v2/gfx94X-dcgpu/torch%2Bcpu/index.html", "text/html"),
]


@pytest.mark.parametrize(("uri", "accept", "expected_uri", "expected_accept"), ROUTES)
def test_routes(uri: str, accept: str | None, expected_uri: str, expected_accept: str) -> None:
    # Given a viewer request, when the function runs, then the origin URI names the S3 object.
    (result,) = _run([_event(uri, accept)])
    assert result["uri"] == expected_uri
    assert result["headers"]["accept"] == {"value": expected_accept}


def test_query_string_is_kept() -> None:
    (result,) = _run([_event("/v2/gfx94X-dcgpu/", None, "x=1")])
    assert result["uri"] == "/v2/gfx94X-dcgpu/index.html"
    assert result["querystring"] == {"x": {"value": "1"}}


@pytest.mark.parametrize(
    "uri",
    [
        "/v2/../manifests/",
        "/v2/%2e%2e/records/",
        "/v2/./gfx94X-dcgpu/",
        "/v2/gfx%2Fescape/",
        "/v2/bad%ZZ/",
        "/v2/nul%00/",
        "/v2/back%5Cslash/",
    ],
)
def test_traversal_and_malformed_paths_are_refused(uri: str) -> None:
    (result,) = _run([_event(uri)])
    assert result["statusCode"] == 400
    assert "uri" not in result


def test_source_fits_cloudfront_functions_limits() -> None:
    source = INDEX_ROUTER_SOURCE.read_text()
    # CloudFront Functions: 10 KB of code, no modules or network access.
    assert len(source.encode()) < 10 * 1024
    assert "require(" not in source
    assert "module.exports" not in source


def test_page_names_match_the_key_layout() -> None:
    # JavaScript cannot import layout.py; this keeps the two spellings from drifting apart.
    source = INDEX_ROUTER_SOURCE.read_text()
    assert f"'{HTML_PAGE}'" in source
    assert f"'{JSON_PAGE}'" in source
