from __future__ import annotations

import json

import pytest

from wheelgate.cli.main import EXIT_USAGE, main
from wheelgate.core.manifest import Outcome
from wheelgate.lambda_function.handler import manifest_events
from wheelgate.local.cdn import Redirect, choose_page, prefers_json
from wheelgate.local.promoter_loop import stamp_identity
from wheelgate.staging.manifest_building import parse_test_spec


def s3_event(key: str, *, bucket: str = "staging", principal: str = "AWS:AROAX:s") -> str:
    return json.dumps(
        {
            "Records": [
                {
                    "eventVersion": "2.1",
                    "eventSource": "aws:s3",
                    "awsRegion": "us-east-1",
                    "eventTime": "2026-11-30T04:00:00.000Z",
                    "eventName": "ObjectCreated:Put",
                    "userIdentity": {"principalId": principal},
                    "requestParameters": {"sourceIPAddress": "10.0.0.1"},
                    "responseElements": {"x-amz-request-id": "r", "x-amz-id-2": "i"},
                    "s3": {
                        "s3SchemaVersion": "1.0",
                        "configurationId": "c",
                        "bucket": {
                            "name": bucket,
                            "ownerIdentity": {"principalId": "o"},
                            "arn": f"arn:aws:s3:::{bucket}",
                        },
                        "object": {"key": key, "size": 10, "eTag": "e", "sequencer": "1"},
                    },
                }
            ]
        }
    )


def test_keys_arrive_url_encoded() -> None:
    [event] = manifest_events(s3_event("manifests/run%2B1+x.json"), "staging")
    assert event.key == "manifests/run+1 x.json"
    assert event.principal_id == "AWS:AROAX:s"


def test_s3_test_event_and_other_buckets_are_ignored() -> None:
    test_event = json.dumps({"Service": "Amazon S3", "Event": "s3:TestEvent", "Bucket": "b"})
    assert manifest_events(test_event, "staging") == []
    assert manifest_events(s3_event("manifests/1.json", bucket="other"), "staging") == []


@pytest.mark.parametrize("body", ["not json", json.dumps({"Records": [{"eventName": "x"}]})])
def test_unparseable_bodies_raise_so_they_reach_the_dead_letter_queue(body: str) -> None:
    with pytest.raises(ValueError, match=r"(?i)json|event"):
        manifest_events(body, "staging")


def test_local_mode_stamps_identity_only_where_missing() -> None:
    stamped = json.loads(stamp_identity(s3_event("k", principal="AWS:OTHER"), "AWS:LOCAL"))
    assert stamped["Records"][0]["userIdentity"]["principalId"] == "AWS:OTHER"
    bare = json.loads(s3_event("k"))
    del bare["Records"][0]["userIdentity"]
    stamped = json.loads(stamp_identity(json.dumps(bare), "AWS:LOCAL"))
    assert stamped["Records"][0]["userIdentity"]["principalId"] == "AWS:LOCAL"


@pytest.mark.parametrize(
    ("path", "accept", "key"),
    [
        ("/v2/gfx/torch/", "", "v2/gfx/torch/index.html"),
        ("/v2/gfx/torch", "text/html", Redirect("/v2/gfx/torch/")),
        ("/v2/gfx/torch/", "application/vnd.pypi.simple.v1+json", "v2/gfx/torch/index.json"),
        (
            "/v2/gfx/torch/",
            "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2,"
            " text/html;q=0.01",
            "v2/gfx/torch/index.json",
        ),
        (
            "/v2/gfx/torch/",
            "text/html, application/vnd.pypi.simple.v1+json;q=0.5",
            "v2/gfx/torch/index.html",
        ),
        ("/v2/gfx/torch-1.0-py3-none-any.whl", "", "v2/gfx/torch-1.0-py3-none-any.whl"),
        ("/v2/gfx/torch/?x=1", "", "v2/gfx/torch/index.html"),
        ("/", "", "index.html"),
    ],
)
def test_local_index_server_maps_paths_like_the_cdn(
    path: str, accept: str, key: str | Redirect
) -> None:
    assert choose_page(path, accept) == key


def test_json_needs_a_nonzero_quality() -> None:
    assert not prefers_json("application/vnd.pypi.simple.v1+json;q=0, text/html")


def test_test_specs_parse() -> None:
    spec = parse_test_spec("v2/gfx94X-dcgpu:pytorch:smoke=passed@https://ci/1")
    assert (spec.index, spec.name, spec.result, spec.url) == (
        "v2/gfx94X-dcgpu",
        "pytorch:smoke",
        Outcome.PASSED,
        "https://ci/1",
    )


@pytest.mark.parametrize("spec", ["v2:t=ok", "t=passed", "v2:t", "../x:t=passed", ":t=passed"])
def test_bad_test_specs_are_refused(spec: str) -> None:
    with pytest.raises(ValueError, match=r"test|index"):
        parse_test_spec(spec)


def test_cli_reports_bad_input_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["report", "--run-id", "1", "--commit", "a" * 40, "--test", "bad", "--staging-bucket", "b"]
    )
    assert code == EXIT_USAGE
    assert "DIR:NAME=passed|failed|skipped" in capsys.readouterr().err


def test_cli_stage_refuses_bad_files_before_uploading(
    capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    code = main(
        [
            "stage",
            "--run-id",
            "1",
            "--index",
            "v2/x",
            "--commit",
            "a" * 40,
            "--nightly-url",
            "https://n/",
            "--staging-bucket",
            "s",
            "--nightly-bucket",
            "n",
            "/nonexistent/torch-1.0-py3-none-any.whl",
            "not-a-wheel.txt",
        ]
    )
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert "no such file" in err
    assert "not-a-wheel.txt" in err
