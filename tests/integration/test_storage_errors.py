"""A storage error is exit 4 and one line, never a rejection (exit 1) or a traceback.

Every command that talks to storage meets each way storage fails on a flaky night, through
real boto3 clients over HTTP (``broken_storage``): an endpoint nobody listens on, made-up keys
refused by a moto server enforcing authentication, 503 SlowDown that outlasts the retries, an
endpoint that never answers, and no credentials at all. The line names the operation, what it
acted on (``s3://bucket/key``), the endpoint and the error class. The promoter, meeting the
same errors, fails the message for SQS to retry and records no rejection.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from tests.integration import broken_storage
from tests.integration.broken_storage import BrokenStorage
from tests.integration.test_promoter import COMMIT, Context, Run, sqs_event, wheel
from tests.unit.samples import DEPS_FILELOCK
from wheelgate.cli.common import EXIT_STORAGE
from wheelgate.cli.main import main
from wheelgate.core.layout import STAGING
from wheelgate.core.settings import PromoterSettings
from wheelgate.lambda_function import handler
from wheelgate.local.names import LOCAL_REPORTER_PRINCIPAL, NIGHTLY_BUCKET, STAGING_BUCKET
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.local.stack import LocalWheelGate
from wheelgate.promotion.compose import build_service
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.cdn import CloudFrontInvalidator
from wheelgate.storage.errors import StorageUnavailable
from wheelgate.storage.workflow import SqsSender, StepFunctionsLauncher

# Every command against failing endpoints, each in a process of its own: `make test` only.
pytestmark = pytest.mark.slow

BROKEN_STAGING, BROKEN_NIGHTLY = "broken-staging", "broken-nightly"
INDEX = "v2/gfx94X-dcgpu"
DEPS_YML = f"""\
schema: wheelgate/deps/v1
validation:
  hosts: [files.example.org]
  buckets:
    {BROKEN_STAGING}:
      prefixes: [cache/]
  default_bucket: {BROKEN_STAGING}
  indexes: [{INDEX}]
  python_tags: [py3]
  platforms: [any]
files:
  - url: https://files.example.org/tools/tool-1.0.tar.gz
    key: cache/tool-1.0.tar.gz
    sha256: {"ab" * 32}
{DEPS_FILELOCK}"""
REVIEW = "https://github.com/example/project/pull/1"


#: Every command that talks to storage (``commands`` gives each its options).
COMMANDS = (
    "stage",
    "report",
    "status",
    "status --wait",
    "runs",
    "pins",
    "yank",
    "unyank",
    "promote",
    "index rebuild",
    "index rebuild --dry-run",
    "deps plan",
    "deps sync",
    "deps sync --only python",
)


def commands(tmp: Path) -> dict[str, list[str]]:
    """Every command that talks to storage, with options it accepts (so it gets as far as its
    first storage call)."""
    dist = tmp / "dist"
    built = build_wheel(dist, "torch", "2.7.0")
    deps_yml = tmp / "deps.yml"
    deps_yml.write_text(DEPS_YML)
    test = f"{INDEX}:smoke=passed@https://github.com/o/r/actions/runs/1"
    return {
        "stage": ["stage", "--run-id", "7", "--index", INDEX, "--commit", COMMIT, str(built)],
        "report": ["report", "--run-id", "7", "--commit", COMMIT, "--test", test],
        "status": ["status", "7"],
        "status --wait": ["status", "7", "--wait", "5"],
        "runs": ["runs", "--state", "rejected"],
        "pins": ["pins", "--run-id", "7", "--index", INDEX, "--staging-url", "http://s/"],
        "yank": ["yank", "--index", INDEX, built.name, "--reason", "broken build"],
        "unyank": ["unyank", "--index", INDEX, built.name],
        "promote": ["promote", "--run-id", "7", "--override", "--reason", "the tests were flaky"],
        "index rebuild": ["index", "rebuild", "--index", INDEX],
        "index rebuild --dry-run": ["index", "rebuild", "--index", INDEX, "--dry-run"],
        "deps plan": ["deps", "plan", str(deps_yml)],
        "deps sync": ["deps", "sync", str(deps_yml), "--commit", COMMIT, "--review-url", REVIEW],
        "deps sync --only python": [
            *["deps", "sync", str(deps_yml), "--only", "python"],
            *["--commit", COMMIT, "--review-url", REVIEW],
        ],
    }


@pytest.fixture(scope="module")
def slow_down() -> Iterator[BrokenStorage]:
    with broken_storage.slowing_down() as storage:
        yield storage


@pytest.fixture(scope="module")
def silent() -> Iterator[BrokenStorage]:
    with broken_storage.never_answering() as storage:
        yield storage


@pytest.fixture(scope="module")
def strict_moto() -> Iterator[BrokenStorage]:
    with broken_storage.refusing_made_up_keys() as storage:
        yield storage


@pytest.fixture(params=["unreachable", "bad-credentials", "slow-down", "timeout", "no-credentials"])
def broken(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> BrokenStorage:
    """One way storage fails, with this process's environment set to meet it."""
    name = request.param
    if name == "unreachable":
        storage = broken_storage.unreachable()
    elif name == "no-credentials":
        storage = broken_storage.no_credentials(request.getfixturevalue("slow_down").endpoint)
    else:
        fixture = {"bad-credentials": "strict_moto", "slow-down": "slow_down"}.get(name, "silent")
        storage = request.getfixturevalue(fixture)
    for variable, value in storage.env.items():
        if value is None:
            monkeypatch.delenv(variable, raising=False)
        else:
            monkeypatch.setenv(variable, value)
    # boto3's default session keeps the credentials it found first: start a fresh one.
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    return storage


