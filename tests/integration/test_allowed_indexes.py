"""Index directories come from configuration: `wheelgate report` refuses a run staged into a
directory the stack does not list; without a list, a directory nested in another is rejected
by the promoter, never left pending (real S3 API, moto server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_promoter import COMMIT, Run, nightly_versions, wheel
from wheelgate.cli.main import EXIT_USAGE, main
from wheelgate.core.env_names import (
    ENV_ALLOWED_INDEXES,
    ENV_TRUSTED_REPORTER_ID,
    ENV_VERDICT_KEY_ARN,
)
from wheelgate.core.setting_parsers import ANY_INDEX
from wheelgate.core.settings import PromoterSettings
from wheelgate.local.names import LOCAL_REPORTER_ID
from wheelgate.local.stack import LocalWheelGate
from wheelgate.staging.errors import StageError
from wheelgate.storage.bucket import Bucket


def test_report_refuses_a_run_staged_outside_the_configured_directories(
    buckets: tuple[Bucket, Bucket],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a run staged into a directory (with no allow-list, as in local mode)...
    run = Run(buckets, tmp_path, "allowed-report", "allowed/unlisted").stage(wheel(tmp_path))
    # When CI, configured with the stack's index_dirs, reports it...
    monkeypatch.setenv(ENV_ALLOWED_INDEXES, json.dumps(["allowed/listed"]))
    code = main(["report", "--run-id", run.run_id, "--commit", COMMIT,
                 f"--test={run.index}:smoke=passed"])  # fmt: skip
    # Then no manifest is written, and the error names the directory.
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert "index-not-allowed: run allowed-report has files staged in 'allowed/unlisted'" in err
    assert run.staging.get(f"manifests/{run.run_id}.json") is None


@pytest.mark.parametrize("outer_first", [True, False])
def test_without_an_allow_list_a_nested_directory_is_rejected_not_retried(
    buckets: tuple[Bucket, Bucket], tmp_path: Path, s3: Any, outer_first: bool
) -> None:
    # Given no allow-list (local mode), and a directory promoted whose pages sit where another
    # directory's would: "nest/inner" inside "nest", whose project "inner" has its page at
    # nest/inner/index.json, where "nest/inner" keeps its root page...
    outer = Run(buckets, tmp_path, f"nest-outer-{outer_first}", f"nest{outer_first:d}")
    inner = Run(buckets, tmp_path, f"nest-inner-{outer_first}", f"{outer.index}/inner")
    first, second = (outer, inner) if outer_first else (inner, outer)
    first.stage(wheel(tmp_path, "inner" if first is outer else "deep"))
    assert first.report(first.manifest())["state"] == "promoted"
    # When a build stages into the other directory, Then stage refuses, naming the page...
    later = wheel(tmp_path, "inner" if second is outer else "deep")
    with pytest.raises(StageError, match=r"is .* inside another index directory"):
        second.stage(later)
    # ...and when its files were staged anyway (without pages) and a manifest written...
    second.stage(later, pages=False)
    before = nightly_versions(s3)
    record = second.report(second.manifest([later]))  # asserts the message is done: no retry
    # Then it is decided on its first delivery: rejected, naming the page, nightly untouched.
    assert record["state"] == "rejected", record
    assert record["reason"] == "page-unreadable"
    assert f"{outer.index}/inner/index.json" in record["message"]
    assert record["attempts"] == 1
    assert nightly_versions(s3) == before


def test_local_mode_without_an_index_gives_the_explicit_any_directory_value(
    stack: LocalWheelGate,
) -> None:
    # Local mode's settings are explicit, as the stack's: its environment (the ready line's)
    # names any directory, its reporter and the key its KMS signs verdicts with.
    assert stack.env[ENV_ALLOWED_INDEXES] == ANY_INDEX
    assert stack.env[ENV_TRUSTED_REPORTER_ID] == LOCAL_REPORTER_ID
    assert stack.env[ENV_VERDICT_KEY_ARN] == stack.verdict_key_arn
    assert PromoterSettings.from_env(stack.env).allowed_indexes == frozenset()
