"""Local endpoints for the integration tests: the real S3 API over HTTP (moto server), the
promoter handler, and real pip and uv run hermetically against the served indexes, with a
decoy index planted wherever a client that is not hermetic would look (``decoy.py``): a test
during which pip or uv fetched anything from it fails."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.integration.decoy import Decoy, built_projects
from wheelgate.core.layout import STAGING
from wheelgate.local.names import NIGHTLY_BUCKET, QUEUE_NAME, STAGING_BUCKET
from wheelgate.local.snapshot import version_snapshot
from wheelgate.local.stack import LocalWheelGate
from wheelgate.storage.bucket import Bucket

#: The session's decoy, once started (the hooks below read it before fixtures exist).
_DECOYS: list[Decoy] = []


@pytest.fixture(scope="session", autouse=True)
def decoy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Decoy]:
    """The decoy index, planted in this process's environment for the whole session (every
    client a test starts inherits it), as this machine's and CI's configuration would plant
    another index."""
    server = Decoy(tmp_path_factory.mktemp("decoy"), built_projects(Path(__file__).parent))
    server.start()
    server.plant(os.environ)
    _DECOYS.append(server)
    yield server
    _DECOYS.remove(server)
    server.unplant(os.environ)
    server.stop()


def _decoy_requests() -> int:
    return len(_DECOYS[0].requests) if _DECOYS else 0


def _fail_on_decoy_fetch(seen: int) -> None:
    if _decoy_requests() > seen:
        fetched = _DECOYS[0].requests[seen:]
        raise AssertionError(
            "pip or uv reached the decoy index planted where a client that is not run "
            "hermetically looks (pip.conf, uv.toml, PIP_*/UV_* variables; "
            f"tests/integration/decoy.py): {', '.join(fetched)}"
        )


def _without_decoy_fetches(item: pytest.Item) -> Iterator[None]:
    """A test's setup (its fixtures) or body, failed if pip or uv fetched from the decoy
    meanwhile: as an error of the setup, or a failure of the test."""
    seen = _decoy_requests()
    try:
        return (yield)
    finally:
        _fail_on_decoy_fetch(seen)


pytest_runtest_setup = pytest.hookimpl(wrapper=True)(_without_decoy_fetches)
pytest_runtest_call = pytest.hookimpl(wrapper=True)(_without_decoy_fetches)


@dataclass
class LocalProcess:
    """A running ``wheelgate local`` and what its ready line said."""

    process: subprocess.Popen[str]
    env: dict[str, str]
    staging_url: str
    nightly_url: str

    def run_index(self, run_id: str, index: str) -> str:
        """URL of a run's own staging index, the one its test jobs install from."""
        return self.staging_url + STAGING.run_index_prefix(run_id, index)

    def client(self, service: str) -> Any:
        return boto3.client(
            service,
            endpoint_url=self.env["AWS_ENDPOINT_URL"],
            region_name=self.env["AWS_DEFAULT_REGION"],
            aws_access_key_id=self.env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=self.env["AWS_SECRET_ACCESS_KEY"],
        )

    def wheelgate(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "wheelgate", *args],
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )

    def wait_idle(self, timeout: float = 30) -> None:
        """Until the promoter loop has consumed every message."""
        sqs = self.client("sqs")
        url = sqs.get_queue_url(QueueName=QUEUE_NAME)["QueueUrl"]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            attrs = sqs.get_queue_attributes(
                QueueUrl=url,
                AttributeNames=[
                    "ApproximateNumberOfMessages",
                    "ApproximateNumberOfMessagesNotVisible",
                ],
            )["Attributes"]
            if all(v == "0" for v in attrs.values()):
                return
            time.sleep(0.2)
        raise TimeoutError("promoter loop did not drain the queue")

    def nightly_versions(self) -> dict[str, str]:
        """Every object version and delete marker in nightly: equal snapshots, nothing
        written."""
        return version_snapshot(self.client("s3"), self.env["WHEELGATE_NIGHTLY_BUCKET"])


#: How long ``wheelgate local`` may take to stop once told to (SIGTERM).
STOP_SECONDS = 60


@contextlib.contextmanager
def local_process(*options: str, env: Mapping[str, str] | None = None) -> Iterator[LocalProcess]:
    """``wheelgate local`` with ``options`` in its own process, with ``env`` added to this
    one's environment (the promoter's settings, such as ``WHEELGATE_LISTING_RETENTION``)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "wheelgate", "local", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert process.stdout is not None
    ready = json.loads(process.stdout.readline())
    assert ready["ready"] is True
    yield LocalProcess(process, ready["env"], ready["staging_url"], ready["nightly_url"])
    process.terminate()
    # It stops its servers and its promoter loop in a few seconds; a loaded two-core machine
    # running a worker per core has taken more than ten.
    process.wait(timeout=STOP_SECONDS)


@pytest.fixture(scope="session")
def local() -> Iterator[LocalProcess]:
    """``wheelgate local`` in its own process, exactly as ``make demo`` starts it."""
    with local_process() as started:
        yield started


@pytest.fixture(scope="session")
def stack() -> Iterator[LocalWheelGate]:
    """An in-process local stack whose queue nobody consumes: tests deliver events to the
    promoter handler themselves. The test process is the promoter's and the clients', so the
    environment it returns is this process's."""
    stack = LocalWheelGate()
    os.environ.update(stack.start())
    yield stack
    stack.stop()


@pytest.fixture(scope="session")
def s3(stack: LocalWheelGate) -> Any:
    """A client of the in-process stack's S3."""
    return boto3.client("s3")


@pytest.fixture(scope="session")
def buckets(s3: Any) -> tuple[Bucket, Bucket]:
    """Staging and nightly of the in-process stack."""
    return Bucket(s3, STAGING_BUCKET), Bucket(s3, NIGHTLY_BUCKET)


@pytest.fixture(scope="session")
def venv_factory(tmp_path_factory: pytest.TempPathFactory, decoy: Decoy) -> Any:
    """Clean venvs without a pip of their own (the test environment's current pip installs
    into them with ``--python``), each with the decoy in its site configuration."""

    def make(name: str) -> Path:
        path = tmp_path_factory.mktemp(name)
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
        decoy.plant_site_config(path)
        return path

    return make


def uv_binary() -> str:
    found = shutil.which("uv", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("uv is not installed in the test environment (requirements-dev.txt)")
    return found