@pytest.fixture
def wheelgate_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("WHEELGATE_ALLOWED_INDEXES", "WHEELGATE_TEST_URL_HOSTS", "GITHUB_SHA"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("WHEELGATE_STAGING_BUCKET", BROKEN_STAGING)
    monkeypatch.setenv("WHEELGATE_NIGHTLY_BUCKET", BROKEN_NIGHTLY)
    monkeypatch.setenv("WHEELGATE_NIGHTLY_BASE_URL", "http://nightly.example/")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


#: The line: "wheelgate CMD: storage error: OPERATION s3://BUCKET/KEY at ENDPOINT: ERROR: ...".
LINE = re.compile(
    r"wheelgate (?P<command>[a-z]+): storage error: (?P<operation>[A-Za-z0-9 ]+) "
    r"s3://(?P<bucket>[a-z-]+)/\S* at (?P<endpoint>http://127\.0\.0\.1:\d+): (?P<error>.+)"
)


def assert_one_storage_line(
    code: int, err: str, out: str, command: str, broken: BrokenStorage
) -> re.Match[str]:
    assert code == EXIT_STORAGE, (code, err)
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    found = LINE.fullmatch(lines[0])
    assert found is not None, lines[0]
    assert found["command"] == command.split()[0]
    assert found["bucket"] in (BROKEN_STAGING, BROKEN_NIGHTLY)
    assert found["endpoint"] == broken.endpoint
    assert re.match(broken.error, found["error"]), found["error"]
    return found


@pytest.mark.usefixtures("wheelgate_env")
@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_ends_a_storage_error_with_exit_4_and_one_line(
    command: str,
    broken: BrokenStorage,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given storage that fails this way
    argv = commands(tmp_path)[command]
    # When the command runs against it
    code = main([*argv, "--endpoint-url", broken.endpoint, *broken.quick()])
    captured = capsys.readouterr()
    # Then it ends with exit 4 and one line naming the operation, bucket, endpoint and error
    assert_one_storage_line(code, captured.err, captured.out, command, broken)


def wheelgate(storage: BrokenStorage, *argv: str) -> subprocess.CompletedProcess[str]:
    """``python -m wheelgate ARGV`` in its own process, against ``storage``."""
    env = {**os.environ, **{k: v for k, v in storage.env.items() if v is not None}}
    command = [sys.executable, "-m", "wheelgate", *argv, "--endpoint-url", storage.endpoint]
    return subprocess.run(
        [*command, *storage.quick()],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.usefixtures("wheelgate_env")
def test_status_against_an_unreachable_endpoint_is_not_a_rejection() -> None:
    # Given the reproduction: `wheelgate status` with an endpoint nobody listens on
    storage = broken_storage.unreachable()
    run = wheelgate(storage, "status", "123")
    # Then the process exits 4 (not 1, "rejected"), with one line and no traceback
    assert_one_storage_line(run.returncode, run.stderr, run.stdout, "status", storage)


@pytest.mark.usefixtures("wheelgate_env")
def test_debug_adds_the_traceback() -> None:
    storage = broken_storage.unreachable()
    run = wheelgate(storage, "--debug", "status", "123")
    assert run.returncode == EXIT_STORAGE
    assert "Traceback" in run.stderr
    assert "EndpointConnectionError" in run.stderr
    last = run.stderr.rstrip().splitlines()[-1]
    assert last.startswith("wheelgate status: storage error: GetObject s3://"), last


# -- the promoter ---------------------------------------------------------------------------


def broken_client(storage: BrokenStorage) -> Any:
    """An S3 client meeting ``storage``, giving up as quickly as the CLI tests'."""
    keys = {k: v for k, v in storage.env.items() if k.startswith("AWS_") and v is not None}
    return boto3.client(
        "s3",
        endpoint_url=storage.endpoint,
        region_name="us-east-1",
        aws_access_key_id=keys.get("AWS_ACCESS_KEY_ID"),
        aws_secret_access_key=keys.get("AWS_SECRET_ACCESS_KEY"),
        config=Config(
            retries={"mode": "adaptive", "total_max_attempts": 2},
            connect_timeout=storage.timeout,
            read_timeout=storage.timeout,
        ),
    )


def handler_meeting(storage: BrokenStorage) -> handler.LambdaHandler:
    """The promoter function's handler over a service that reads and writes nightly through
    ``storage`` (staging, where manifests and records live, stays healthy)."""
    staging = Bucket(boto3.client("s3"), STAGING_BUCKET)
    service = build_service(
        settings=PromoterSettings.from_env(os.environ),
        staging=staging,
        nightly=Bucket(broken_client(storage), NIGHTLY_BUCKET),
    )
    return handler.entry_point(lambda: service)


@pytest.mark.parametrize("kind", ["unreachable", "bad-credentials", "slow-down", "timeout"])
def test_the_promoter_retries_a_storage_error_and_rejects_nothing(
    kind: str,
    request: pytest.FixtureRequest,
    stack: LocalWheelGate,
    buckets: tuple[Bucket, Bucket],
    tmp_path: Path,
) -> None:
    storage = (
        broken_storage.unreachable()
        if kind == "unreachable"
        else request.getfixturevalue(
            {"bad-credentials": "strict_moto", "slow-down": "slow_down", "timeout": "silent"}[kind]
        )
    )
    # Given a run whose tests passed, and a promoter that cannot reach nightly
    run = Run(buckets, tmp_path, f"storage-{kind}", f"t/storage-{kind}")
    run.stage(wheel(tmp_path))
    key = STAGING.manifest(run.run_id)
    run.staging.put(key, json.dumps(run.manifest()).encode(), content_type="application/json")
    # When the manifest's message is handled
    response = handler_meeting(storage)(sqs_event(key, LOCAL_REPORTER_PRINCIPAL), Context())
    # Then the message fails, for SQS to deliver it again...
    assert response == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
    # ...and the run is pending with the storage error noted, not rejected
    found = run.staging.get(STAGING.record(run.run_id))
    assert found is not None
    record = json.loads(found[0])
    assert record["state"] == "pending", record
    assert all(entry["state"] != "rejected" for entry in record["history"])
    noted = record["history"][-1]["message"]
    assert re.search(storage.error, noted), noted
    assert storage.endpoint in noted, noted


# -- the other adapters ---------------------------------------------------------------------


def test_cloudfront_step_functions_and_sqs_adapters_translate_an_unreachable_endpoint() -> None:
    # Given each adapter's real client, sent to an endpoint nobody listens on
    storage = broken_storage.unreachable()

    def client(service: str) -> Any:
        return boto3.client(
            service,
            endpoint_url=storage.endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(retries={"mode": "standard", "total_max_attempts": 1}),
        )

    calls: dict[str, Callable[[], object]] = {
        "CreateInvalidation distribution E1": lambda: CloudFrontInvalidator(
            client("cloudfront")
        ).invalidate("E1", ["v2/index.html"]),
        "StartExecution execution job-1": lambda: StepFunctionsLauncher(
            client("stepfunctions"), "arn:aws:states:us-east-1:000000000000:stateMachine:m"
        ).start(job_id="job-1", bucket="b", items_key="i", hash_items_key="h", hash_items=0),
        "SendMessage http://queue.example/q": lambda: SqsSender(client("sqs")).send(
            "http://queue.example/q", "{}"
        ),
    }
    for said, call in calls.items():
        # When the call fails, Then it is the adapter's retryable error naming what failed
        with pytest.raises(StorageUnavailable) as raised:
            call()
        assert str(raised.value).startswith(said), raised.value
        assert f"at {storage.endpoint}: EndpointConnectionError" in str(raised.value)
