"""``wheelgate import``: released wheels of an existing bucket brought into nightly by the
promoter, against the real S3 API (moto server), with real pip and uv installing from nightly.

The source is laid out like the seed's: a release bucket with wheels under
``v2/<gpu-family>/`` and an index another script wrote beside them (PEP 503 HTML only, with a
yanked file and no upload times), plus what such a bucket also holds: a wheel whose METADATA
names another project, two spellings of one release, a file that is not a distribution, and
``+`` in versions.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.integration.installs import pip
from tests.integration.test_fanout import Fanout
from tests.integration.test_promoter import Run, deliver, nightly_versions, sqs_event
from wheelgate.core.env_names import ENV_ALLOWED_INDEXES, ENV_BREAK_GLASS_ID, ENV_IMPORT_SOURCES
from wheelgate.core.import_rules import SCHEMA_IMPORT_V1, import_id, new_import_request
from wheelgate.core.layout import STAGING, VERDICT_KEYS_KEY
from wheelgate.core.settings import PromoterSettings
from wheelgate.core.signatures import check_verdict
from wheelgate.core.verdicts import parse_key_document
from wheelgate.core.wheelmeta import FileRangeReader, read_core_metadata
from wheelgate.lambda_function import handler
from wheelgate.lambda_function.handler import manifest_events
from wheelgate.local.names import LOCAL_REPORTER_PRINCIPAL
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.local.stack import LocalWheelGate
from wheelgate.promotion.compose import build_service
from wheelgate.staging.hermetic import hermetic_env
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.limits import TransferLimits

BREAK_GLASS_ID = "AROAIMPORTBREAKGLASS1"
BREAK_GLASS = f"AWS:{BREAK_GLASS_ID}:oncall"
SOURCE_BUCKET = "old-release-bucket"
RELABELLED = "oldtorch-2.5.0+rocm6.2-py3-none-any.whl"


@pytest.fixture(autouse=True)
def _imports_configured(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(ENV_BREAK_GLASS_ID, BREAK_GLASS_ID)
    monkeypatch.setenv(ENV_IMPORT_SOURCES, json.dumps([f"{SOURCE_BUCKET}/v2/"]))
    handler.promoter.cache_clear()
    yield
    handler.promoter.cache_clear()


@dataclass
class Source:
    """A release bucket's directory, written as another tool wrote it."""

    s3: Any
    prefix: str
    tmp: Path

    @property
    def uri(self) -> str:
        return f"s3://{SOURCE_BUCKET}/{self.prefix}"

    def put(self, path: Path, name: str | None = None) -> str:
        """Upload ``path`` (as ``name``) the way an old release script did: no checksum."""
        key = self.prefix + (name or path.name)
        self.s3.put_object(Bucket=SOURCE_BUCKET, Key=key, Body=path.read_bytes())
        return key

    def page(self, project: str, anchors: list[str]) -> None:
        """The other script's PEP 503 project page: plain anchors, no upload times."""
        body = "<html><body>\n" + "\n".join(anchors) + "\n</body></html>\n"
        self.s3.put_object(
            Bucket=SOURCE_BUCKET, Key=f"{self.prefix}{project}/index.html", Body=body.encode()
        )


def anchor(path: Path, *, yanked: str | None = None) -> str:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    href = "../" + path.name.replace("+", "%2B") + f"#sha256={digest}"
    extra = f' data-yanked="{yanked}"' if yanked is not None else ""
    return f'<a href="{href}"{extra}>{path.name}</a><br>'


def source_bucket(s3: Any) -> None:
    with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou):
        s3.create_bucket(Bucket=SOURCE_BUCKET)


def request_import(
    staging: Bucket, source: str, index: str, since: datetime | None = None
) -> tuple[str, str]:
    """Write the request ``wheelgate import`` writes; return its key and id."""
    request = new_import_request(source, index, since, now=datetime.now(UTC))
    key = STAGING.manifest(request.run_id)
    staging.put(key, request.to_json().encode(), content_type="application/json")
    return key, request.run_id


def record(staging: Bucket, run_id: str) -> dict[str, Any]:
    found = staging.get(STAGING.record(run_id))
    assert found is not None
    return dict(json.loads(found[0]))


def nightly_json(nightly: Bucket, index: str, project: str, archive: bool = False) -> Any:
    where = f"{index}/_archive" if archive else index
    found = nightly.get(f"{where}/{project}/index.json")
    assert found is not None
    return json.loads(found[0])


