"""cdk.json context -> WheelGateProps: clear errors naming the missing or bad key."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest

from stacks.context import props_from_context
from stacks.props import WheelGateProps
from stacks.setting_errors import ConfigError
from stacks.setting_types import CustomDomain
from tests.infra.synth import cdk_json_context
from wheelgate.core.env_names import ENV_ALLOW_NEW_LOCAL_LABELS
from wheelgate.core.setting_values import ListingRetention, NewLocalLabels, RetentionRule
from wheelgate.core.settings import DEFAULT_FANOUT_MIN_BYTES, DEFAULT_FANOUT_MIN_FILES


def _config(**changes: Any) -> WheelGateProps:
    values = {**cdk_json_context()["wheelgate"], **changes}
    values = {k: v for k, v in values.items() if v is not ...}
    return props_from_context({"wheelgate": values})


RELEASE = "ROCm/TheRock/.github/workflows/release-nightly.yml"
REPORT = "ROCm/TheRock/.github/workflows/report.yml"


def test_cdk_json_is_complete() -> None:
    config = _config()
    # repo x build_refs x release_workflows x release_events, in the customized subject format;
    # no tags unless release_tags lists them
    assert config.build_subs == (
        f"repo:ROCm/TheRock:ref:refs/heads/main:job_workflow_ref:{RELEASE}@refs/heads/main"
        ":event_name:schedule",
        f"repo:ROCm/TheRock:ref:refs/heads/main:job_workflow_ref:{RELEASE}@refs/heads/main"
        ":event_name:push",
    )
    # The reporter: the same refs and events, but its own reusable workflow file
    assert config.reporter_subs == (
        f"repo:ROCm/TheRock:ref:refs/heads/main:job_workflow_ref:{REPORT}@refs/heads/main"
        ":event_name:schedule",
        f"repo:ROCm/TheRock:ref:refs/heads/main:job_workflow_ref:{REPORT}@refs/heads/main"
        ":event_name:push",
    )
    assert config.nightly_retention_mode == "GOVERNANCE"
    assert config.nightly_domain is None
    # 14-day files, 7-day pages: a run is staged into for 14 - 7 - 1 days.
    assert config.run_stage_window_days == 6
    assert config.nightly_page_retention_days == 7


@pytest.mark.parametrize(
    "key",
    [
        "github_repo",
        "index_dirs",
        "staging_run_expiry_days",
        "staging_run_page_expiry_days",
        "nightly_page_retention_days",
        "release_workflows",
        "release_events",
    ],
)
def test_missing_key_is_named_with_the_override_hint(key: str) -> None:
    with pytest.raises(ConfigError, match=rf"wheelgate\.{key} is missing.*-c wheelgate\.{key}="):
        _config(**{key: ...})


def test_nested_missing_key_is_named() -> None:
    with pytest.raises(ConfigError, match=r"wheelgate\.nightly_retention\.days is missing"):
        _config(nightly_retention={"mode": "GOVERNANCE"})


def test_no_context_at_all_names_the_first_key() -> None:
    with pytest.raises(ConfigError, match="is missing"):
        props_from_context({})


def test_command_line_override_wins_and_is_parsed_as_json() -> None:
    context = {
        "wheelgate": cdk_json_context()["wheelgate"],
        "wheelgate.staging_run_expiry_days": "30",
    }
    assert props_from_context(context).staging_run_expiry_days == 30


def test_the_whole_settings_object_can_come_from_the_command_line() -> None:
    # Given this repository's cdk.json and a team's own settings as one line of JSON on the
    # command line (-c wheelgate='{...}'; a file's goes by -c wheelgate_file=, test_context.py)...
    own = {**cdk_json_context()["wheelgate"], "github_repo": "my-org/my-project"}
    own["dev_sub_patterns"] = ["repo:my-org/my-project:pull_request:*"]
    context = {**cdk_json_context(), "wheelgate": json.dumps(own)}
    # Then they are the settings, whatever cdk.json holds; a stage's keys too.
    assert props_from_context(context).github_repo == "my-org/my-project"
    staged = {**context, "wheelgate_stages": json.dumps({"test": {"alarm_email": "a@b.org"}})}
    assert props_from_context(staged, stage="test").alarm_email == "a@b.org"
    # And a value that is not a JSON object is named.
    with pytest.raises(ConfigError, match=r"wheelgate is '\[1, 2\]', a JSON list, not an object"):
        props_from_context({"wheelgate": "[1, 2]"})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"nightly_retention": {"mode": "FOREVER", "days": 1}}, "GOVERNANCE, COMPLIANCE"),
        ({"index_dirs": ["runs/x"]}, "reserves"),
        # No allow-list in a deployed stack: the promoter would take any directory.
        ({"index_dirs": []}, "index_dirs.*non-empty list"),
        # D/torch inside D would be D's project page of `torch`.
        ({"index_dirs": ["v2/gfx94X", "v2/gfx94X/torch"]}, "may not nest"),
        ({"index_dirs": ["v2/a", "v2/a"]}, "listed twice"),
        ({"index_dirs": ["v2/ok"], "required_tests": {"v2/other": []}}, "v2/other"),
        ({"staging_run_expiry_days": 0}, "positive integer"),
        ({"staging_run_page_expiry_days": 0}, "positive integer"),
        # Pages of 7 days and files of 8 leave no day between them to stage a run in.
        (
            {"staging_run_expiry_days": 8, "staging_run_page_expiry_days": 7},
            r"staging_run_page_expiry_days and .*staging_run_expiry_days.*no day to stage",
        ),
        ({"nightly_page_retention_days": 0}, "positive integer"),
        # A page version locked past the noncurrent rule's days would outlive the rule's date.
        (
            {"nightly_page_retention_days": 31, "nightly_noncurrent_version_days": 30},
            r"nightly_page_retention_days is 31.*nightly_noncurrent_version_days \(30\)",
        ),
        (
            {
                "nightly_page_retention_days": 20,
                "nightly_noncurrent_version_days": 30,
                "nightly_retention": {"mode": "GOVERNANCE", "days": 10},
            },
            r"nightly_retention\.days \(10\)",
        ),
        ({"build_refs": []}, "non-empty list"),
        ({"release_workflows": []}, "non-empty list"),
        ({"release_workflows": ["release-nightly.yml"]}, r"\.github/workflows/release-nightly"),
        ({"release_workflows": [".github/workflows/sub/x.yml"]}, "not a workflow file path"),
        ({"release_events": ["schedule", "workflow_dispatch"]}, "workflow_dispatch may not"),
        ({"release_events": ["pull_request_target"]}, "pull_request_target may not"),
        (
            {"release_workflows": [f".github/workflows/w{i}.yml" for i in range(8)]},
            "too long for an IAM trust policy",
        ),
        # The default-format PR subject has no ':job_workflow_ref:' and would never match.
        ({"dev_sub_patterns": ["repo:ROCm/TheRock:pull_request"]}, "pull_request:\\*"),
        ({"dev_sub_patterns": ["ROCm/TheRock:*"]}, "customized OIDC subject"),
        ({"custom_domain": {"nightly": {"domain_name": "x.example"}}}, "certificate_arn"),
        (
            {"break_glass_role_arn": "arn:aws:iam::111122223333:role/bg"},
            r"break_glass_role_id is missing.*get-role",
        ),
        (
            {
                "break_glass_role_arn": "arn:aws:iam::111122223333:role/bg",
                "break_glass_role_id": "AIDAEXAMPLE0000000001",
            },
            "not a role's unique id",
        ),
        (
            {
                "break_glass_role_arn": "arn:aws:iam::111122223333:role/bg",
                "break_glass_role_id": "AROASHORT",
            },
            "not a role's unique id",
        ),
        ({"break_glass_role_id": "AROABREAKGLASS0000001"}, "set both or neither"),
        ({"block_all_on_failure": "yes"}, "true or false"),
        ({"cache_prefixes": ["third-party"]}, "not a key prefix"),
        ({"cache_prefixes": ["third-*/"]}, "not a key prefix"),
        ({"cache_prefixes": ["a/../"]}, "not a key prefix"),
        ({"cache_prefixes": []}, "non-empty list"),
        ({"deps_workflows": ["deps.yml"]}, "not a workflow file path"),
        # Tags widen trust: only the explicit release_tags opt-in names them.
        ({"build_refs": ["refs/heads/main", "refs/tags/v*"]}, "release_tags"),
        ({"release_tags": ["v*"]}, "not a tag ref pattern"),
        ({"release_tags": "refs/tags/v*"}, "a list of strings"),
        # A build job must never be able to act as the reporter.
        ({"reporter_workflow": ".github/workflows/release-nightly.yml"}, "its own reusable"),
        ({"reporter_workflow": ".github/workflows/deps.yml"}, "its own reusable"),
        ({"reporter_workflow": "report.yml"}, "not a workflow file path"),
        ({"default_branch": "refs/heads/main"}, "branch name alone"),
        ({"waf_rate_limit": 99}, "100 to 2,000,000,000"),
        ({"waf_rate_limit": "2000"}, "an integer or null"),
        (
            {"waf_rate_limit": 2000, "waf_web_acl_arn": "arn:aws:wafv2:us-east-1:1:global/x"},
            "not both",
        ),
    ],
)
def test_bad_values_are_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _config(**changes)


def test_break_glass_deps_and_cache_settings_are_read() -> None:
    config = _config(
        break_glass_role_arn="arn:aws:iam::111122223333:role/bg",
        break_glass_role_id="AROABREAKGLASS0000001",
        block_all_on_failure=False,
        cache_bucket_name="therock-cache",
    )
    assert config.break_glass_role_id == "AROABREAKGLASS0000001"
    assert config.block_all_on_failure is False
    assert config.cache_bucket_name == "therock-cache"
    assert config.cache_prefixes == ("third-party/",)
    # Pushes of the deps workflow to the default branch, in the customized subject format.
    deps = "ROCm/TheRock/.github/workflows/deps.yml"
    assert config.deps_subs == (
        f"repo:ROCm/TheRock:ref:refs/heads/main:job_workflow_ref:{deps}@refs/heads/main"
        ":event_name:push",
    )


def test_release_tags_are_an_opt_in_for_build_and_reporter_only() -> None:
    # Given tags opted in (after a tag protection rule guards them, docs/deploy.md)
    config = _config(release_tags=["refs/tags/v*"])
    # Then the build and reporter roles trust tag runs of their own workflow files
    tag = "repo:ROCm/TheRock:ref:refs/tags/v*:job_workflow_ref:{}@refs/tags/v*:event_name:push"
    assert tag.format(RELEASE) in config.build_subs
    assert tag.format(REPORT) in config.reporter_subs
    # And the deps role still trusts the default branch alone
    assert all(":ref:refs/heads/main:" in s for s in config.deps_subs)
    assert _config().release_tags == ()


def test_test_url_hosts_default_to_github() -> None:
    assert _config(test_url_hosts=...).test_url_hosts == ("github.com",)
    assert _config(test_url_hosts=["ci.example.org"]).test_url_hosts == ("ci.example.org",)
    with pytest.raises(ConfigError, match=r"test_url_hosts.*non-empty list"):
        _config(test_url_hosts=[])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"default": {"keep_versions": 0}}, r"listing_retention\.default\.keep_versions is 0"),
        ({"default": {"keep_days": "30"}}, r"listing_retention\.default\.keep_days must be"),
        ({"default": {"keep_versions": True}}, r"keep_versions must be a positive integer"),
        ({"default": {"keep": 3}}, r"listing_retention\.default has unknown key\(s\) keep"),
        ({"defaults": {}}, r"listing_retention has unknown key\(s\) defaults"),
        ({"indexes": {"v2/gfx94X-dcgpu": 30}}, r"indexes\.v2/gfx94X-dcgpu must be an object"),
        ({"indexes": {"v2/nope": {}}}, r"listing_retention\.indexes names .*v2/nope"),
        ({"indexes": {"runs/x": {}}}, r"listing_retention\.indexes: .*reserves"),
        ([30], r"listing_retention must be an object"),
    ],
)
def test_bad_listing_retention_is_refused_naming_the_key(value: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _config(listing_retention=value)


def test_listing_retention_default_and_overrides_are_read() -> None:
    # Left out: every version stays listed.
    assert _config(listing_retention=...).listing_retention == ListingRetention()
    config = _config(
        listing_retention={
            "default": {"keep_versions": 30, "keep_days": None},
            "indexes": {"v2/gfx950-dcgpu": {"keep_days": 60}},
        }
    )
    assert config.listing_retention.rule_for("v2/gfx94X-dcgpu") == RetentionRule(keep_versions=30)
    # An override is a whole rule: keep_versions it leaves out is null, not the default's 30.
    assert config.listing_retention.rule_for("v2/gfx950-dcgpu") == RetentionRule(keep_days=60)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("yes", r"allow_new_local_labels must be true, false or a list of index directories"),
        (["v2/nope"], r"allow_new_local_labels names .*v2/nope"),
    ],
)
def test_bad_allow_new_local_labels_is_refused_naming_the_key(value: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _config(allow_new_local_labels=value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (..., NewLocalLabels()),
        (True, NewLocalLabels(everywhere=True)),
        (["v2/gfx950-dcgpu"], NewLocalLabels(indexes=frozenset({"v2/gfx950-dcgpu"}))),
    ],
)
def test_allow_new_local_labels_reaches_the_promoter_as_read(
    value: Any, expected: NewLocalLabels
) -> None:
    # Left out it is false; what the stack passes is what the promoter reads back
    props = _config(allow_new_local_labels=value)
    assert props.allow_new_local_labels == expected
    env = {ENV_ALLOW_NEW_LOCAL_LABELS: props.allow_new_local_labels.to_json()}
    read = NewLocalLabels.from_value(
        json.loads(env[ENV_ALLOW_NEW_LOCAL_LABELS]), name=ENV_ALLOW_NEW_LOCAL_LABELS
    )
    assert read == expected


def test_block_all_on_failure_defaults_to_true() -> None:
    assert _config(block_all_on_failure=...).block_all_on_failure is True
    assert _config().cache_bucket_name is None
    assert _config().break_glass_role_id is None


def test_custom_domain_is_read() -> None:
    config = _config(
        custom_domain={
            "nightly": {
                "domain_name": "nightly.example.org",
                "certificate_arn": "arn:aws:acm:us-east-1:111122223333:certificate/abc",
            }
        }
    )
    assert config.nightly_domain == CustomDomain(
        domain_name="nightly.example.org",
        certificate_arn="arn:aws:acm:us-east-1:111122223333:certificate/abc",
    )
    assert config.staging_domain is None


def test_missing_layer_says_to_run_make_layer(tmp_path: Path) -> None:
    import aws_cdk as cdk

    from stacks.wheelgate import WheelGate

    stack = cdk.Stack(cdk.App(), "NoLayer")
    with pytest.raises(FileNotFoundError, match="make layer"):
        WheelGate(stack, "Default", _config(), layer_dir=tmp_path / "missing")


def test_deploy_doc_sets_the_subject_template_the_trust_expects() -> None:
    import json
    import re

    from stacks.oidc_subjects import OIDC_SUBJECT_CLAIM_KEYS
    from tests.infra.synth import REPO_ROOT

    document = (REPO_ROOT / "docs" / "deploy.md").read_text()
    (body,) = re.findall(r"^\{\"use_default\".*\}$", document, flags=re.MULTILINE)
    assert json.loads(body) == {
        "use_default": False,
        "include_claim_keys": list(OIDC_SUBJECT_CLAIM_KEYS),
    }
    # build_subject_patterns spells the parts in the template's order.
    sub = _config().build_subs[0]
    positions = [sub.index(f"{key}:") for key in ("repo", "job_workflow_ref", "event_name")]
    assert positions == sorted(positions)


def test_fanout_thresholds_are_read_and_default_to_the_settings() -> None:
    # Given cdk.json's fanout object, then its numbers are read
    config = _config(fanout={"min_files": 7, "min_bytes": 1024})
    assert (config.fanout_min_files, config.fanout_min_bytes) == (7, 1024)
    # Given no fanout object, or one key left out, then the promoter's defaults apply
    unset = _config(fanout=...)
    assert (unset.fanout_min_files, unset.fanout_min_bytes) == (
        DEFAULT_FANOUT_MIN_FILES,
        DEFAULT_FANOUT_MIN_BYTES,
    )
    assert _config(fanout={"min_files": 3}).fanout_min_bytes == DEFAULT_FANOUT_MIN_BYTES
    # And a command-line override of one key wins
    values = {**cdk_json_context()["wheelgate"], "fanout": {"min_files": 7, "min_bytes": 9}}
    context = {"wheelgate": values, "wheelgate.fanout.min_bytes": "4096"}
    assert props_from_context(context).fanout_min_bytes == 4096


@pytest.mark.parametrize(
    ("fanout", "message"),
    [
        ({"min_files": 0, "min_bytes": 1}, r"wheelgate\.fanout\.min_files must be a positive"),
        ({"min_files": 1, "min_bytes": -5}, r"wheelgate\.fanout\.min_bytes must be a positive"),
        ({"min_files": "100", "min_bytes": 1}, r"wheelgate\.fanout\.min_files must be a positive"),
        ({"min_files": True, "min_bytes": 1}, r"wheelgate\.fanout\.min_files must be a positive"),
        (100, r"wheelgate\.fanout must be an object or null"),
        ({"hash_concurrency": 0}, r"wheelgate\.fanout\.hash_concurrency must be an integer from 1"),
        (
            {"copy_concurrency": 10_001},
            r"wheelgate\.fanout\.copy_concurrency must be an integer from 1 to 10,000",
        ),
    ],
)
def test_bad_fanout_thresholds_are_refused_naming_the_key(fanout: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _config(fanout=fanout)


def test_props_in_code_raise_config_error_naming_every_bad_key() -> None:
    # Given settings built in an app's own code (no cdk.json), with three mistakes
    values = {**cdk_json_context()["wheelgate"], "index_dirs": [], "alarm_emial": "x@y"}
    del values["github_repo"]
    # Then one ConfigError (not pydantic's error) names each key as cdk.json spells it
    with pytest.raises(ConfigError) as error:
        WheelGateProps(**values)
    assert [(p.key, p.missing) for p in error.value.problems] == [
        ("wheelgate.github_repo", True),
        ("wheelgate.index_dirs", False),
        ("wheelgate.alarm_emial", False),
    ]
    assert str(error.value).splitlines() == [
        "wheelgate.github_repo is missing",
        "wheelgate.index_dirs must be a non-empty list of strings",
        "wheelgate.alarm_emial is not a WheelGate setting (docs/deploy.md)",
    ]
    # And a rule between keys is a ConfigError too
    with pytest.raises(ConfigError, match="set both or neither"):
        WheelGateProps.model_validate(
            {**cdk_json_context()["wheelgate"], "break_glass_role_id": "AROABREAKGLASS0000001"}
        )


def test_props_are_frozen_and_round_trip_through_plain_values() -> None:
    props = _config(listing_retention={"default": {"keep_versions": 3}, "indexes": {}})
    with pytest.raises(ValueError, match="frozen"):
        props.github_repo = "other/repo"  # type: ignore[misc]
    # What model_dump gives is what cdk.json would hold, and reads back to the same settings.
    assert WheelGateProps.model_validate(props.model_dump()) == props
    assert props.model_dump()["listing_retention"] == {
        "default": {"keep_days": None, "keep_versions": 3},
        "indexes": {},
    }


def test_a_log_retention_cloudwatch_does_not_offer_is_refused() -> None:
    # Before, synthesis stopped with a traceback from the log group; now the key is named.
    with pytest.raises(ConfigError, match=r"wheelgate\.log_retention_days is 42, not a period"):
        _config(log_retention_days=42)


def _settings_table(document: str) -> dict[str, str]:
    """The rows of docs/deploy.md's settings table: key -> meaning."""
    section = document.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z_]+)` \| (.+) \|$", section, flags=re.MULTILINE)
    return dict(rows)


def test_deploy_doc_lists_every_setting_with_its_default() -> None:
    # Given the settings table of docs/deploy.md and the model
    from tests.infra.synth import REPO_ROOT

    table = _settings_table((REPO_ROOT / "docs" / "deploy.md").read_text())
    fields = WheelGateProps.model_fields
    # Then it has one row per setting, in the model's order
    assert list(table) == list(fields)
    defaults = WheelGateProps.model_validate(cdk_json_context()["wheelgate"]).model_dump()
    for name, field in fields.items():
        meaning = table[name]
        if field.is_required():
            assert not meaning.startswith(("optional", "nullable")), name
        elif field.default is None:
            assert meaning.startswith("nullable"), name
        else:
            # "optional, default `<JSON>`": the model's default, as cdk.json would spell it
            found = re.match(r"optional, default `([^`]+)`", meaning)
            assert found, f"{name}: {meaning[:60]}"
            assert json.loads(found.group(1)) == _default_value(name, defaults), name


def _default_value(name: str, values: dict[str, Any]) -> Any:
    field = WheelGateProps.model_fields[name]
    # Dumped through the model, as model_dump would write the default.
    probe = WheelGateProps.model_validate({**values, name: field.get_default()})
    return probe.model_dump(mode="json")[name]


def test_deploy_doc_example_app_builds_valid_props() -> None:
    # Given the example app of docs/deploy.md ("Your own CDK app")
    from tests.infra.synth import REPO_ROOT

    document = (REPO_ROOT / "docs" / "deploy.md").read_text()
    section = document.split("## Your own CDK app", 1)[1]
    (source,) = [
        block
        for block in re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
        if "WheelGateProps(" in block
    ]
    # When its WheelGateProps(...) call runs with the package's names (its imports, as
    # installed, are wheelgate.cdk: stacks here)
    tree = ast.parse(source)
    (call,) = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "WheelGateProps"
    ]
    import stacks

    (imported,) = [
        n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "wheelgate.cdk"
    ]
    names = {alias.name: getattr(stacks, alias.name) for alias in imported.names}
    props = eval(compile(ast.Expression(call), "deploy.md", "eval"), names)  # noqa: S307
    # Then it gives every required setting, and each is valid
    assert isinstance(props, WheelGateProps)
    assert props.github_repo == "my-org/my-project"
    assert {k.arg for k in call.keywords} >= {
        name for name, field in WheelGateProps.model_fields.items() if field.is_required()
    }


BREAK_GLASS = {
    "break_glass_role_arn": "arn:aws:iam::111122223333:role/break-glass",
    "break_glass_role_id": "AROABREAKGLASS0000001",
}


def test_import_sources_default_to_none_and_are_read() -> None:
    assert _config(import_sources=...).import_sources == ()
    config = _config(import_sources=["old-release-bucket/v2/", "older-bucket"], **BREAK_GLASS)
    assert [s.uri for s in config.import_locations] == [
        "s3://old-release-bucket/v2/",
        "s3://older-bucket/",
    ]


@pytest.mark.parametrize(
    ("sources", "message"),
    [
        (["Old_Bucket"], r"wheelgate\.import_sources: 'Old_Bucket' does not name an S3 bucket"),
        (["old-bucket/v2"], r"wheelgate\.import_sources: .*ending in '/'"),
        (["old-bucket/v2/*/"], r"wheelgate\.import_sources: .*without '\*'"),
        (["old-bucket/v2/../v1/"], r"wheelgate\.import_sources: .*has the segment '\.\.'"),
        (["old-bucket/v2//"], r"wheelgate\.import_sources: .*has an empty segment"),
        ("old-bucket", r"wheelgate\.import_sources must be a list"),
    ],
)
def test_bad_import_sources_are_refused_naming_the_key(sources: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _config(import_sources=sources, **BREAK_GLASS)


def test_import_sources_need_the_break_glass_role() -> None:
    with pytest.raises(ConfigError, match=r"import_sources is set without .*break_glass_role_arn"):
        _config(import_sources=["old-bucket/v2/"])
