"""A reverse proxy on 127.0.0.1 that fails reads the way a flaky network does, for the HTTP
clients of ``storage/`` (tests/integration/test_http_faults.py).

It stands in front of an ``upstream`` base URL (the local stack's staging or nightly server) and
fails each path's first reads, one of each fault in :data:`FAULTS`: a 503, a connection closed
before any response, and a response whose body breaks off halfway (the full Content-Length
announced, a reset after half of it). Later reads of the path pass through. With ``tls``, it
serves https under a self-signed certificate for 127.0.0.1 (``cert``), as a download host does.
Every request is counted per path and every fault per kind; upstream reads wait at most
:data:`UPSTREAM_TIMEOUT` seconds, and the server stops with its context.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
import threading
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.integration.thirdparty import self_signed_certificate

#: The faults each path meets, in order, before its reads pass through.
FAULTS = ("503", "dropped before the response", "dropped during the response")
#: Seconds an upstream read may take.
UPSTREAM_TIMEOUT = 10


def _reset(connection: socket.socket) -> None:
    # SO_LINGER 0: close with a TCP reset instead of an orderly shutdown.
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.close()


class _Handler(BaseHTTPRequestHandler):
    server: FaultyProxy

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        fault = self.server.next_fault(self.path)
        if fault == "dropped before the response":
            _reset(self.connection)
            return
        if fault == "503":
            self.send_error(503, "try again")
            return
        status, headers, body = self.server.upstream_read(self.path)
        self.send_response(status)
        for name in ("Content-Type", "ETag", "Last-Modified"):
            if name in headers:
                self.send_header(name, headers[name])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if fault == "dropped during the response":
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            _reset(self.connection)
            return
        self.wfile.write(body)


class FaultyProxy(ThreadingHTTPServer):
    """The proxy in front of ``upstream``; ``url`` is its base URL."""

    daemon_threads = True

    def __init__(self, upstream: str, *, tls: Path | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.upstream = upstream.rstrip("/")
        self.cert: Path | None = None
        if tls is not None:
            self.cert, key = self_signed_certificate(tls)
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(self.cert, key)
            self.socket = context.wrap_socket(self.socket, server_side=True)
        self.requests: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        scheme = "https" if self.cert else "http"
        return f"{scheme}://127.0.0.1:{self.server_address[1]}/"

    def next_fault(self, path: str) -> str | None:
        """The fault this read of ``path`` meets (``None``: it passes through)."""
        with self._lock:
            self.requests[path] += 1
            seen = self.requests[path]
            fault = FAULTS[seen - 1] if seen <= len(FAULTS) else None
            if fault:
                self.faults[fault] += 1
            return fault

    def upstream_read(self, path: str) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and body of ``path`` upstream (an error status with its body)."""
        try:
            with urllib.request.urlopen(self.upstream + path, timeout=UPSTREAM_TIMEOUT) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()


@contextlib.contextmanager
def faulty_proxy(upstream: str, *, tls: Path | None = None) -> Iterator[FaultyProxy]:
    """A running :class:`FaultyProxy`, stopped on exit."""
    proxy = FaultyProxy(upstream, tls=tls)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        proxy.shutdown()
        proxy.server_close()
        thread.join(timeout=10)