@dataclass
class Seed:
    source: Source
    index: str
    old: Path
    new: Path
    yanked: Path
    dep: Path


@pytest.fixture
def seed(
    s3: Any, buckets: tuple[Bucket, Bucket], tmp_path: Path, request: pytest.FixtureRequest
) -> Seed:
    """A source directory like the seed's: oldtorch 2.6.0+rocm6.3 (needs oldfilelock) and
    2.7.0+rocm6.4 and a yanked 2.7.1+rocm6.4 (the other script's page says so), with
    ``.metadata`` files beside them; a wheel renamed to a version its METADATA does not say;
    two spellings of one release; a checksum file."""
    source_bucket(s3)
    name = request.node.name.replace("_", "-")[-40:].strip("-")
    source = Source(s3, f"v2/{name}/", tmp_path / "source")
    old = build_wheel(source.tmp, "oldtorch", "2.6.0+rocm6.3", requires=["oldfilelock>=3"])
    dep = build_wheel(source.tmp, "oldfilelock", "3.12.0")
    new = build_wheel(source.tmp, "oldtorch", "2.7.0+rocm6.4", requires=["oldfilelock>=3"])
    yanked = build_wheel(source.tmp, "oldtorch", "2.7.1+rocm6.4")
    for path in (dep, old, new, yanked):
        source.put(path)
        meta = read_core_metadata(FileRangeReader(path.open("rb"), path.stat().st_size), path.name)
        source.s3.put_object(
            Bucket=SOURCE_BUCKET, Key=source.prefix + path.name + ".metadata", Body=meta.content
        )
    # A script that renamed a wheel to add a local label: its METADATA still says 2.5.0.
    relabelled = build_wheel(source.tmp / "relabelled", "oldtorch", "2.5.0")
    source.put(relabelled, RELABELLED)
    first = build_wheel(source.tmp / "dup", "dup", "1.0")
    source.put(first)
    second = build_wheel(source.tmp / "dup2", "dup", "1.0.0")
    source.put(second)
    (source.tmp / "SHA256SUMS").write_text("not a wheel\n")
    source.put(source.tmp / "SHA256SUMS")
    source.page("oldtorch", [anchor(old), anchor(new), anchor(yanked, yanked="broken build")])
    source.page("oldfilelock", [anchor(dep)])
    return Seed(source, f"imp/{name}", old, new, yanked, dep)


def test_an_import_brings_the_seed_in_and_refuses_what_a_promotion_would(
    seed: Seed, buckets: tuple[Bucket, Bucket], s3: Any
) -> None:
    staging, nightly = buckets
    # Given a seed-like source; when the break-glass role asks for its import...
    key, run_id = request_import(staging, seed.source.uri, seed.index)
    assert deliver(key, BREAK_GLASS) == {"batchItemFailures": []}
    decided = record(staging, run_id)
    # Then the wheels are imported, each from its source URI and with no evidence...
    assert decided["state"] == "promoted", decided
    assert decided["imported_from"] == seed.source.uri
    [outcome] = decided["sets"]
    files = {f["filename"]: f for f in outcome["files"]}
    expected = {
        seed.old.name,
        seed.new.name,
        seed.yanked.name,
        seed.dep.name,
        "dup-1.0-py3-none-any.whl",
    }
    assert set(files) == expected
    keys = parse_key_document(nightly.get(VERDICT_KEYS_KEY)[0]).keys  # type: ignore[index]
    for name, f in files.items():
        assert f["action"] == "imported"
        assert f["evidence"] == []
        assert f["source"] == f"s3://{SOURCE_BUCKET}/{seed.source.prefix}{name}"
        # Each carries a verdict: an import, by whom and from where, with no test.
        assert f["verdict"] == f"{seed.index}/{name}.verdict.json"
        envelope = nightly.get(f["verdict"])
        assert envelope is not None
        verified = check_verdict(envelope[0], keys=keys, filename=name, sha256=f["sha256"])
        assert verified.facts["kind"] == "import"
        assert verified.facts["actor"] == BREAK_GLASS
        assert verified.facts["source"] == f["source"]
        assert verified.facts["tests"] == []
        assert "commit" not in verified.facts
    # ...and what a promotion would refuse is refused, each with its reason.
    refused = {r["filename"]: r["reason"] for r in outcome["refused"]}
    assert refused == {
        RELABELLED: "wheel-name-mismatch",
        "dup-1.0.0-py3-none-any.whl": "release-conflict",
        "SHA256SUMS": "not-a-distribution",
    }
    duplicate = next(r for r in outcome["refused"] if r["filename"].startswith("dup-"))
    assert duplicate["message"].startswith("duplicate at the source: ")
    assert nightly.head(f"{seed.index}/{RELABELLED}") is None
    # The .metadata nightly serves is the wheel's own METADATA, read from the wheel.
    for path in (seed.old, seed.dep):
        served = nightly.get(f"{seed.index}/{path.name}.metadata")
        assert served is not None
        reader = FileRangeReader(path.open("rb"), path.stat().st_size)
        assert served[0] == read_core_metadata(reader, path.name).content
    # What the source index knew is kept: the yank, and the objects' dates as upload times.
    page = nightly_json(nightly, seed.index, "oldtorch", archive=True)
    by_name = {f["filename"]: f for f in page["files"]}
    assert by_name[seed.yanked.name]["yanked"] == "broken build"
    assert by_name[seed.old.name]["yanked"] is False
    listed = s3.head_object(Bucket=SOURCE_BUCKET, Key=seed.source.prefix + seed.old.name)
    uploaded = datetime.fromisoformat(by_name[seed.old.name]["upload-time"].replace("Z", "+00:00"))
    assert abs(uploaded - listed["LastModified"]) < timedelta(seconds=1)
    html = nightly.get(f"{seed.index}/oldtorch/index.html")
    assert html is not None
    assert b'data-yanked="broken build"' in html[0]
    assert b"oldtorch-2.6.0%2Brocm6.3-py3-none-any.whl" in html[0]


