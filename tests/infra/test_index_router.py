"""The CloudFront Function (stacks/functions/index_router.js) under node, and local mode's
``choose_page``, both against one case table (index_router_cases.json)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from stacks.cdn import INDEX_ROUTER_SOURCE
from tests.tools import require_tool
from wheelgate.core.layout import HTML_PAGE, JSON_PAGE
from wheelgate.local.cdn import Redirect, choose_page

HARNESS = Path(__file__).with_name("index_router_harness.js")
CASES_FILE = Path(__file__).with_name("index_router_cases.json")
CASES: list[dict[str, Any]] = json.loads(CASES_FILE.read_text())["cases"]
SHARED = [c for c in CASES if not c.get("cdn_only")]


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [c["name"] for c in cases]


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


def _event_for(case: dict[str, Any]) -> dict[str, Any]:
    # CloudFront hands the function the path and the query string separately.
    uri, _, query = case["path"].partition("?")
    return _event(uri, case["accept"], query)


def _run(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    node = require_tool("node", shutil.which("node"), "Node.js 20 or newer, as CloudFront runs")
    completed = subprocess.run(
        [node, str(HARNESS), str(INDEX_ROUTER_SOURCE)],
        input=json.dumps(events),
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    results: list[dict[str, Any]] = json.loads(completed.stdout)
    return results


@pytest.fixture(scope="module")
def cdn_results() -> dict[str, dict[str, Any]]:
    """Every case through the function in one node process, by case name."""
    results = _run([_event_for(c) for c in CASES])
    return {c["name"]: r for c, r in zip(CASES, results, strict=True)}


def test_case_table_is_well_formed() -> None:
    names = _ids(CASES)
    assert len(names) == len(set(names)), "case names must be unique"
    for case in CASES:
        assert ("key" in case) != ("status" in case), case["name"]
        assert ("key" in case) == ("cdn_accept" in case), case["name"]
        assert ("location" in case) == (case.get("status") == 301), case["name"]
        if case.get("cdn_only"):
            assert case.get("reason"), f"{case['name']}: a cdn_only case says why"
        else:
            # choose_page answers a key or a redirect, never an error status.
            assert "key" in case or "location" in case, case["name"]
    # Most of the table is shared; cdn_only is the exception.
    assert len(SHARED) > 2 * (len(CASES) - len(SHARED))


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_cdn_function(case: dict[str, Any], cdn_results: dict[str, dict[str, Any]]) -> None:
    # Given a viewer request, when the function runs, then S3 is asked for the expected key
    result = cdn_results[case["name"]]
    if "status" in case:
        assert result["statusCode"] == case["status"]
        assert "uri" not in result
        if "location" in case:
            assert result["headers"]["location"] == {"value": case["location"]}
        return
    # S3 percent-decodes the origin URI; a literal '+' must never reach it (it could be
    # read as a space), so the function sends it as %2B.
    assert "+" not in result["uri"]
    assert unquote(result["uri"].removeprefix("/")) == case["key"]
    # And the forwarded Accept header is one of the two cache-key flavours.
    assert result["headers"]["accept"] == {"value": case["cdn_accept"]}


@pytest.mark.parametrize("case", SHARED, ids=_ids(SHARED))
def test_local_mode_maps_requests_like_the_cdn(case: dict[str, Any]) -> None:
    # Local mode's index servers answer the same request from the same key, or redirect it
    # to the same place.
    expected = Redirect(case["location"]) if "location" in case else case["key"]
    assert choose_page(case["path"], case["accept"] or "") == expected


def test_query_string_is_kept() -> None:
    (result,) = _run([_event("/v2/gfx94X-dcgpu/", None, "x=1")])
    assert result["uri"] == "/v2/gfx94X-dcgpu/index.html"
    assert result["querystring"] == {"x": {"value": "1"}}


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


def test_redirect_keeps_every_query_parameter() -> None:
    # CloudFront hands the function a parsed query string; the Location spells it back.
    event = _event("/v2/gfx94X-dcgpu/torch")
    event["request"]["querystring"] = {
        "a": {"value": "1", "multiValue": [{"value": "1"}, {"value": "2%20"}]},
        "flag": {"value": ""},
    }
    (result,) = _run([event])
    assert result["statusCode"] == 301
    assert result["headers"]["location"] == {"value": "/v2/gfx94X-dcgpu/torch/?a=1&a=2%20&flag"}
