"""Only ``storage/`` speaks HTTP: every other layer reads and downloads through
:mod:`wheelgate.storage.http`, so there is one retry policy and one translation of errors.
Every import counts, including those made inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "lambdas" / "wheelgate"
#: Modules that are HTTP clients (their submodules too).
HTTP_CLIENTS = frozenset(
    {"urllib.request", "urllib.error", "urllib3", "http.client", "requests", "httpx", "aiohttp"}
)


def http_clients_imported(source: str) -> set[str]:
    """The HTTP client modules ``source`` imports."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(
            client
            for name in names
            for client in HTTP_CLIENTS
            if name == client or name.startswith(client + ".")
        )
    return found


def test_the_detector_sees_each_form_of_import() -> None:
    source = (
        "import urllib3.util\n"
        "from http import client\n"
        "def f():\n"
        "    from urllib import request\n"
        "    import requests\n"
        "from urllib.parse import urlsplit\n"
        "from http.server import HTTPServer\n"
    )

    assert http_clients_imported(source) == {"urllib3", "http.client", "urllib.request", "requests"}


def test_only_storage_imports_an_http_client() -> None:
    outside = {
        str(path.relative_to(PACKAGE)): sorted(found)
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "storage"
        and (found := http_clients_imported(path.read_text()))
    }

    assert outside == {}, "use wheelgate.storage.http instead"