def test_only_the_break_glass_role_may_ask_for_an_import(
    seed: Seed, buckets: tuple[Bucket, Bucket], s3: Any
) -> None:
    staging, _ = buckets
    before = nightly_versions(s3)
    key, run_id = request_import(staging, seed.source.uri, seed.index)
    # The reporter may write manifests; an import it wrote is noted, never carried out.
    assert deliver(key, LOCAL_REPORTER_PRINCIPAL) == {"batchItemFailures": []}
    noted = record(staging, run_id)
    assert (noted["state"], noted["reason"]) == ("pending", "untrusted-writer")
    assert nightly_versions(s3) == before
    assert not list(staging.list(STAGING.run_prefix(run_id)))


def test_a_source_outside_the_allow_list_is_refused_before_it_is_read(
    buckets: tuple[Bucket, Bucket], s3: Any
) -> None:
    staging, nightly = buckets
    for source, reason in (
        ("s3://another-bucket/v2/x/", "import-source-not-allowed"),
        (f"s3://{SOURCE_BUCKET}/v1/x/", "import-source-not-allowed"),
        (f"s3://{nightly.name}/v2/", "import-source-not-allowed"),
    ):
        key, run_id = request_import(staging, source, "imp/refused")
        assert deliver(key, BREAK_GLASS) == {"batchItemFailures": []}
        decided = record(staging, run_id)
        assert (decided["state"], decided["reason"]) == ("rejected", reason), decided
        assert source in decided["message"]


@pytest.mark.parametrize("prefix", ["v2/../v1/x/", "v2/./x/", "v2//x/"])
def test_a_source_with_a_dot_or_empty_segment_is_refused_before_it_is_read(
    prefix: str, buckets: tuple[Bucket, Bucket], s3: Any, tmp_path: Path
) -> None:
    staging, _ = buckets
    source_bucket(s3)
    # Given wheels where such a source could lead: under the key it spells (S3 takes it
    # literally) and where it points (v1/, outside the import_sources entry v2/)...
    path = build_wheel(tmp_path, "dotted", "1.0")
    for key in (f"{prefix}{path.name}", f"v1/x/{path.name}", f"v2/x/{path.name}"):
        s3.put_object(Bucket=SOURCE_BUCKET, Key=key, Body=path.read_bytes())
    # ...and the break-glass role's request for it, written as a hand-made request can be
    # (`wheelgate import` refuses to write one)
    source, index = f"s3://{SOURCE_BUCKET}/{prefix}", "imp/dotted"
    run_id = import_id(source, index, None)
    request = {
        "schema": SCHEMA_IMPORT_V1,
        "run_id": run_id,
        "source": source,
        "index": index,
        "requested_at": datetime.now(UTC).isoformat(),
    }
    key = STAGING.manifest(run_id)
    staging.put(key, json.dumps(request).encode(), content_type="application/json")
    before = nightly_versions(s3)
    # When the promoter gets it
    assert deliver(key, BREAK_GLASS) == {"batchItemFailures": []}
    # Then it is refused, naming the segment, and nothing is gathered or released
    decided = record(staging, run_id)
    assert (decided["state"], decided["reason"]) == ("rejected", "import-source-not-allowed")
    assert "segment" in decided["message"]
    assert source in decided["message"]
    assert not list(staging.list(STAGING.run_prefix(run_id)))
    assert nightly_versions(s3) == before


