"""A stand-in for third-party download hosts: an HTTPS server on 127.0.0.1 (self-signed
certificate for 127.0.0.1) that serves files and misbehaves on request.

Paths: ``/files/<name>`` serves a file; ``/reset/<name>`` sends half of it then resets the
connection; ``/slow/<name>`` sends the headers then stalls for ``stall`` seconds;
``/flaky/<name>`` answers 503 to the first request and serves the file afterwards;
``/redirect/<name>`` redirects to the file over plain http; ``/offsite/<name>`` redirects to it
over https on another host name (``localhost``); anything else is 404. Every
request is counted per path, so tests can tell what was downloaded. Used by
tests/integration/test_deps.py and bench/deps_stream.py.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import struct
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

CHUNK = 1024 * 1024


def self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    """Write ``cert.pem`` and ``key.pem`` for IP 127.0.0.1; return their paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


class _Handler(BaseHTTPRequestHandler):
    server: ThirdPartyServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        server = self.server
        with server.lock:
            server.requests[self.path] += 1
            count = server.requests[self.path]
        mode, _, name = self.path.lstrip("/").partition("/")
        source = server.files.get(name)
        if source is None or mode not in ("files", "reset", "slow", "flaky", "redirect", "offsite"):
            self.send_error(404)
            return
        if mode in ("redirect", "offsite"):
            self.send_response(302)
            location = {"redirect": "http://127.0.0.1", "offsite": "https://localhost"}[mode]
            self.send_header("Location", f"{location}:{server.server_address[1]}/files/{name}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if mode == "flaky" and count == 1:
            self.send_error(503, "try again")
            return
        size = len(source) if isinstance(source, bytes) else source.stat().st_size
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        if mode == "slow":
            self.wfile.flush()
            time.sleep(server.stall)
            return
        limit = size // 2 if mode == "reset" else size
        sent = 0
        for chunk in _chunks(source):
            chunk = chunk[: limit - sent]
            self.wfile.write(chunk)
            sent += len(chunk)
            if sent >= limit:
                break
        if mode == "reset":
            self.wfile.flush()
            # SO_LINGER 0: close with a TCP reset instead of an orderly shutdown.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()


def _chunks(source: bytes | Path) -> Any:
    if isinstance(source, bytes):
        for start in range(0, len(source), CHUNK):
            yield source[start : start + CHUNK]
        return
    with source.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            yield chunk


class ThirdPartyServer(ThreadingHTTPServer):
    """The server; ``files`` maps names to bytes or to a file on disk (served in chunks)."""

    daemon_threads = True

    def __init__(self, directory: Path, stall: float = 5.0) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.cert, key = self_signed_certificate(directory)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert, key)
        self.socket = context.wrap_socket(self.socket, server_side=True)
        self.files: dict[str, bytes | Path] = {}
        self.requests: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.stall = stall
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.server_address[1]}"

    def url(self, name: str, mode: str = "files") -> str:
        return f"{self.base_url}/{mode}/{name}"

    def start(self) -> ThirdPartyServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
