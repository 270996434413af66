"""``wheelgate deps`` against a local HTTPS server standing in for third-party hosts and the
local S3 of ``wheelgate local``: files cached only when missing, verified, never overwritten;
wheels mirrored through staging and the promoter, then installed with pip from nightly."""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LocalProcess
from tests.integration.installs import pip
from tests.integration.thirdparty import ThirdPartyServer
from wheelgate.cli.main import main
from wheelgate.core.objects import META_SHA256
from wheelgate.deps.config import load_deps
from wheelgate.deps.download import Fetcher, https_client
from wheelgate.deps.file_cache import sync_files
from wheelgate.deps.mirror_runs import check_mirror_run_id
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.errors import PreconditionFailed
from wheelgate.storage.limits import TransferLimits

# A mirrored wheel installed with pip through the gate: `make test` only.
pytestmark = pytest.mark.slow

INDEX = "v2/gfx94X-dcgpu"
COMMIT = "d" * 40
SIZES = {"tiny.txt": 1, "small.json": 2_000, "medium.tar.gz": 3_000_000}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThirdPartyServer]:
    """Given download hosts serving files of several sizes, and a few that misbehave."""
    directory = tmp_path_factory.mktemp("thirdparty")
    thirdparty = ThirdPartyServer(directory, stall=3.0)
    for name, size in SIZES.items():
        thirdparty.files[name] = os.urandom(size)
    thirdparty.files["broken.bin"] = os.urandom(500_000)
    thirdparty.start()
    yield thirdparty
    thirdparty.stop()


@pytest.fixture
def env(local: LocalProcess, monkeypatch: pytest.MonkeyPatch) -> LocalProcess:
    """In-process ``wheelgate`` commands act on the ``wheelgate local`` stack."""
    for name, value in local.env.items():
        monkeypatch.setenv(name, value)
    return local


@pytest.fixture
def cache(env: LocalProcess) -> Bucket:
    """A fresh cache bucket per test."""
    s3 = env.client("s3")
    name = f"deps-cache-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=name)
    return Bucket(s3, name)


def deps_yml(
    tmp_path: Path,
    bucket: str,
    files: Sequence[dict[str, Any]] = (),
    python: Sequence[dict[str, Any]] = (),
) -> Path:
    document = {
        "schema": "wheelgate/deps/v1",
        "validation": {
            "hosts": ["127.0.0.1"],
            "buckets": {bucket: {"prefixes": ["third-party/"]}},
            "default_bucket": bucket,
            "indexes": [INDEX],
        },
        "files": list(files),
        "python": list(python),
    }
    path = tmp_path / "deps.yml"
    # JSON is YAML: the file is parsed by the same loader.
    path.write_text(json.dumps(document, indent=2))
    return path


def entry(
    server: ThirdPartyServer, name: str, mode: str = "files", **changes: Any
) -> dict[str, Any]:
    data = server.files[name]
    assert isinstance(data, bytes)
    return {
        "url": server.url(name, mode),
        "key": f"third-party/{mode}/{name}",
        "sha256": sha(data),
        "size": len(data),
        **changes,
    }


def deps(server: ThirdPartyServer, *args: str) -> int:
    return main(["deps", *args, "--ca-bundle", str(server.cert), "--backoff", "0.05"])