def test_a_directory_that_is_not_configured_is_refused(
    seed: Seed, buckets: tuple[Bucket, Bucket], monkeypatch: pytest.MonkeyPatch
) -> None:
    staging, _ = buckets
    monkeypatch.setenv(ENV_ALLOWED_INDEXES, json.dumps(["v2/other"]))
    handler.promoter.cache_clear()
    key, run_id = request_import(staging, seed.source.uri, seed.index)
    assert deliver(key, BREAK_GLASS) == {"batchItemFailures": []}
    assert record(staging, run_id)["reason"] == "index-not-allowed"
    assert not list(staging.list(STAGING.run_prefix(run_id)))


def test_nightly_conflicts_are_refused_and_released_files_skipped(
    seed: Seed, buckets: tuple[Bucket, Bucket], tmp_path: Path
) -> None:
    staging, nightly = buckets
    # Given nightly released oldfilelock 3.12.0 with the source's bytes, and oldtorch
    # 2.7.0+rocm6.4 with other bytes (another build of the same name)...
    other = build_wheel(tmp_path / "other", "oldtorch", "2.7.0+rocm6.4", requires_python=">=3.10")
    run = Run(buckets, tmp_path, f"pre-{seed.index.rsplit('/', 1)[-1]}"[:60], seed.index)
    run.stage(seed.dep, other)
    assert run.report(run.manifest())["state"] == "promoted"
    # When the source is imported...
    key, run_id = request_import(staging, seed.source.uri, seed.index)
    assert deliver(key, BREAK_GLASS) == {"batchItemFailures": []}
    [outcome] = record(staging, run_id)["sets"]
    files = {f["filename"]: f["action"] for f in outcome["files"]}
    refused = {r["filename"]: r for r in outcome["refused"]}
    # Then the same bytes are already released, the other bytes refused, nightly untouched.
    assert files[seed.dep.name] == "already-released"
    assert refused[seed.new.name]["reason"] == "nightly-conflict"
    assert refused[seed.new.name]["message"].startswith("conflict with nightly: ")
    held = nightly.head(f"{seed.index}/{seed.new.name}")
    assert held is not None
    assert held.sha256 == hashlib.sha256(other.read_bytes()).hexdigest()


def test_a_source_index_hash_that_the_bytes_do_not_match_is_refused(
    seed: Seed, buckets: tuple[Bucket, Bucket]
) -> None:
    staging, _ = buckets
    # The other script's page claims other bytes for the dependency.
    bad = f'<a href="../{seed.dep.name}#sha256={"0" * 64}">{seed.dep.name}</a>'
    seed.source.page("oldfilelock", [bad])
    key, run_id = request_import(staging, seed.source.uri, seed.index)
    assert deliver(key, BREAK_GLASS) == {"batchItemFailures": []}
    [outcome] = record(staging, run_id)["sets"]
    assert {r["filename"]: r["reason"] for r in outcome["refused"]}[seed.dep.name] == (
        "checksum-mismatch"
    )


def test_since_takes_only_objects_written_from_that_date(
    seed: Seed, buckets: tuple[Bucket, Bucket]
) -> None:
    staging, _ = buckets
    key, run_id = request_import(
        staging, seed.source.uri, seed.index, since=datetime.now(UTC) + timedelta(days=1)
    )
    assert deliver(key, BREAK_GLASS) == {"batchItemFailures": []}
    decided = record(staging, run_id)
    assert (decided["state"], decided["reason"]) == ("rejected", "import-empty")


