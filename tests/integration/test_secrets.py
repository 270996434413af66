"""Secrets stay out of logs: the CLI and the promoter, with debug logging, against the local S3.

Fake AWS keys and a GitHub token are planted in the environment (they are the credentials the
CLI and the promoter sign with; moto accepts any), and a token is planted in a manifest field
(a test URL). Every process's stdout and stderr is captured; none may contain a planted value.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.installs import evidence, pip_report
from tests.integration.test_promoter import sqs_event
from wheelgate.core.redact import MASK
from wheelgate.local.names import LOCAL_REPORTER_PRINCIPAL
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.local.stack import LocalWheelGate

ACCESS_KEY_ID = "AKIAWGPLANTEDKEY0001"
SECRET_ACCESS_KEY = "wgPlantedSecretAccessKey/0123456789abcdefABCDEF"
SESSION_TOKEN = "wgPlantedSessionToken" + "Zx9" * 30
GITHUB_TOKEN = "ghp_" + "WGplantedGithubToken0123456789abcdef"[:36]
MANIFEST_TOKEN = "ghp_" + "WGplantedManifestToken0123456789abcd"[:36]
PLANTED = {
    "AWS_ACCESS_KEY_ID": ACCESS_KEY_ID,
    "AWS_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY,
    "AWS_SESSION_TOKEN": SESSION_TOKEN,
    "GITHUB_TOKEN": GITHUB_TOKEN,
}
SECRETS = [*PLANTED.values(), MANIFEST_TOKEN]
RUN_ID = "secrets-run"
INDEX = "t/secrets"
COMMIT = "5" * 40

#: Runs the promoter Lambda's handler on one event (argv[1]) with everything logged at DEBUG,
#: botocore included, against moto (with local mode's request fix-up, as ``wheelgate local``).
HANDLER_DRIVER = """
import json, logging, sys
logging.basicConfig(level=logging.DEBUG)
from wheelgate.local.stack import install_moto_compatibility
from wheelgate.lambda_function import handler
install_moto_compatibility()

class Context:
    function_name = "promoter-secrets"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:promoter-secrets"
    aws_request_id = "req"

print(json.dumps(handler.lambda_handler(json.loads(sys.argv[1]), Context())))
"""


def planted_env(stack: LocalWheelGate) -> dict[str, str]:
    return {
        **os.environ,
        **stack.env,
        **PLANTED,
        "POWERTOOLS_LOG_LEVEL": "DEBUG",
        "POWERTOOLS_TRACE_DISABLED": "true",
    }


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def leaked(output: str) -> list[str]:
    return [secret for secret in SECRETS if secret in output]


def test_botocore_debug_log_would_leak_the_access_key_id(stack: LocalWheelGate) -> None:
    # The risk is real: without the filter botocore's debug log names the access key id (in
    # the Authorization header) and the session token, so the checks below can fail.
    script = (
        "import logging, boto3; logging.basicConfig(level=logging.DEBUG); "
        "boto3.client('s3').list_buckets()"
    )
    result = run(planted_env(stack), "-c", script)
    assert result.returncode == 0, result.stderr[-2000:]
    assert ACCESS_KEY_ID in result.stderr
    assert SESSION_TOKEN in result.stderr


def test_cli_and_promoter_debug_output_contains_no_secret(
    stack: LocalWheelGate, venv_factory: Any, tmp_path: Path
) -> None:
    env = planted_env(stack)
    wheel = build_wheel(tmp_path, "secretive", "1.0")
    outputs: dict[str, subprocess.CompletedProcess[str]] = {}
    # Given a run staged and reported through the CLI with debug logging on
    outputs["stage"] = run(
        env,
        *("-m", "wheelgate", "--debug", "stage", "--run-id", RUN_ID, "--index", INDEX),
        *("--commit", COMMIT, str(wheel)),
    )
    assert outputs["stage"].returncode == 0, outputs["stage"].stderr[-1500:]
    # (its test job installs it from the run's index with pip's report)
    report = pip_report(venv_factory, json.loads(outputs["stage"].stdout)["index_url"], [wheel])
    test_spec = f"{INDEX}:smoke=passed@https://github.com/log?ref={MANIFEST_TOKEN}"
    outputs["report"] = run(
        env,
        *("-m", "wheelgate", "--debug", "report", "--run-id", RUN_ID, "--commit", COMMIT),
        *("--test", test_spec, *evidence(INDEX, report)),
    )
    # When the promoter handler runs on its manifest event with DEBUG logs everywhere
    event = sqs_event(f"manifests/{RUN_ID}.json", LOCAL_REPORTER_PRINCIPAL)
    outputs["promoter"] = run(env, "-c", HANDLER_DRIVER, json.dumps(event))
    outputs["status"] = run(env, "-m", "wheelgate", "--debug", "status", RUN_ID)
    for name, result in outputs.items():
        assert result.returncode == 0, (name, result.stdout[-1500:], result.stderr[-1500:])
    # Then debug output was produced (botocore's request log, signed requests) ...
    everything = "\n".join(r.stdout + r.stderr for r in outputs.values())
    for name in ("stage", "report", "status", "promoter"):
        assert "botocore" in outputs[name].stderr, f"{name} logged nothing at DEBUG"
    assert "Authorization" in everything
    assert MASK in everything
    assert json.loads(outputs["promoter"].stdout.splitlines()[-1]) == {"batchItemFailures": []}
    assert '"state": "promoted"' in outputs["status"].stdout
    # ... and not one planted secret appears in any of it
    assert {name: leaked(r.stdout + r.stderr) for name, r in outputs.items()} == {
        name: [] for name in outputs
    }


def test_manifest_token_is_not_echoed_by_the_cli(stack: LocalWheelGate) -> None:
    # A dry-run report prints the manifest itself: the URL's token is masked there too.
    result = run(
        planted_env(stack),
        *("-m", "wheelgate", "report", "--dry-run", "--run-id", RUN_ID, "--commit", COMMIT),
        "--test",
        f"{INDEX}:smoke=passed@https://github.com/log?ref={MANIFEST_TOKEN}",
    )
    if result.returncode != 0:
        pytest.fail(result.stderr)
    assert "https://github.com/log?ref=" + MASK in result.stdout
    assert leaked(result.stdout + result.stderr) == []


def test_a_test_url_carrying_a_credential_is_refused_without_echoing_it(
    stack: LocalWheelGate,
) -> None:
    # A credential-named parameter never reaches a manifest: report refuses it, masked.
    result = run(
        planted_env(stack),
        *("-m", "wheelgate", "report", "--dry-run", "--run-id", RUN_ID, "--commit", COMMIT),
        "--test",
        f"{INDEX}:smoke=passed@https://github.com/log?token={MANIFEST_TOKEN}",
    )
    assert result.returncode == 2, result.stdout
    assert "carries the query parameter 'token'" in result.stderr
    assert result.stdout == ""
    assert leaked(result.stdout + result.stderr) == []
