"""Promoter wiring: S3 notification -> queue (DLQ, redrive) -> Lambda, and its alarms."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from app import LAYER_DIR
from stacks.context import props_from_context
from stacks.lambda_asset import asset_files, handler_module
from stacks.promoter_function import (
    HANDLER,
    MAX_CONCURRENCY,
    MAX_RECEIVE_COUNT,
    PROMOTER_DATA,
    promoter_files,
)
from stacks.wheelgate import WheelGate, package_code_dir
from tests.infra.resolve import Resolver
from tests.infra.synth import STACK_NAME, Synthesis, asset_dir, cdk_json_context
from wheelgate.core.env_names import (
    ENV_ALLOW_NEW_LOCAL_LABELS,
    ENV_ALLOWED_INDEXES,
    ENV_BLOCK_ALL_ON_FAILURE,
    ENV_BREAK_GLASS_ID,
    ENV_LISTING_RETENTION,
    ENV_NIGHTLY_BASE_URL,
    ENV_REQUIRED_TESTS,
    ENV_RUN_EXPIRY_DAYS,
    ENV_TEST_URL_HOSTS,
    ENV_TRUSTED_REPORTER_ID,
)
from wheelgate.core.errors import INTEGRITY_REASONS, Reason
from wheelgate.core.layout import STAGING
from wheelgate.core.limits import LEASE_BUSY_RETRY_SECONDS, LEASE_SECONDS
from wheelgate.core.metrics import (
    METRIC_INTEGRITY_REJECTIONS,
    METRIC_PROMOTION_ERRORS,
    METRIC_PROMOTIONS_REJECTED,
    METRIC_REJECTIONS_BY_REASON,
    METRIC_SETTINGS_ERRORS,
    METRICS_NAMESPACE,
    SERVICE_NAME,
)
from wheelgate.core.setting_values import ListingRetention, RetentionRule
from wheelgate.core.settings import PromoterSettings, listing_retention_from_env

CODE_DIR = package_code_dir()


def _function(template_json: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    functions = {
        lid: r
        for lid, r in Resolver(template_json).of_type("AWS::Lambda::Function").items()
        if r["Properties"].get("Handler") == HANDLER
    }
    ((logical_id, function),) = functions.items()
    return logical_id, function["Properties"]


def test_function_runtime_and_sizing(template: Template) -> None:
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "wheelgate.lambda_function.handler.lambda_handler",
            "Runtime": "python3.13",
            "Architectures": ["arm64"],
            "Timeout": 900,
            "MemorySize": 1024,
            "TracingConfig": {"Mode": "Active"},
            "Layers": [{"Ref": Match.string_like_regexp("^PromoterDependencies")}],
        },
    )


def test_no_reserved_concurrency(template_json: dict[str, Any]) -> None:
    # Throttled receives of an SQS event source count towards maxReceiveCount: the mapping's
    # maximum concurrency limits promotions instead.
    _, props = _function(template_json)
    assert "ReservedConcurrentExecutions" not in props


def test_function_environment_uses_the_settings_contract(template_json: dict[str, Any]) -> None:
    _, props = _function(template_json)
    env = Resolver(template_json).resolve(props["Environment"]["Variables"])
    # Every setting but the break-glass id (no such role in cdk.json), as the model writes it,
    # and the staging lifecycle's run expiry, which the history's expiry dates come from.
    settings = {*PromoterSettings.env_names()} - {ENV_BREAK_GLASS_ID}
    assert set(env) == {
        *settings,
        ENV_RUN_EXPIRY_DAYS,
        "POWERTOOLS_SERVICE_NAME",
        "POWERTOOLS_METRICS_NAMESPACE",
    }
    # What were tokens at synthesis is checked as the promoter reads it at cold start.
    promoter_env = {name: value for name, value in env.items() if name in settings}
    assert PromoterSettings.from_env(promoter_env).to_env() == promoter_env
    assert env["POWERTOOLS_SERVICE_NAME"] == SERVICE_NAME
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == METRICS_NAMESPACE
    assert env[ENV_TRUSTED_REPORTER_ID] == "AROAREPORTER"
    assert env[ENV_NIGHTLY_BASE_URL] == "https://ENIGHTLY.example.net/"
    # The status pages link each directory's run history on the staging distribution.
    assert env["WHEELGATE_STAGING_BASE_URL"] == "https://ESTAGING.example.net/"
    assert json.loads(env[ENV_REQUIRED_TESTS])["v2/gfx94X-dcgpu"] == ["smoke", "pytorch-unit"]
    assert "v2/gfx120X-all" in json.loads(env[ENV_ALLOWED_INDEXES])
    assert env["WHEELGATE_STAGING_BUCKET"] == "wheelgate-staging"
    assert env["WHEELGATE_NIGHTLY_BUCKET"] == "wheelgate-nightly"
    assert env["WHEELGATE_NIGHTLY_DISTRIBUTION_ID"] == "ENIGHTLY"
    assert "WHEELGATE_STAGING_DISTRIBUTION_ID" not in env
    # No break-glass role in cdk.json: unset, so the promoter refuses every override request.
    assert ENV_BREAK_GLASS_ID not in env
    assert env[ENV_BLOCK_ALL_ON_FAILURE] == "true"
    hosts = cdk_json_context()["wheelgate"]["test_url_hosts"]
    assert json.loads(env[ENV_TEST_URL_HOSTS]) == sorted(hosts)
    # Listing retention as cdk.json states it, in the shape the promoter parses.
    retention = listing_retention_from_env(env)
    assert retention == ListingRetention.from_value(
        cdk_json_context()["wheelgate"]["listing_retention"], name="listing_retention"
    )
    assert retention.rule_for("v2/gfx94X-dcgpu") == RetentionRule(keep_versions=30)
    assert json.loads(env[ENV_LISTING_RETENTION])["indexes"] == {}
    # cdk.json allows no new local labels: the promoter reads false
    assert json.loads(env[ENV_ALLOW_NEW_LOCAL_LABELS]) is False
    # The days of the staging lifecycle's rule for runs/, as cdk.json states them
    assert env[ENV_RUN_EXPIRY_DAYS] == str(
        cdk_json_context()["wheelgate"]["staging_run_expiry_days"]
    )


@pytest.mark.slow
def test_the_promoter_is_told_the_run_expiry_the_lifecycle_applies(tmp_path: Path) -> None:
    from tests.infra.synth import synthesize

    # Given a deployment that keeps staged runs 30 days
    config = {**cdk_json_context()["wheelgate"], "staging_run_expiry_days": 30}
    template_json = synthesize(tmp_path, config).template
    # Then the promoter's WHEELGATE_RUN_EXPIRY_DAYS and the rule expiring runs/ say the same
    _, props = _function(template_json)
    env = Resolver(template_json).resolve(props["Environment"]["Variables"])
    staging = template_json["Resources"][Resolver(template_json).logical_id("wheelgate-staging")]
    rules = staging["Properties"]["LifecycleConfiguration"]["Rules"]
    (runs_rule,) = [rule for rule in rules if rule["Id"] == "ExpireStagedRuns"]
    assert env[ENV_RUN_EXPIRY_DAYS] == str(runs_rule["ExpirationInDays"]) == "30"


def test_outputs_for_ci(template_json: dict[str, Any]) -> None:
    outputs = {
        name: Resolver(template_json).resolve(o["Value"])
        for name, o in template_json["Outputs"].items()
    }
    assert outputs["StagingIndexUrl"] == "https://ESTAGING.example.net/"
    assert outputs["NightlyIndexUrl"] == "https://ENIGHTLY.example.net/"
    assert outputs["CacheBucketName"] == "wheelgate-cache"
    assert outputs["DepsRoleArn"].endswith(":role/deps")
    # What CI puts in WHEELGATE_ALLOWED_INDEXES: the list the promoter is given.
    _, props = _function(template_json)
    env = Resolver(template_json).resolve(props["Environment"]["Variables"])
    assert outputs["AllowedIndexes"] == env[ENV_ALLOWED_INDEXES]
    assert outputs["TestUrlHosts"] == env[ENV_TEST_URL_HOSTS]
    index_dirs = cdk_json_context()["wheelgate"]["index_dirs"]
    assert json.loads(outputs["AllowedIndexes"]) == sorted(index_dirs)


def test_queue_visibility_covers_six_function_timeouts_and_redrives(
    template_json: dict[str, Any],
) -> None:
    _, function = _function(template_json)
    resolver = Resolver(template_json)
    queues = resolver.of_type("AWS::SQS::Queue")
    main = [q["Properties"] for q in queues.values() if "RedrivePolicy" in q["Properties"]]
    assert len(main) == 1
    assert main[0]["VisibilityTimeout"] >= 6 * function["Timeout"]
    assert main[0]["SqsManagedSseEnabled"] is True
    dlq_id = main[0]["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
    # A busy directory's message comes back every LEASE_BUSY_RETRY_SECONDS: the receives
    # before the DLQ outlast the longest lease, with five more for other failures.
    receives = main[0]["RedrivePolicy"]["maxReceiveCount"]
    assert (receives - 5) * LEASE_BUSY_RETRY_SECONDS >= LEASE_SECONDS
    assert receives == MAX_RECEIVE_COUNT
    assert queues[dlq_id]["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600


def test_event_source_reports_batch_item_failures(template_json: dict[str, Any]) -> None:
    function_id, _ = _function(template_json)
    (mapping,) = Resolver(template_json).of_type("AWS::Lambda::EventSourceMapping").values()
    props = mapping["Properties"]
    assert props["FunctionName"] == {"Ref": function_id}
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert props["BatchSize"] == 1
    assert props["ScalingConfig"] == {"MaximumConcurrency": MAX_CONCURRENCY}
    assert MAX_CONCURRENCY >= 2  # the least AWS accepts
    queue_id = props["EventSourceArn"]["Fn::GetAtt"][0]
    assert "RedrivePolicy" in template_json["Resources"][queue_id]["Properties"]


def test_promoter_may_shorten_a_message_visibility(template_json: dict[str, Any]) -> None:
    # The handler retries a busy directory's message sooner with ChangeMessageVisibility.
    resolver = Resolver(template_json)
    (mapping,) = resolver.of_type("AWS::Lambda::EventSourceMapping").values()
    queue_id = mapping["Properties"]["EventSourceArn"]["Fn::GetAtt"][0]
    statements = [s for doc in resolver.role_policies("promoter") for s in doc["Statement"]]
    granted = [
        s["Resource"]
        for s in statements
        if s["Effect"] == "Allow" and "sqs:ChangeMessageVisibility" in s["Action"]
    ]
    assert granted == [resolver.resolve({"Fn::GetAtt": [queue_id, "Arn"]})]


def test_staging_notifies_the_queue_of_manifests_and_history_entries_only(
    template_json: dict[str, Any],
) -> None:
    resolver = Resolver(template_json)
    (notification,) = resolver.of_type("Custom::S3BucketNotifications").values()
    props = notification["Properties"]
    assert props["BucketName"] == {"Ref": resolver.logical_id("wheelgate-staging")}
    configs = props["NotificationConfiguration"]["QueueConfigurations"]
    # Both to the queue the promoter consumes
    (mapping,) = resolver.of_type("AWS::Lambda::EventSourceMapping").values()
    assert {json.dumps(c["QueueArn"]) for c in configs} == {
        json.dumps(mapping["Properties"]["EventSourceArn"])
    }
    assert all(c["Events"] == ["s3:ObjectCreated:*"] for c in configs)
    filters = sorted(
        tuple(sorted((r["Name"], r["Value"]) for r in c["Filter"]["Key"]["FilterRules"]))
        for c in configs
    )
    # A stage call's entry (StagingLayout.history_entry) is folded into the history as it is
    # written; a run page, a staged file, the history's own shards and head are not events.
    entry = STAGING.history_entry("v2/gfx94X-dcgpu", "12345-1", "1-0123abcd")
    assert entry.startswith("history/_entries/")
    assert entry.endswith(".json")
    assert filters == [
        (("prefix", "history/_entries/"), ("suffix", ".json")),
        (("prefix", "manifests/"), ("suffix", ".json")),
    ]


def test_log_group_has_retention(template: Template) -> None:
    template.has_resource_properties("AWS::Logs::LogGroup", {"RetentionInDays": 90})


def test_alarms_on_dlq_errors_and_integrity_rejections(template: Template) -> None:
    alarm_topic = {"Ref": Match.string_like_regexp("^MonitoringAlarmTopic")}
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": METRICS_NAMESPACE,
            "MetricName": METRIC_INTEGRITY_REJECTIONS,
            "Dimensions": [{"Name": "service", "Value": SERVICE_NAME}],
            "AlarmActions": [alarm_topic],
            "AlarmDescription": Match.string_like_regexp(
                ".*".join(sorted(r.value for r in INTEGRITY_REASONS))
            ),
        },
    )
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": METRICS_NAMESPACE,
            "MetricName": METRIC_PROMOTION_ERRORS,
            "Dimensions": [{"Name": "service", "Value": SERVICE_NAME}],
            "AlarmActions": [alarm_topic],
        },
    )
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {"Namespace": "AWS/Lambda", "MetricName": "Errors", "AlarmActions": [alarm_topic]},
    )
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/SQS",
            "MetricName": "ApproximateNumberOfMessagesVisible",
            "Threshold": 1,
            "AlarmActions": [alarm_topic],
        },
    )
    template.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": Match.any_value()})
    # No alarm_email in cdk.json: no subscription.
    template.resource_count_is("AWS::SNS::Subscription", 0)


def test_a_promoter_without_its_settings_pages_at_once(template: Template) -> None:
    # Every message fails when a setting is missing: the alarm fires on the first, long before
    # a message has failed its way to the dead-letter queue.
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        Match.object_like(
            {
                "Namespace": METRICS_NAMESPACE,
                "MetricName": METRIC_SETTINGS_ERRORS,
                "Dimensions": [{"Name": "service", "Value": SERVICE_NAME}],
                "Statistic": "Sum",
                "Period": 300,
                "Threshold": 1,
                "EvaluationPeriods": 1,
                "ComparisonOperator": "GreaterThanOrEqualToThreshold",
                "TreatMissingData": "notBreaching",
                "AlarmActions": [{"Ref": Match.string_like_regexp("^MonitoringAlarmTopic")}],
                "AlarmDescription": Match.string_like_regexp("settings are missing or bad"),
            }
        ),
    )


def test_routine_rejections_page_nobody(template_json: dict[str, Any]) -> None:
    # Every rejection counts in PromotionsRejected (tests-failed included): on the dashboard
    # only. No alarm watches it, nor the by-reason counts.
    alarmed = {
        alarm["Properties"].get("MetricName")
        for alarm in Resolver(template_json).of_type("AWS::CloudWatch::Alarm").values()
    }
    assert METRIC_INTEGRITY_REJECTIONS in alarmed
    assert not alarmed & {METRIC_PROMOTIONS_REJECTED, METRIC_REJECTIONS_BY_REASON}
    assert Reason.TESTS_FAILED not in INTEGRITY_REASONS


def test_handler_named_by_the_stack_exists_in_the_code_asset() -> None:
    function = HANDLER.rpartition(".")[2]
    path = CODE_DIR.joinpath(*handler_module(HANDLER).split(".")).with_suffix(".py")
    tree = ast.parse(path.read_text())
    # Decorated functions are still plain (async) function definitions at module level.
    names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert function in names, f"{path} defines no {function}()"


# Code the promoter never imports: the CLI, local mode, deps mirroring, staging, index rebuild.
NON_RUNTIME = (
    "wheelgate/cli/",
    "wheelgate/local/",
    "wheelgate/deps/",
    "wheelgate/staging/",
    "wheelgate/index/rebuild.py",
)


def _files(directory: Path) -> list[str]:
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())


def test_function_asset_holds_only_what_the_handler_imports_and_its_data(
    synthesis: Synthesis,
) -> None:
    _, props = _function(synthesis.template)
    files = _files(asset_dir(synthesis.outdir, STACK_NAME, props["Code"]["S3Key"]))
    assert "wheelgate/lambda_function/handler.py" in files
    assert "wheelgate/promotion/service.py" in files
    leaked = [
        f
        for f in files
        if f.startswith(NON_RUNTIME) or f.endswith(("__main__.py", ".pyc", "py.typed"))
    ]
    assert leaked == []
    # Exactly the import closure and the promoter's package data (the status templates): CDK's
    # exclude patterns drop __pycache__ and the egg-info too.
    code = asset_files(CODE_DIR, handler_module(HANDLER))
    assert set(code) < set(files)
    assert files == list(promoter_files(CODE_DIR))
    assert [f for f in files if f not in code and not f.startswith(PROMOTER_DATA)] == []


def test_function_asset_holds_the_page_templates_and_renders_from_them(
    synthesis: Synthesis, tmp_path: Path
) -> None:
    # Given the function's asset as synthesized
    _, props = _function(synthesis.template)
    folder = asset_dir(synthesis.outdir, STACK_NAME, props["Code"]["S3Key"])
    # Then it holds every template of the status and history pages, byte for byte (CSS included)
    expected = {
        "status": {"base.html", "overview.html", "directory.html", "status.css"},
        "history": {"history.html", "run.html", "history.css"},
    }
    for package, required in expected.items():
        templates = CODE_DIR / "wheelgate" / package / "templates"
        names = sorted(p.name for p in templates.iterdir() if p.is_file())
        assert required <= set(names)
        bundled = folder / "wheelgate" / package / "templates"
        assert sorted(p.name for p in bundled.iterdir()) == names
        assert all((bundled / n).read_bytes() == (templates / n).read_bytes() for n in names)
    # And the asset alone renders the status and history pages: its own package, with the
    # layer's Jinja2
    # (here the dev venv's, which requirements.txt pins to the layer's version)
    script = (
        "import wheelgate\n"
        "from wheelgate.status.pages import render_directory, render_overview\n"
        "from wheelgate.status.state import StatusState\n"
        "print(wheelgate.__file__)\n"
        "print(render_overview(StatusState()) + render_directory(StatusState(), 'a/b'))\n"
        "from datetime import UTC, datetime\n"
        "from wheelgate.history.page import render_history_page\n"
        "print(render_history_page([], index='a/b', nightly_base_url='https://n/', "
        "now=datetime.now(UTC)))\n"
    )
    # -I: no PYTHONPATH, no current folder (the checkout's lambdas/ stays out); -B: the
    # synthesized asset gains no __pycache__.
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-B",
            "-c",
            f"import sys; sys.path[:0] = [{str(folder)!r}]\n{script}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    where, _, html = done.stdout.partition("\n")
    assert Path(where).is_relative_to(folder)
    assert "Nothing has been decided yet." in html
    assert "No run promoted yet." in html
    assert "--bad:" in html  # status.css, inlined
    assert "No run staged yet." in html  # the history page, from the history templates


def test_the_promoters_data_ships_in_the_distribution_too() -> None:
    # An app that installed WheelGate bundles its function from the installed package
    # (test_another_app.py): each data folder must be package data, every file of it.
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    package_data = pyproject["tool"]["setuptools"]["package-data"]
    for folder in PROMOTER_DATA:
        patterns = package_data[folder.replace("/", ".")]
        files = {p for p in (CODE_DIR / folder).iterdir() if p.is_file()}
        assert files == {p for pattern in patterns for p in (CODE_DIR / folder).glob(pattern)}


def test_only_runtime_edits_change_the_function_asset(synthesis: Synthesis, tmp_path: Path) -> None:
    # Given a copy of the code with the CLI edited, a CLI module added and an editor's swap file
    # (`*` alone does not match dot files), and a copy with the handler edited
    cli_edited = tmp_path / "cli-edited"
    shutil.copytree(CODE_DIR, cli_edited)
    with (cli_edited / "wheelgate" / "cli" / "main.py").open("a") as main:
        main.write("\n# A new CLI message.\n")
    (cli_edited / "wheelgate" / "cli" / "extra.py").write_text('"""A new CLI command."""\n')
    (cli_edited / "wheelgate" / "core" / ".layout.py.swp").write_bytes(b"\0swap")
    handler_edited = tmp_path / "handler-edited"
    shutil.copytree(CODE_DIR, handler_edited)
    with (handler_edited / "wheelgate" / "lambda_function" / "handler.py").open("a") as handler:
        handler.write("\n# A handler change.\n")

    # When both are synthesized (one app, no cdk-nag: only the asset hashes matter here)
    app = cdk.App(
        context=cdk_json_context(), outdir=str(tmp_path / "cdk.out"), analytics_reporting=False
    )
    props = props_from_context(app.node.get_all_context())
    code_dirs = {"CliEdited": cli_edited, "HandlerEdited": handler_edited}
    for name, code_dir in code_dirs.items():
        WheelGate(cdk.Stack(app, name), "Default", props, layer_dir=LAYER_DIR, code_dir=code_dir)
    assembly = app.synth()
    keys = {
        name: _function(assembly.get_stack_by_name(name).template)[1]["Code"]["S3Key"]
        for name in code_dirs
    }

    # Then the CLI edit keeps the deployed asset and the handler edit replaces it
    _, props = _function(synthesis.template)
    assert keys["CliEdited"] == props["Code"]["S3Key"]
    assert keys["HandlerEdited"] != props["Code"]["S3Key"]