def test_an_interrupted_import_resumes_where_it_stopped(
    seed: Seed, buckets: tuple[Bucket, Bucket], monkeypatch: pytest.MonkeyPatch
) -> None:
    staging, nightly = buckets
    key, run_id = request_import(staging, seed.source.uri, seed.index)
    # Given an import whose invocation dies after its third copy into staging...
    real = Bucket.copy_in
    made: list[str] = []
    lock = threading.Lock()

    def dying(self: Bucket, *args: Any, **kwargs: Any) -> Any:
        if self.name == staging.name:
            with lock:
                if len(made) == 3:
                    raise RuntimeError("invocation killed")
                made.append(args[4])
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Bucket, "copy_in", dying)
    response = deliver(key, BREAK_GLASS)
    assert response["batchItemFailures"], "the message must be retried"
    pending = record(staging, run_id)
    assert pending["state"] == "pending"
    assert pending["progress"]["phase"] == "gathering"
    assert pending["progress"]["total"] == 7
    assert nightly.head(f"{seed.index}/{seed.old.name}") is None
    # When the message is delivered again...
    monkeypatch.setattr(Bucket, "copy_in", real)
    again: list[str] = []

    def counting(self: Bucket, *args: Any, **kwargs: Any) -> Any:
        if self.name == staging.name:
            again.append(args[4])
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Bucket, "copy_in", counting)
    assert deliver(key, BREAK_GLASS) == {"batchItemFailures": []}
    # Then it copies only what the first attempt had not, and ends as one attempt would have.
    assert len(made) == 3
    assert sorted(again + made) == sorted(
        STAGING.artifact(run_id, seed.index, n)
        for n in (
            seed.old.name,
            seed.new.name,
            seed.yanked.name,
            seed.dep.name,
            RELABELLED,
            "dup-1.0-py3-none-any.whl",
            "dup-1.0.0-py3-none-any.whl",
        )
    )
    assert not set(again) & set(made)
    decided = record(staging, run_id)
    assert decided["state"] == "promoted"
    assert decided["progress"] is None
    assert len(decided["sets"][0]["files"]) == 5


class Queue:
    """A queue that keeps what the promoter sends back."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    def send(self, queue_url: str, body: str) -> None:
        self.sent.append((queue_url, body))


class Clock:
    """A clock that moves a minute each time it is read."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 30, 4, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now


def test_a_large_import_goes_on_in_the_next_invocation(
    seed: Seed, buckets: tuple[Bucket, Bucket], monkeypatch: pytest.MonkeyPatch
) -> None:
    staging, nightly = buckets
    settings = PromoterSettings.from_env(
        {**os.environ, "WHEELGATE_MANIFEST_QUEUE_URL": "https://sqs.local/q"}
    )
    queue = Queue()
    # Given a promoter whose clock runs out of gathering time after a few copies...
    service = build_service(
        settings=settings,
        # One copy at a time, so that the clock runs out at a known copy.
        staging=Bucket(staging.client, staging.name, limits=TransferLimits(workers=1)),
        nightly=nightly,
        clock=Clock(),
        queue=queue,
    )
    key, _ = request_import(staging, seed.source.uri, seed.index)
    body = str(sqs_event(key, BREAK_GLASS)["Records"][0]["body"])
    [event] = manifest_events(body, staging.name)
    # When its invocations are handed the message, and each time the one it sent back...
    decision = service.handle(event)
    first = None if decision is None else decision.record
    assert first is not None
    assert first.state.value == "pending"
    assert first.progress is not None
    assert 0 < first.progress.done < first.progress.total
    assert queue.sent == [("https://sqs.local/q", body)]
    rounds = 1
    decided = first
    while decided.state.value == "pending":
        [event] = manifest_events(queue.sent[-1][1], staging.name)
        decision = service.handle(event)
        result = None if decision is None else decision.record
        assert result is not None
        decided = result
        rounds += 1
        assert rounds < 10
    # Then each invocation went on where the last stopped, and the import ended promoted.
    assert rounds > 1
    assert decided.state.value == "promoted"
    assert len(queue.sent) == rounds - 1


@pytest.mark.slow
def test_pip_and_uv_install_an_imported_old_version_from_nightly(
    seed: Seed,
    buckets: tuple[Bucket, Bucket],
    stack: LocalWheelGate,
    venv_factory: Any,
    tmp_path: Path,
) -> None:
    from tests.integration.test_plus_in_file_names import uv_install

    staging, _ = buckets
    key, run_id = request_import(staging, seed.source.uri, seed.index)
    assert deliver(key, BREAK_GLASS) == {"batchItemFailures": []}
    assert record(staging, run_id)["state"] == "promoted"
    index_url = f"{stack.nightly_url}{seed.index}/"
    # The old version, not the newest: what day one's users pin.
    requirement = "oldtorch==2.6.0+rocm6.3"
    result = uv_install(index_url, tmp_path / "uv", requirement)
    assert result.returncode == 0, result.stderr
    assert "2.6.0+rocm6.3" in (tmp_path / "uv" / "oldtorch" / "__init__.py").read_text()
    assert (tmp_path / "uv" / "oldfilelock").is_dir()
    venv = venv_factory("import-pip")
    result = pip(venv, "install", "--index-url", index_url, requirement)
    assert result.returncode == 0, result.stderr
    shown = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import oldtorch; print(oldtorch.__version__)"],
        env=hermetic_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert shown.stdout.strip() == "2.6.0+rocm6.3"


