"""The run history on the local S3 over HTTP: a stage call's entry is folded by the promoter
and read back in one GET per month plus one, and concurrent stage calls, folds and decisions
lose no entry."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import boto3
import pytest
from boto3.s3.transfer import TransferConfig
from botocore.awsrequest import AWSResponse

from tests.integration.conftest import LocalProcess
from tests.integration.test_promoter import Context, sqs_event
from wheelgate.cli.main import EXIT_OK, main
from wheelgate.core.layout import CHECKSUM_SUFFIX, HISTORY_ENTRIES_DIR, HISTORY_PREFIX, STAGING
from wheelgate.core.objects import META_COMMIT, META_RUN_ID, META_SHA256
from wheelgate.history.fold import REFUSED_INDEX, REFUSED_SHA256
from wheelgate.history.model import CommitTimeBy, EntryFile, RunState, StagedEntry
from wheelgate.history.reader import BucketHistorySource, HttpHistorySource, read_history
from wheelgate.lambda_function import handler
from wheelgate.local.names import LOCAL_REPORTER_PRINCIPAL, NIGHTLY_BUCKET, STAGING_BUCKET
from wheelgate.local.sample_wheels import build_wheel, manifest_for
from wheelgate.local.stack import LocalWheelGate
from wheelgate.promotion.compose import build_service
from wheelgate.promotion.event import ManifestEvent
from wheelgate.promotion.lease import LeaseBusy
from wheelgate.promotion.service import PromotionService
from wheelgate.staging.local_artifacts import inspect_files, sha256_file
from wheelgate.staging.stage import stage
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.http import fetch

COMMIT = "ab" * 20
WRITERS = 16


def buckets() -> tuple[Bucket, Bucket]:
    """Staging and nightly with a client of their own (as separate processes would have)."""
    s3 = boto3.client("s3")
    return Bucket(s3, STAGING_BUCKET), Bucket(s3, NIGHTLY_BUCKET)


def service(stack: LocalWheelGate) -> PromotionService:
    staging, nightly = buckets()
    return build_service(settings=stack.settings(), staging=staging, nightly=nightly)


def stage_wheels(
    stack: LocalWheelGate, run_id: str, index: str, *wheels: Path, commit_time: str | None = None
) -> None:
    staging, nightly = buckets()
    stage(
        staging=staging,
        nightly=nightly,
        nightly_base_url=stack.nightly_url,
        run_id=run_id,
        index=index,
        commit=COMMIT,
        artifacts=inspect_files(list(wheels)),
        attempt=1,
        commit_time=commit_time,
    )


def entry_keys(index: str) -> list[str]:
    staging, _ = buckets()
    return [o.key for o in staging.list(STAGING.history_entry_prefix(index))]


def test_the_local_stack_sends_entry_events_to_the_promoter_beside_manifests(
    stack: LocalWheelGate,
) -> None:
    config = boto3.client("s3").get_bucket_notification_configuration(Bucket=STAGING_BUCKET)
    prefixes = {
        rule["Value"]
        for queue in config["QueueConfigurations"]
        for rule in queue["Filter"]["Key"]["FilterRules"]
        if rule["Name"] == "prefix"
    }
    assert HISTORY_PREFIX + HISTORY_ENTRIES_DIR in prefixes


def test_a_staged_run_is_folded_and_read_back_in_two_gets(
    stack: LocalWheelGate, tmp_path: Path
) -> None:
    index = "hist/one"
    wheel = build_wheel(tmp_path, "histpkg", "1.0")
    stage_wheels(stack, "5001", index, wheel)
    [key] = entry_keys(index)

    assert service(stack).handle(ManifestEvent(key)) is None

    source = BucketHistorySource(buckets()[0])
    [run] = read_history(source, index)
    assert source.gets == 2
    assert (run.run_id, run.commit, run.state) == ("5001", COMMIT, RunState.STAGED)
    assert [(f.filename, f.project, f.version) for f in run.files] == [
        (wheel.name, "histpkg", "1.0")
    ]
    assert run.files[0].expires_at is not None


@pytest.mark.slow
def test_sixteen_concurrent_stage_calls_folds_and_decisions_lose_no_entry(
    stack: LocalWheelGate, tmp_path: Path
) -> None:
    # Given 8 runs of one call each and one run staged by 8 calls at once
    index = "hist/race"
    calls = [(f"61{i:02d}", f"solo{i}") for i in range(8)] + [
        ("6200", f"part{i}") for i in range(8)
    ]
    wheels = {name: build_wheel(tmp_path / name, name, "1.0") for _, name in calls}
    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        list(pool.map(lambda c: stage_wheels(stack, c[0], index, wheels[c[1]]), calls))
    keys = entry_keys(index)
    assert len(keys) == WRITERS

    # When every entry is folded while four of the solo runs are decided, all at once
    decided = [run_id for run_id, _ in calls[:4]]
    for run_id, name in calls[:4]:
        body = json.dumps(manifest_for(run_id, COMMIT, index, [wheels[name]])).encode()
        buckets()[0].put(STAGING.manifest(run_id), body, content_type="application/json")

    def fold(key: str) -> None:
        service(stack).handle(ManifestEvent(key))

    def decide(run_id: str) -> None:
        event = ManifestEvent(STAGING.manifest(run_id), LOCAL_REPORTER_PRINCIPAL)
        while True:
            try:
                service(stack).handle(event)
                return
            except LeaseBusy:  # the queue would deliver it again
                time.sleep(0.2)

    with ThreadPoolExecutor(max_workers=WRITERS + len(decided)) as pool:
        jobs = [pool.submit(fold, k) for k in keys] + [pool.submit(decide, r) for r in decided]
        for job in jobs:
            job.result()

    # Then every run holds every file, the decided runs their decision, in months + 1 GETs
    source = BucketHistorySource(buckets()[0])
    runs = {r.run_id: r for r in read_history(source, index)}
    head = json.loads(buckets()[0].get(STAGING.history_head(index))[0])  # type: ignore[index]
    assert source.gets == len(head["months"]) + 1
    assert sorted(runs) == sorted({run_id for run_id, _ in calls})
    assert sorted(f.filename for f in runs["6200"].files) == sorted(
        wheels[f"part{i}"].name for i in range(8)
    )
    assert {r: runs[r].state for r in decided} == dict.fromkeys(decided, RunState.PROMOTED)
    assert all(runs[r].files[0].nightly_key for r in decided)
    assert sum(m["runs"] for m in head["months"]) == len(runs)


@pytest.mark.slow
def test_wheelgate_local_folds_what_stage_writes_and_serves_it_over_http(
    local: LocalProcess, tmp_path: Path
) -> None:
    wheel = build_wheel(tmp_path, "histlocal", "1.0")
    staged = local.wheelgate(
        *("stage", "--run-id", "7001", "--index", "hist/local", "--commit", COMMIT),
        *("--commit-time", "2026-03-02T14:05:00+01:00", "--attempt", "2", str(wheel)),
    )
    assert staged.returncode == 0, staged.stderr

    local.wait_idle()

    source = HttpHistorySource(local.staging_url, fetch)
    [run] = read_history(source, "hist/local")
    assert (run.run_id, run.attempt, run.commit_time) == (
        "7001",
        2,
        "2026-03-02T13:05:00.000000Z",
    )
    assert [f.filename for f in run.files] == [wheel.name]
    assert source.gets == 2


def denying_history_writes(index: str) -> Any:
    """A staging client whose writes under ``history/<index>/`` are denied, as the promoter's
    grant (``history/<dir>/*`` for each served directory) denies them on AWS."""
    client = boto3.client("s3")

    def deny(model: Any, params: dict[str, Any], **_: Any) -> Any:
        if model.name != "PutObject" or STAGING.history_dir(index) not in unquote(
            str(params.get("url_path", ""))
        ):
            return None
        response = AWSResponse(url="", status_code=403, headers={}, raw=None)  # type: ignore[arg-type]
        return response, {
            "Error": {"Code": "AccessDenied", "Message": "Access Denied"},
            "ResponseMetadata": {"HTTPStatusCode": 403},
        }

    client.meta.events.register("before-call.s3.PutObject", deny)
    return client


def test_an_entry_for_a_directory_not_served_is_refused_through_the_handler_not_retried(
    stack: LocalWheelGate, tmp_path: Path
) -> None:
    # Given a promoter serving hist/served alone, and a build job's run staged in hist/denied
    # with its entry (the forged write goes through: build jobs may write any entry)
    denied = "hist/denied"
    stage_wheels(stack, "7101", denied, build_wheel(tmp_path, "deniedpkg", "1.0"))
    [key] = entry_keys(denied)
    staging = Bucket(denying_history_writes(denied), STAGING_BUCKET)
    settings = stack.settings().model_copy(update={"allowed_indexes": frozenset({"hist/served"})})
    promoter = build_service(settings=settings, staging=staging, nightly=buckets()[1])
    lambda_handler = handler.entry_point(lambda: promoter)
    # When the entry's event is handled by the function's handler
    response = lambda_handler(sqs_event(key, None), Context())
    # Then the message succeeds (nothing for the dead-letter queue), the entry is refused with
    # its reason, and no history of the directory is written
    assert response == {"batchItemFailures": []}
    result = promoter.fold_entry(key)
    assert result is not None
    assert result.reason == REFUSED_INDEX
    assert list(buckets()[0].list(STAGING.history_dir(denied))) == []


def test_the_commit_time_and_attempt_report_states_replace_the_build_jobs(
    stack: LocalWheelGate, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a run staged by a build job stating a commit time, and its entry folded
    index, run_id = "hist/reported", "7201"
    staging, _ = buckets()
    wheel = build_wheel(tmp_path, "reportedpkg", "1.0")
    stage_wheels(stack, run_id, index, wheel, commit_time="2000-01-01T00:00:00.000000Z")
    [key] = entry_keys(index)
    service(stack).handle(ManifestEvent(key))
    # When the reporter reports it with the commit's time and the CI run's attempt
    code = main(["report", "--run-id", run_id, "--commit", COMMIT, f"--test={index}:smoke=failed",
                 "--commit-time", "2026-03-02T14:05:00+01:00", "--attempt", "2"])  # fmt: skip
    assert code == EXIT_OK, capsys.readouterr().err
    manifest = json.loads(staging.get(STAGING.manifest(run_id))[0])  # type: ignore[index]
    assert (manifest["commit_time"], manifest["attempt"]) == ("2026-03-02T13:05:00.000000Z", 2)
    service(stack).handle(ManifestEvent(STAGING.manifest(run_id), LOCAL_REPORTER_PRINCIPAL))
    # Then the history holds the reporter's word
    [run] = read_history(BucketHistorySource(staging), index)
    assert (run.state, run.commit_time, run.commit_time_by, run.attempt) == (
        RunState.REJECTED,
        "2026-03-02T13:05:00.000000Z",
        CommitTimeBy.REPORTER,
        2,
    )


MB = 1024 * 1024


def test_a_multipart_file_whose_metadata_and_sidecar_lie_is_recorded_with_its_true_hash(
    stack: LocalWheelGate, tmp_path: Path
) -> None:
    # Given a build job's wheel uploaded in parts (S3 keeps no SHA-256 of its bytes), whose
    # metadata and .sha256 sidecar claim another wheel's hash: both writes go through
    index, run_id = "hist/parts", "7301"
    wheel = build_wheel(tmp_path / "big", "partspkg", "1.0", payload_bytes=6 * MB)
    other = build_wheel(tmp_path / "other", "partspkg", "2.0")
    true, lie = sha256_file(wheel), sha256_file(other)
    key = STAGING.artifact(run_id, index, wheel.name)
    s3 = boto3.client("s3")
    s3.upload_file(
        str(wheel),
        STAGING_BUCKET,
        key,
        ExtraArgs={"Metadata": {META_SHA256: lie, META_COMMIT: COMMIT, META_RUN_ID: run_id}},
        Config=TransferConfig(multipart_threshold=5 * MB, multipart_chunksize=5 * MB),
    )
    s3.put_object(
        Bucket=STAGING_BUCKET, Key=key + CHECKSUM_SUFFIX, Body=lie.encode(), IfNoneMatch="*"
    )
    staging, _ = buckets()
    head = staging.head(key)
    assert head is not None
    assert (head.s3_sha256, head.meta_sha256) == (None, lie)

    def entry(sha256: str) -> str:
        written = StagedEntry(
            run_id=run_id,
            index=index,
            commit=COMMIT,
            staged_at="2026-01-01T00:00:00Z",
            files=(EntryFile(filename=wheel.name, sha256=sha256, size=wheel.stat().st_size),),
        )
        entry_key = STAGING.history_entry(index, run_id, written.entry_id)
        staging.put(entry_key, written.to_json().encode(), content_type="application/json",
                    if_none_match=True)  # fmt: skip
        return entry_key

    # When an entry claiming the sidecar's hash is folded, Then it is refused; an entry
    # claiming the bytes' hash is folded, with it
    promoter = service(stack)
    lying = promoter.fold_entry(entry(lie))
    assert lying is not None
    assert lying.reason == REFUSED_SHA256
    assert read_history(BucketHistorySource(staging), index) == []
    assert promoter.fold_entry(entry(true)) is not None
    [run] = read_history(BucketHistorySource(staging), index)
    assert [f.sha256 for f in run.files] == [true]