def summary(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def actions(document: dict[str, Any]) -> dict[str, str]:
    return {row["target"].rsplit("/", 1)[-1]: row["action"] for row in document["rows"]}


def objects(bucket: Bucket) -> dict[str, str]:
    return {o.key: o.etag for o in bucket.list("")}


def test_invalid_deps_file_uploads_nothing(
    server: ThirdPartyServer, cache: Bucket, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given one good entry and two bad ones
    path = deps_yml(
        tmp_path,
        cache.name,
        files=[
            entry(server, "tiny.txt"),
            entry(server, "small.json", key="elsewhere/small.json"),
            entry(server, "medium.tar.gz", sha256="0" * 63),
        ],
    )
    # When it is checked or synced
    assert main(["deps", "check", str(path)]) == 2
    check_err = capsys.readouterr().err
    assert deps(server, "sync", str(path)) == 2
    # Then both problems are reported with their lines, and nothing was downloaded or written
    assert "outside the prefixes" in check_err
    assert "not 64 lowercase hex digits" in check_err
    assert f"{path}:" in check_err
    assert objects(cache) == {}
    assert server.requests["/files/tiny.txt"] == 0


def test_sync_uploads_what_is_missing_then_skips_everything(
    server: ThirdPartyServer, cache: Bucket, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entries = [entry(server, name) for name in SIZES]
    path = deps_yml(tmp_path, cache.name, files=entries)
    # Given one of the files already cached with the same bytes
    present = tmp_path / "present"
    present.write_bytes(server.files["small.json"])  # type: ignore[arg-type]
    cache.upload_file(
        present,
        entries[1]["key"],
        sha256=entries[1]["sha256"],
        content_type="application/json",
        metadata={},
    )
    # When deps sync runs
    assert deps(server, "sync", str(path), "--json") == 0
    first = summary(capsys)
    # Then only the missing files were downloaded and uploaded, verified by S3's SHA-256
    assert actions(first) == {
        "tiny.txt": "uploaded",
        "small.json": "skipped",
        "medium.tar.gz": "uploaded",
    }
    assert server.requests["/files/small.json"] == 0
    for item in entries:
        head = cache.client.head_object(Bucket=cache.name, Key=item["key"], ChecksumMode="ENABLED")
        assert head["ContentLength"] == item["size"]
        assert head["Metadata"][META_SHA256] == item["sha256"]
        body = cache.client.get_object(Bucket=cache.name, Key=item["key"])["Body"].read()
        assert sha(body) == item["sha256"]
    medium = cache.client.head_object(Bucket=cache.name, Key=entries[2]["key"])
    assert medium["ContentType"] == "application/gzip"
    assert cache.client.head_object(Bucket=cache.name, Key=entries[0]["key"])[
        "ContentType"
    ].startswith("text/plain")
    before = objects(cache)
    downloads = sum(server.requests.values())

    # When it runs again
    assert deps(server, "sync", str(path), "--json") == 0
    # Then everything is skipped: nothing downloaded, nothing written
    assert set(actions(summary(capsys)).values()) == {"skipped"}
    assert sum(server.requests.values()) == downloads
    assert objects(cache) == before


def test_other_bytes_present_fail_and_are_never_overwritten(
    server: ThirdPartyServer, cache: Bucket, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    item = entry(server, "tiny.txt")
    cache.put(item["key"], b"someone else's bytes", content_type="text/plain")
    before = objects(cache)
    path = deps_yml(tmp_path, cache.name, files=[item])

    assert deps(server, "sync", str(path), "--json") == 1
    (row,) = summary(capsys)["rows"]
    assert row["action"] == "failed"
    assert "other bytes" in row["detail"]
    assert objects(cache) == before


def test_conditional_write_refuses_an_existing_key(cache: Bucket, tmp_path: Path) -> None:
    # The race a HEAD cannot close: the key appears between our HEAD and our PUT.
    first, second = tmp_path / "first", tmp_path / "second"
    first.write_bytes(b"first")
    second.write_bytes(b"second")
    cache.upload_file(first, "third-party/x", sha256=sha(b"first"), content_type="a/b", metadata={})
    with pytest.raises(PreconditionFailed):
        cache.upload_file(
            second,
            "third-party/x",
            sha256=sha(b"second"),
            content_type="a/b",
            metadata={},
            if_none_match=True,
        )
    assert cache.client.get_object(Bucket=cache.name, Key="third-party/x")["Body"].read() == (
        b"first"
    )


def test_download_failures_are_reported_and_nothing_bad_is_uploaded(
    server: ThirdPartyServer, cache: Bucket, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a wrong hash, a 404 (of a signed URL), a reset mid-body, a stalled server, a
    # transient 503, a redirect off https and one to a host not in validation.hosts
    broken = server.files["broken.bin"]
    assert isinstance(broken, bytes)
    items = [
        entry(server, "small.json", key="third-party/wrong-hash.json", sha256=sha(b"other")),
        entry(
            server,
            "small.json",
            key="third-party/missing.json",
            url=server.url("nope") + "?sig=s3cr3tsig",
        ),
        entry(server, "broken.bin", "reset"),
        entry(server, "broken.bin", "slow"),
        entry(server, "broken.bin", "flaky"),
        entry(server, "broken.bin", "redirect"),
        entry(server, "broken.bin", "offsite"),
    ]
    path = deps_yml(tmp_path, cache.name, files=items)
    # When deps sync runs with two retries and a short read timeout
    code = deps(
        server, "sync", str(path), "--json", "--retries", "2", "--timeout", "0.5", "--jobs", "6"
    )
    # Then the transient 503 was retried and uploaded, every other entry failed, says why
    assert code == 1
    captured = capsys.readouterr()
    assert "s3cr3tsig" not in captured.out + captured.err
    rows = {row["target"].split("/", 3)[-1]: row for row in json.loads(captured.out)["rows"]}
    assert rows["third-party/wrong-hash.json"]["action"] == "failed"
    assert "SHA-256 is" in rows["third-party/wrong-hash.json"]["detail"]
    assert "HTTP 404" in rows["third-party/missing.json"]["detail"]
    assert "?sig=****" in rows["third-party/missing.json"]["detail"]
    assert server.requests["/files/nope?sig=s3cr3tsig"] == 1, "a 404 is not retried"
    by_mode = {k.split("/")[1]: r for k, r in rows.items() if k.endswith("broken.bin")}
    assert by_mode["reset"]["action"] == "failed"
    assert "gave up after 3 attempts" in by_mode["reset"]["detail"]
    assert server.requests["/reset/broken.bin"] == 3
    assert by_mode["slow"]["action"] == "failed"
    assert "timed out" in by_mode["slow"]["detail"]
    assert by_mode["flaky"]["action"] == "uploaded"
    assert server.requests["/flaky/broken.bin"] == 2
    assert "redirect to non-https" in by_mode["redirect"]["detail"]
    assert server.requests["/redirect/broken.bin"] == 1
    assert "host 'localhost' is not an allowed host" in by_mode["offsite"]["detail"]
    assert server.requests["/offsite/broken.bin"] == 1
    assert server.requests["/files/broken.bin"] == 0, "the redirect was not followed"
    # ...and only the verified file is in the bucket
    assert list(objects(cache)) == ["third-party/flaky/broken.bin"]


def test_dry_run_and_plan_write_nothing(
    server: ThirdPartyServer, cache: Bucket, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = deps_yml(tmp_path, cache.name, files=[entry(server, "tiny.txt")])
    downloads = sum(server.requests.values())
    assert deps(server, "sync", str(path), "--dry-run") == 0
    table = capsys.readouterr().out
    assert main(["deps", "plan", str(path), "--json"]) == 0
    assert actions(summary(capsys)) == {"tiny.txt": "upload"}
    assert "upload" in table
    assert "entry" in table.splitlines()[0]
    assert objects(cache) == {}
    assert sum(server.requests.values()) == downloads


def test_files_over_the_single_request_limit_go_multipart(
    server: ThirdPartyServer, cache: Bucket, tmp_path: Path
) -> None:
    path = deps_yml(tmp_path, cache.name, files=[entry(server, "medium.tar.gz", "flaky")])
    server.requests["/flaky/medium.tar.gz"] = 1  # no 503 for this one
    targets = load_deps(path.read_text()).files
    fetcher = Fetcher(https_client(str(server.cert), timeout=5, backoff=0.01))
    small = TransferLimits(single_request_limit=1_000_000)
    buckets = {cache.name: Bucket(cache.client, cache.name, limits=small)}
    (row,) = sync_files(targets, buckets, fetcher, tmp_path)
    assert row.action == "uploaded"
    head = cache.head(targets[0].key)
    assert head is not None
    assert head.sha256 == targets[0].sha256
    (again,) = sync_files(targets, buckets, fetcher, tmp_path)
    assert again.action == "skipped"


# -- python mirror ------------------------------------------------------------------------


def test_wheels_are_mirrored_through_the_gate_and_installable(
    server: ThirdPartyServer,
    env: LocalProcess,
    cache: Bucket,
    tmp_path: Path,
    venv_factory: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a third-party wheel served by its download host
    wheel = build_wheel(tmp_path / "wheels", "mirror-filelock", "3.18.0")
    server.files[wheel.name] = wheel.read_bytes()
    data = wheel.read_bytes()
    python = [
        {
            "requirement": "mirror-filelock==3.18.0",
            "indexes": "all",
            "wheels": [{"url": server.url(wheel.name), "sha256": sha(data), "size": len(data)}],
        }
    ]
    path = deps_yml(tmp_path, cache.name, python=python)
    review_id = load_deps(path.read_text()).run_id
    # When deps sync mirrors it
    args = [
        "--commit",
        COMMIT,
        "--review-url",
        "https://github.com/ROCm/TheRock/pull/7",
        "--wait",
        "60",
    ]
    assert deps(server, "sync", str(path), "--json", *args) == 0
    result = summary(capsys)
    # Then it was staged under a fresh mirror run of the reviewed section, and promoted on its
    # review
    run_id = result["run_id"]
    assert run_id.startswith(f"{review_id}-")
    assert check_mirror_run_id(str(review_id), run_id) == run_id
    assert actions(result) == {wheel.name: "staged"}
    assert result["promotion"]["state"] == "promoted"
    manifest = json.loads(
        env.client("s3")
        .get_object(Bucket=env.env["WHEELGATE_STAGING_BUCKET"], Key=f"manifests/{run_id}.json")[
            "Body"
        ]
        .read()
    )
    # ...the review's evidence being the reviewed pins, which the record says it shipped on
    assert manifest["schema"] == "wheelgate/manifest/v2"
    assert manifest["sets"][0]["tests"] == [
        {
            "name": "deps-review",
            "result": "passed",
            "url": "https://github.com/ROCm/TheRock/pull/7",
            "installed": [{"sha256": sha(data), "filename": wheel.name}],
        }
    ]
    record = json.loads(
        env.client("s3")
        .get_object(Bucket=env.env["WHEELGATE_STAGING_BUCKET"], Key=f"records/{run_id}.json")[
            "Body"
        ]
        .read()
    )
    assert record["sets"][0]["files"][0]["evidence"] == ["deps-review"]
    # ...and pip installs it from the nightly index
    venv = venv_factory("deps-mirror")
    installed = pip(
        venv, "install", "--index-url", f"{env.nightly_url}{INDEX}/", "mirror-filelock==3.18.0"
    )
    assert installed.returncode == 0, installed.stderr
    assert "mirror-filelock" in installed.stdout

    # When it runs again, the wheel is in nightly with the same SHA-256: skipped, no manifest
    nightly = env.nightly_versions()
    downloads = server.requests[f"/files/{wheel.name}"]
    assert deps(server, "sync", str(path), "--json", *args) == 0
    again = summary(capsys)
    assert actions(again) == {wheel.name: "skipped"}
    assert again["promotion"] is None
    assert server.requests[f"/files/{wheel.name}"] == downloads
    assert env.nightly_versions() == nightly

    # When another deps.yml names the same file with other bytes, it fails; nightly is intact
    other = build_wheel(tmp_path / "other", "mirror-filelock", "3.18.0")
    server.files["other/" + wheel.name] = other.read_bytes()
    python[0]["wheels"][0]["sha256"] = sha(other.read_bytes())
    python[0]["wheels"][0]["size"] = other.stat().st_size
    conflicting = deps_yml(tmp_path, cache.name, python=python)
    assert deps(server, "sync", str(conflicting), "--json", *args) == 1
    (row,) = summary(capsys)["rows"]
    assert row["action"] == "failed"
    assert "nightly has other bytes" in row["detail"]
    assert env.nightly_versions() == nightly