def test_no_wheel_bytes_pass_through_the_promoter(
    seed: Seed, buckets: tuple[Bucket, Bucket], s3: Any
) -> None:
    staging, _ = buckets
    reads: list[dict[str, Any]] = []

    def spy(params: dict[str, Any], **_: Any) -> None:
        reads.append(dict(params))

    assert boto3.DEFAULT_SESSION is not None
    events = boto3.DEFAULT_SESSION.events
    key, run_id = request_import(staging, seed.source.uri, seed.index)
    events.register("provide-client-params.s3.GetObject", spy)
    try:
        assert deliver(key, BREAK_GLASS) == {"batchItemFailures": []}
    finally:
        events.unregister("provide-client-params.s3.GetObject", spy)
    assert record(staging, run_id)["state"] == "promoted"
    whole = [r["Key"] for r in reads if r["Key"].endswith(".whl") and "Range" not in r]
    assert whole == []
    assert any(r["Key"].endswith(".whl") and "Range" in r for r in reads)


MB = 1024 * 1024
#: S3's smallest part: the copy limit lowered so that a 12 MB wheel takes the > 5 GiB path.
LIMIT = 5 * MB
SMALL = TransferLimits(single_request_limit=LIMIT, copy_part_size=LIMIT)


def test_a_file_over_the_copy_limit_is_read_once_and_never_again(
    buckets: tuple[Bucket, Bucket], s3: Any, tmp_path: Path
) -> None:
    staging, nightly = buckets
    source_bucket(s3)
    source = Source(s3, "v2/import-large/", tmp_path)
    big = build_wheel(tmp_path, "bigimport", "1.0+rocm6.4", payload_bytes=12 * MB)
    small = build_wheel(tmp_path, "smallimport", "1.0")
    source.put(big)
    source.put(small)
    # Given a promoter whose copy limit is 5 MB (5 GiB in S3)...
    service = build_service(
        settings=PromoterSettings.from_env(os.environ),
        staging=Bucket(staging.client, staging.name, limits=SMALL),
        nightly=Bucket(nightly.client, nightly.name, limits=SMALL),
    )
    whole: list[str] = []

    def spy(params: dict[str, Any], **_: Any) -> None:
        if params["Key"].endswith(".whl") and "Range" not in params:
            whole.append(f"{params['Bucket']}/{params['Key']}")

    key, _ = request_import(staging, source.uri, "imp/large")
    body = str(sqs_event(key, BREAK_GLASS)["Records"][0]["body"])
    [event] = manifest_events(body, staging.name)
    s3.meta.events.register("provide-client-params.s3.GetObject", spy)
    try:
        decision = service.handle(event)
        decided = None if decision is None else decision.record
    finally:
        s3.meta.events.unregister("provide-client-params.s3.GetObject", spy)
    # Then the large file alone was read, once, from its source; the small one never.
    assert decided is not None
    assert decided.state.value == "promoted", decided.message
    assert whole == [f"{SOURCE_BUCKET}/{source.prefix}{big.name}"]
    sha = hashlib.sha256(big.read_bytes()).hexdigest()
    copy = s3.head_object(Bucket=nightly.name, Key=f"imp/large/{big.name}")
    assert copy["ETag"].endswith('-3"')  # copied part by part, server-side, twice
    body_bytes = s3.get_object(Bucket=nightly.name, Key=f"imp/large/{big.name}")["Body"].read()
    assert hashlib.sha256(body_bytes).hexdigest() == sha
    [outcome] = decided.sets
    assert {f.filename: f.sha256 for f in outcome.files}[big.name] == sha


