"""S3 endpoints that fail the way a flaky night does, for real clients over HTTP: one nobody
listens on, a moto server that enforces authentication (so made-up keys are refused with 403
InvalidAccessKeyId), a server that answers every request with 503 SlowDown, and one that
accepts connections and never answers. Plus an environment with no credentials at all."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

#: S3's answer to a client that sends too many requests.
SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message><RequestId>r</RequestId></Error>"
)
#: The error a command names after two attempts met SlowDown (HEAD: its status alone).
SLOW_DOWN_ERROR = r"SlowDown \(HTTP 503, 2 attempts\)|HTTP 503 \(2 attempts\)"
#: Keys moto's IAM has never issued: with authentication enforced, every request is refused.
MADE_UP_KEYS = {"AWS_ACCESS_KEY_ID": "AKIAMADEUPKEY0000000", "AWS_SECRET_ACCESS_KEY": "made-up"}
#: Credentials moto accepts when it does not enforce authentication.
TEST_KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
#: Where botocore looks for credentials besides the variables above; unset or pointed nowhere
#: for "no credentials".
CREDENTIAL_SOURCES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
)


@dataclass(frozen=True)
class BrokenStorage:
    """One way storage fails: its ``endpoint``, the environment a client needs to meet it
    (``None``: the variable is unset), and the error class the command must name (a regular
    expression: S3 answers a HEAD with a status and no body, so no error code)."""

    name: str
    endpoint: str
    error: str
    env: Mapping[str, str | None] = field(default_factory=dict)
    #: Seconds a client waits per connect or read: short only where nothing ever answers,
    #: so that a loaded machine never turns another failure into a timeout.
    timeout: float = 10.0

    def quick(self) -> list[str]:
        """Options that make a command give up quickly: two attempts, ``timeout`` each."""
        return ["--storage-attempts", "2", "--storage-timeout", str(self.timeout)]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def unreachable() -> BrokenStorage:
    """An endpoint nobody listens on: connection refused."""
    return BrokenStorage(
        "unreachable", f"http://127.0.0.1:{free_port()}", "EndpointConnectionError", TEST_KEYS
    )


def no_credentials(endpoint: str) -> BrokenStorage:
    """Any endpoint, and no credentials anywhere botocore looks."""
    env: dict[str, str | None] = dict.fromkeys(CREDENTIAL_SOURCES)
    env.update(
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        AWS_CONFIG_FILE=os.devnull,
        AWS_EC2_METADATA_DISABLED="true",
    )
    return BrokenStorage("no-credentials", endpoint, "NoCredentialsError", env)


class _SlowDown(BaseHTTPRequestHandler):
    """503 SlowDown to every request, as S3 answers one it throttles."""

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.send_response(503)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(SLOW_DOWN)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(SLOW_DOWN)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _answer

    def log_message(self, *_: object) -> None:
        pass


@contextlib.contextmanager
def slowing_down() -> Iterator[BrokenStorage]:
    """A server that answers every request with 503 SlowDown, however often it is retried."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowDown)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        yield BrokenStorage("slow-down", endpoint, SLOW_DOWN_ERROR, TEST_KEYS)
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def never_answering() -> Iterator[BrokenStorage]:
    """A socket that takes connections (the kernel completes them) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        # Room for every connection the tests make, so none waits in SYN (a connect timeout).
        listener.listen(4096)
        endpoint = f"http://127.0.0.1:{listener.getsockname()[1]}"
        yield BrokenStorage("timeout", endpoint, "ReadTimeoutError", TEST_KEYS, timeout=0.5)


def warm_up(endpoint: str) -> None:
    """One request with the made-up keys, which moto refuses (and patiently: its first)."""
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=MADE_UP_KEYS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=MADE_UP_KEYS["AWS_SECRET_ACCESS_KEY"],
        config=Config(read_timeout=60, retries={"total_max_attempts": 1}),
    )
    with contextlib.suppress(ClientError):
        client.list_objects_v2(Bucket="warm-up")


@contextlib.contextmanager
def refusing_made_up_keys() -> Iterator[BrokenStorage]:
    """A moto server that enforces authentication: unknown keys get 403 InvalidAccessKeyId."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        env={**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "0"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("the moto server did not start")
            time.sleep(0.1)
        # moto builds its backends on the first request, which can outlast the tests' short
        # timeouts: take that request here, and its refusal.
        warm_up(f"http://127.0.0.1:{port}")
        yield BrokenStorage(
            "bad-credentials",
            f"http://127.0.0.1:{port}",
            r"InvalidAccessKeyId \(HTTP 403\)|HTTP 403",
            MADE_UP_KEYS,
        )
    finally:
        process.terminate()
        process.wait(timeout=10)
