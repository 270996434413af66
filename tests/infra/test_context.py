"""cdk.json context -> one deployment: the stage names the stack and picks its settings, the
account and region come from the context, and errors say where to set what is wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stacks.context import DEFAULT_STACK_NAME, deployment_from_context, props_from_context
from stacks.setting_errors import ConfigError
from tests.infra.synth import cdk_json_context

TEST_STAGE = {
    "release_workflows": [".github/workflows/release-test.yml"],
    "custom_domain": {
        "staging": {"domain_name": "test.example.org", "certificate_arn": "arn:aws:acm:x"}
    },
}


def _context(**changes: Any) -> dict[str, Any]:
    context = {**cdk_json_context(), "wheelgate_stages": {"test": TEST_STAGE, "prod": {}}}
    context.update(changes)
    return {k: v for k, v in context.items() if v is not ...}


def test_no_stage_is_the_default_deployment_as_before() -> None:
    # Given cdk.json alone, then the stack is WheelGate with cdk.json's settings, and no
    # environment: it deploys where the credentials of `cdk deploy` point, as before stages
    deployment = deployment_from_context(_context())
    assert (deployment.stack_name, deployment.stage) == (DEFAULT_STACK_NAME, None)
    assert (deployment.account, deployment.region) == (None, None)
    assert deployment.props == props_from_context(cdk_json_context())


def test_a_stage_names_the_stack_and_replaces_its_keys_whole() -> None:
    # Given -c stage=test, and wheelgate_stages.test naming two keys
    deployment = deployment_from_context(_context(stage="test"))
    # Then the stack is WheelGate-test, those two keys are the stage's, whole (custom_domain
    # has no nightly entry left), and every other key is cdk.json's
    assert deployment.stack_name == "WheelGate-test"
    props = deployment.props
    assert props.release_workflows == (".github/workflows/release-test.yml",)
    assert props.nightly_domain is None
    assert props.staging_domain is not None
    assert props.staging_domain.domain_name == "test.example.org"
    assert props.index_dirs == tuple(cdk_json_context()["wheelgate"]["index_dirs"])
    # And an empty stage entry is cdk.json's settings under the stage's stack name
    prod = deployment_from_context(_context(stage="prod"))
    assert prod.stack_name == "WheelGate-prod"
    assert prod.props == props_from_context(cdk_json_context())
    # And the stage given to the app wins over the context's
    assert deployment_from_context(_context(stage="test"), stage="prod").stack_name == (
        "WheelGate-prod"
    )


def test_an_unlisted_stage_is_refused_naming_the_stages() -> None:
    # A mistyped stage must not deploy a second copy of the default settings.
    with pytest.raises(ConfigError, match=r"stage 'tset' is not in context key wheelgate_stages"):
        deployment_from_context(_context(stage="tset"))
    with pytest.raises(ConfigError, match=r"stages: prod, test\)"):
        deployment_from_context(_context(stage="tset"))
    with pytest.raises(ConfigError, match=r"stages: none"):
        deployment_from_context(_context(stage="test", wheelgate_stages=...))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"stage": "te st"}, r"context key stage is 'te st'"),
        ({"stage": "1test"}, r"a letter, then up to 31"),
        ({"stage": "t" * 33}, r"a letter, then up to 31"),
        ({"wheelgate_stages": ["test"], "stage": "test"}, r"wheelgate_stages must be an object"),
        (
            {"wheelgate_stages": {"test": "x"}, "stage": "test"},
            r"wheelgate_stages.test is 'x', which is not JSON",
        ),
        ({"account": "1234"}, r"context key account is '1234': an AWS account id is 12 digits"),
        ({"region": "Europe"}, r"context key region is 'Europe', not an AWS region"),
        ({"wheelgate": ["x"]}, r"context key wheelgate must be an object \(in cdk.json\)"),
    ],
)
def test_bad_stage_and_environment_are_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        deployment_from_context(_context(**changes))


def test_account_and_region_come_from_the_context() -> None:
    # -c account=... arrives as a string; cdk.json may hold the account as a number.
    deployment = deployment_from_context(_context(account=111122223333, region="eu-west-1"))
    assert (deployment.account, deployment.region) == ("111122223333", "eu-west-1")


def test_command_line_keys_win_over_the_stage() -> None:
    # Given the stage's release workflows and one -c override of them (JSON) and of a nested key
    context = _context(
        stage="test",
        **{
            "wheelgate.release_workflows": '[".github/workflows/other.yml"]',
            "wheelgate.fanout.min_files": "7",
        },
    )
    props = deployment_from_context(context).props
    assert props.release_workflows == (".github/workflows/other.yml",)
    # A nested key replaces that key alone: min_bytes keeps cdk.json's value.
    assert (props.fanout.min_files, props.fanout.min_bytes) == (7, 34359738368)


def test_a_mistyped_command_line_key_is_refused() -> None:
    # -c wheelgate.alarm_emial=... would otherwise be ignored, and no alarm email subscribed.
    with pytest.raises(ConfigError, match=r"wheelgate\.alarm_emial is not a WheelGate setting"):
        props_from_context(_context(**{"wheelgate.alarm_emial": "oncall@example.org"}))
    with pytest.raises(ConfigError, match=r"give all of it, as JSON, with -c wheelgate\.index_d"):
        props_from_context(_context(**{"wheelgate.index_dirs.0": "v2/x"}))


def test_errors_say_where_to_set_the_key() -> None:
    # A bad value: the key, what it must be, and both places to set it
    with pytest.raises(ConfigError) as bad:
        props_from_context(_context(**{"wheelgate.staging_run_expiry_days": "0"}))
    (problem,) = bad.value.problems
    assert problem.message == (
        "wheelgate.staging_run_expiry_days must be a positive integer (cdk.json: under "
        '"context" -> "wheelgate"; one command: -c wheelgate.staging_run_expiry_days=<value>)'
    )
    # A missing key under a stage: the stage's entry is a place to set it too
    values = {k: v for k, v in cdk_json_context()["wheelgate"].items() if k != "github_repo"}
    with pytest.raises(ConfigError, match=r'"wheelgate_stages" -> "test"\) in cdk.json or pass'):
        props_from_context(_context(wheelgate=values), stage="test")


def test_every_problem_is_reported_at_once() -> None:
    values = {**cdk_json_context()["wheelgate"], "index_dirs": [], "fanout": 3}
    del values["github_repo"]
    with pytest.raises(ConfigError) as error:
        props_from_context({"wheelgate": values})
    assert [p.key for p in error.value.problems] == [
        "wheelgate.github_repo",
        "wheelgate.index_dirs",
        "wheelgate.fanout",
    ]
    assert str(error.value).count("\n") == 2


# --- settings from a file (-c wheelgate_file=...) --------------------------------------------


def _settings(**changes: Any) -> dict[str, Any]:
    return {**cdk_json_context()["wheelgate"], **changes}


def test_a_multi_line_settings_file_takes_the_place_of_cdk_jsons_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given wheelgate.json in the directory cdk runs in, on many lines, and a stages file
    monkeypatch.chdir(tmp_path)
    Path("wheelgate.json").write_text(json.dumps(_settings(github_repo="acme/app"), indent=2))
    Path("stages.json").write_text(json.dumps({"test": TEST_STAGE}, indent=2))
    # When the context names them, beside cdk.json's own object
    context = _context(
        wheelgate_file="wheelgate.json", wheelgate_stages_file="stages.json", stage="test"
    )
    props = deployment_from_context(context).props
    # Then the settings are the files'
    assert props.github_repo == "acme/app"
    assert props.release_workflows == (".github/workflows/release-test.yml",)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, r"which does not exist \(a relative path is from the directory cdk runs in"),
        ('{\n  "github_repo": "a/b",\n}\n', r"which is not JSON: .* at line 3, column 1$"),
        ("[1, 2]\n", r"which holds a JSON list, not an object of settings"),
        (b"\xff{}", r"which is not UTF-8 text"),
    ],
)
def test_a_settings_file_that_cannot_be_read_is_named_with_what_is_wrong(
    content: str | bytes | None, message: str, tmp_path: Path
) -> None:
    path = tmp_path / "wheelgate.json"
    if isinstance(content, str):
        path.write_text(content)
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(ConfigError, match=r"context key wheelgate_file names '[^']*', " + message):
        props_from_context(_context(wheelgate_file=str(path)))


def test_a_key_missing_from_the_settings_file_is_named_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "wheelgate.json"
    path.write_text(json.dumps({k: v for k, v in _settings().items() if k != "github_repo"}))
    with pytest.raises(ConfigError) as error:
        props_from_context(_context(wheelgate_file=str(path)))
    assert str(error.value) == (
        f"wheelgate.github_repo is missing: add it to {path} or pass "
        "-c wheelgate.github_repo=<value> (see docs/deploy.md)"
    )


def test_settings_on_the_command_line_and_in_a_file_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "wheelgate.json"
    path.write_text(json.dumps(_settings()))
    with pytest.raises(ConfigError, match=r"wheelgate and wheelgate_file are both given"):
        props_from_context(_context(wheelgate=json.dumps(_settings()), wheelgate_file=str(path)))


def test_a_value_cdk_cut_at_its_first_newline_says_so_and_names_the_file_key() -> None:
    # `-c wheelgate="$(cat wheelgate.json)"` of a multi-line file: the app gets its first line
    for first_line in ("{", '{ "github_repo": "acme/app",'):
        with pytest.raises(ConfigError) as error:
            props_from_context(_context(wheelgate=first_line))
        message = str(error.value)
        assert message.startswith(f"context key wheelgate is {first_line!r}, which is not JSON")
        assert "the cdk command cut it at the file's first newline" in message
        assert "-c wheelgate_file=wheelgate.json" in message
        assert "must be an object" not in message


def test_a_command_line_value_that_is_no_object_says_what_it_is() -> None:
    with pytest.raises(ConfigError, match=r"^context key wheelgate is '\[1\]', a JSON list, not"):
        props_from_context(_context(wheelgate="[1]"))
    with pytest.raises(ConfigError) as error:
        props_from_context(_context(wheelgate="oops"))
    assert "which is not JSON" in str(error.value)
    assert "first newline" not in str(error.value)