# An import large enough to fan out, through an execution: seconds.
@pytest.mark.slow
def test_a_large_import_fans_out_as_a_run_does(
    seed: Seed, buckets: tuple[Bucket, Bucket], stack: LocalWheelGate
) -> None:
    staging, nightly = buckets
    # Given a promoter that fans out from two files to copy...
    fanout = Fanout(
        buckets,
        min_files=2,
        **{
            ENV_BREAK_GLASS_ID: BREAK_GLASS_ID,
            ENV_IMPORT_SOURCES: json.dumps([f"{SOURCE_BUCKET}/v2/"]),
        },
    )
    key, run_id = request_import(staging, seed.source.uri, seed.index)
    raw = staging.get(key)
    assert raw is not None
    digest = hashlib.sha256(raw[0]).hexdigest()
    # When the import is delivered, its copies go to an execution...
    pending = fanout.deliver(str(sqs_event(key, BREAK_GLASS)["Records"][0]["body"]))
    assert pending["state"] == "pending", pending
    assert "through execution" in pending["history"][-1]["message"]
    decided = fanout.wait(run_id, digest)
    # Then the execution's record is the import's, each file imported from its source.
    assert decided["state"] == "promoted", decided
    assert [h["state"] for h in decided["history"]][-2:] == ["pending", "promoted"]
    [outcome] = decided["sets"]
    assert {f["action"] for f in outcome["files"]} == {"imported"}
    assert len(outcome["files"]) == 5
    assert {r["reason"] for r in outcome["refused"]} == {
        "wheel-name-mismatch",
        "release-conflict",
        "not-a-distribution",
    }
    page = nightly_json(nightly, seed.index, "oldtorch", archive=True)
    by_name = {f["filename"]: f for f in page["files"]}
    assert by_name[seed.yanked.name]["yanked"] == "broken build"
    copies = [s for s in fanout.steps if s["fanout_step"] == "copy"]
    assert len(copies) == 5


def run_cli(*args: str) -> tuple[int, str, str]:
    """``wheelgate`` in this process (the in-process stack's endpoint and buckets)."""
    from wheelgate.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_dry_run_says_what_would_be_imported_and_refused_and_writes_nothing(
    seed: Seed,
    buckets: tuple[Bucket, Bucket],
    s3: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    staging, _ = buckets
    # Given nightly holding oldtorch 2.7.0+rocm6.4 with other bytes than the source's...
    other = build_wheel(tmp_path / "other", "oldtorch", "2.7.0+rocm6.4", requires_python=">=3.10")
    run = Run(buckets, tmp_path, f"dry-{seed.index.rsplit('/', 1)[-1]}"[:60], seed.index)
    run.stage(other)
    assert run.report(run.manifest())["state"] == "promoted"
    before = nightly_versions(s3)
    staged_before = sorted(o.key for o in staging.list("runs/import-"))
    # When the import is previewed...
    code, out, err = run_cli(
        "import",
        "--from",
        seed.source.uri,
        "--index",
        seed.index,
        "--dry-run",
        "--staging-bucket",
        staging.name,
        "--nightly-bucket",
        buckets[1].name,
    )
    # Then it says what would come in and what not, and why, and writes nothing.
    assert code == 0, err
    preview = json.loads(out)
    assert preview["dry_run"] is True
    assert sorted(f["filename"] for f in preview["would_import"]) == sorted(
        [seed.old.name, seed.yanked.name, seed.dep.name, "dup-1.0-py3-none-any.whl"]
    )
    refused = {r["filename"]: (r["reason"], r["message"]) for r in preview["refused"]}
    assert refused[RELABELLED][0] == "wheel-name-mismatch"
    assert refused["SHA256SUMS"][0] == "not-a-distribution"
    assert refused["dup-1.0.0-py3-none-any.whl"][0] == "release-conflict"
    assert refused["dup-1.0.0-py3-none-any.whl"][1].startswith("duplicate at the source: ")
    assert refused[seed.new.name][0] == "nightly-conflict"
    assert refused[seed.new.name][1].startswith("conflict with nightly: ")
    yanked = next(f for f in preview["would_import"] if f["filename"] == seed.yanked.name)
    assert yanked["yanked"] == "broken build"
    assert "would import 4 file(s)" in err
    assert nightly_versions(s3) == before
    assert sorted(o.key for o in staging.list("runs/import-")) == staged_before
    assert staging.head(STAGING.manifest(preview["run_id"])) is None


def test_the_command_writes_the_request_and_follows_the_promoter(
    seed: Seed, buckets: tuple[Bucket, Bucket], monkeypatch: pytest.MonkeyPatch
) -> None:
    staging, _ = buckets
    argv = ["import", "--from", seed.source.uri, "--index", seed.index]
    argv += ["--staging-bucket", staging.name]
    # Given a request written and nobody carrying it out yet: pending (3), progress shown.
    code, out, err = run_cli(*argv, "--wait", "0")
    assert code == 3, err
    run_id = json.loads(out)["run_id"]
    assert f"import request {run_id} written" in err
    # When the promoter carries it out, its record says so.
    assert deliver(STAGING.manifest(run_id), BREAK_GLASS) == {"batchItemFailures": []}
    code, out, err = run_cli("status", run_id, "--staging-bucket", staging.name)
    assert code == 0, err
    decided = json.loads(out)
    assert decided["state"] == "promoted"
    assert decided["imported_from"] == seed.source.uri


def test_the_progress_of_a_gathering_import_is_shown(
    seed: Seed, buckets: tuple[Bucket, Bucket], monkeypatch: pytest.MonkeyPatch
) -> None:
    staging, _ = buckets
    from wheelgate.cli.run_status import wait_for_record

    key, run_id = request_import(staging, seed.source.uri, seed.index)
    real = Bucket.copy_in

    def dying(self: Bucket, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("invocation killed")

    monkeypatch.setattr(Bucket, "copy_in", dying)
    assert deliver(key, BREAK_GLASS)["batchItemFailures"]
    monkeypatch.setattr(Bucket, "copy_in", real)
    shown: list[dict[str, Any]] = []
    assert wait_for_record(staging, run_id, 0.5, 0.1, pending=shown.append) == 3
    assert shown
    assert shown[-1]["progress"] == {"phase": "gathering", "done": 0, "total": 7, "read": 0}


def test_asking_again_copies_nothing_done_and_refuses_a_changed_source(
    seed: Seed, buckets: tuple[Bucket, Bucket], monkeypatch: pytest.MonkeyPatch
) -> None:
    staging, _ = buckets
    # Given an import carried out...
    key, run_id = request_import(staging, seed.source.uri, seed.index)
    assert deliver(key, BREAK_GLASS) == {"batchItemFailures": []}
    first = record(staging, run_id)
    assert first["state"] == "promoted"
    # ...and a source file replaced since (another build under the same name)...
    other = build_wheel(
        seed.source.tmp / "replaced", "oldfilelock", "3.12.0", requires_python=">=3.11"
    )
    seed.source.put(other)
    real = Bucket.copy_in
    copies: list[str] = []

    def counting(self: Bucket, *args: Any, **kwargs: Any) -> Any:
        copies.append(f"{self.name}/{args[4]}")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Bucket, "copy_in", counting)
    # When the same import is asked for again (a new request under the same id)...
    again_key, again_id = request_import(staging, seed.source.uri, seed.index)
    assert (again_key, again_id) == (key, run_id)
    assert deliver(key, BREAK_GLASS) == {"batchItemFailures": []}
    # Then nothing is copied again, the changed file is refused, and the decision is added.
    assert copies == []
    again = record(staging, run_id)
    assert [h["state"] for h in again["history"]][-1] == "promoted"
    assert again["attempts"] > first["attempts"]
    [outcome] = again["sets"]
    assert {f["action"] for f in outcome["files"]} == {"already-released"}
    refused = {r["filename"]: r["reason"] for r in outcome["refused"]}
    assert refused[seed.dep.name] == "source-changed"


class Terminal(io.StringIO):
    """Output that says it is a terminal, as an operator's is."""

    def isatty(self) -> bool:
        return True


def test_the_command_prints_a_summary_on_a_terminal_and_json_with_json(
    seed: Seed, buckets: tuple[Bucket, Bucket]
) -> None:
    from wheelgate.cli.main import main

    staging, _ = buckets
    argv = ["import", "--from", seed.source.uri, "--index", seed.index, "--wait", "0"]
    argv += ["--staging-bucket", staging.name]
    # When an operator asks for the import on a terminal
    out, err = Terminal(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    # Then the outcome is status's summary of the request's record, not its JSON
    run_id = err.getvalue().split("import request ", 1)[1].split()[0]
    lines = out.getvalue().splitlines()
    assert code in (0, 3), err.getvalue()
    assert lines[0] in (f"run {run_id}: pending", f"run {run_id}: promoted")
    recorded = f"record: s3://{staging.name}/{STAGING.record(run_id)}"
    if lines[-1] != recorded:
        # No record yet: the request is pending, and no URL is given for a record not there
        assert (lines[0], lines[-1]) == (
            f"run {run_id}: pending",
            "record: none yet (not decided yet)",
        )
    # And with --json, the record (or the pending document) as JSON, on a terminal too
    out = Terminal()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main([*argv, "--json"])
    assert json.loads(out.getvalue())["run_id"] == run_id
