"""A run's pages never outlive its files: ``wheelgate stage`` tags them for their own, shorter
expiry and refuses to add to a run older than its window (against the moto server).

moto does not run lifecycle rules, so nothing here waits for an expiry: the rules are the
template's (tests/infra/test_storage.py) and the arithmetic is tests/unit/test_lifecycle.py's.
What these tests show is what stage does: the tag on every page it writes, and the refusal.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LocalProcess
from wheelgate.core.env_names import ENV_RUN_STAGE_WINDOW_DAYS
from wheelgate.core.layout import PAGES, RUN_PAGE_TAG_KEY, RUN_PAGE_TAG_VALUE, STAGING
from wheelgate.local.names import STAGING_BUCKET
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.staging.errors import StageError
from wheelgate.staging.local_artifacts import inspect_files
from wheelgate.staging.stage import stage
from wheelgate.storage.bucket import Bucket

INDEX = "v2/expiry"
COMMIT = "e" * 40


def _stage(
    buckets: tuple[Bucket, Bucket], run_id: str, wheel: Path, clock: Any, window_days: int = 1
) -> None:
    staging, nightly = buckets
    stage(
        staging=staging,
        nightly=nightly,
        nightly_base_url="http://nightly.invalid/",
        run_id=run_id,
        index=INDEX,
        commit=COMMIT,
        artifacts=inspect_files([wheel]),
        clock=clock,
        window_days=window_days,
    )


def _run_objects(staging: Bucket, run_id: str) -> dict[str, str]:
    return {o.key: o.etag for o in staging.list(STAGING.run_prefix(run_id))}


def _page(staging: Bucket, run_id: str, project: str) -> str:
    found = staging.get(
        STAGING.run_pages_prefix(run_id) + PAGES.project_page(INDEX, project, json=True)
    )
    assert found is not None
    return found[0].decode()


def test_every_run_page_carries_the_tag_of_its_expiry_rule(
    buckets: tuple[Bucket, Bucket], s3: Any, tmp_path: Path
) -> None:
    # Given a run staged by the real code
    run_id = "expiry-tags"
    _stage(buckets, run_id, build_wheel(tmp_path, "exp-tag", "1.0"), lambda: datetime.now(UTC))
    objects = _run_objects(buckets[0], run_id)
    pages = [k for k in objects if k.rsplit("/", 1)[1] in ("index.html", "index.json")]
    # Then each page (root and project, both formats) has the tag, and no staged file does
    assert len(pages) == 4, pages
    tag = [{"Key": RUN_PAGE_TAG_KEY, "Value": RUN_PAGE_TAG_VALUE}]
    for key in objects:
        tags = s3.get_object_tagging(Bucket=STAGING_BUCKET, Key=key)["TagSet"]
        assert tags == (tag if key in pages else []), key


def test_stage_refuses_a_run_older_than_its_window_and_writes_nothing(
    buckets: tuple[Bucket, Bucket], tmp_path: Path
) -> None:
    # Given a run whose first file was staged now, and a window of one day
    staging = buckets[0]
    run_id = "expiry-window"
    first, later = build_wheel(tmp_path, "exp-a", "1.0"), build_wheel(tmp_path, "exp-b", "1.0")
    _stage(buckets, run_id, first, lambda: datetime.now(UTC))
    before = _run_objects(staging, run_id)
    # When another job stages into it a day and a minute later
    late = datetime.now(UTC) + timedelta(days=1, minutes=1)
    with pytest.raises(StageError, match=rf"run {run_id} was first staged at .* more than 1 day"):
        _stage(buckets, run_id, later, lambda: late)
    # Then nothing was written: no file, no .metadata, no page changed
    assert _run_objects(staging, run_id) == before
    # But within the window the same job stages, and the page lists both files
    soon = datetime.now(UTC) + timedelta(hours=23)
    _stage(buckets, run_id, later, lambda: soon)
    assert first.name in _page(staging, run_id, "exp-a")
    assert later.name in _page(staging, run_id, "exp-b")


def test_a_window_that_closes_during_the_upload_leaves_the_pages_alone(
    buckets: tuple[Bucket, Bucket], tmp_path: Path
) -> None:
    # Given a run staged now, and a second job whose upload outlasts the window
    staging = buckets[0]
    run_id = "expiry-slow"
    first, slow = build_wheel(tmp_path, "exp-c", "1.0"), build_wheel(tmp_path, "exp-d", "1.0")
    _stage(buckets, run_id, first, lambda: datetime.now(UTC))
    moments = iter([datetime.now(UTC), datetime.now(UTC) + timedelta(days=2)])
    root_key = STAGING.run_pages_prefix(run_id) + PAGES.root_page(INDEX, json=True)
    root_before = staging.get(root_key)
    # When its pages would be written after the window closed
    with pytest.raises(StageError, match="files were uploaded, but the run's index pages were not"):
        _stage(buckets, run_id, slow, lambda: next(moments))
    # Then its file is staged, but no page names it
    assert STAGING.artifact(run_id, INDEX, slow.name) in _run_objects(staging, run_id)
    assert staging.get(root_key) == root_before
    project_page = STAGING.run_pages_prefix(run_id) + PAGES.project_page(INDEX, "exp-d", json=True)
    assert staging.get(project_page) is None


def test_the_cli_names_a_bad_window_and_stages_nothing(
    local: LocalProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a window that is not a number of days
    monkeypatch.setenv(ENV_RUN_STAGE_WINDOW_DAYS, "a week")
    wheel = build_wheel(tmp_path, "exp-cli", "1.0")
    # When wheelgate stage runs
    result = local.wheelgate(
        "stage", "--run-id", "expiry-cli", "--index", INDEX, "--commit", COMMIT, str(wheel)
    )
    # Then it exits 2 naming the variable, before anything is uploaded
    assert result.returncode == 2, result.stderr
    assert f"{ENV_RUN_STAGE_WINDOW_DAYS} must be a positive number of days" in result.stderr
    s3 = local.client("s3")
    listing = s3.list_objects_v2(Bucket=STAGING_BUCKET, Prefix="runs/expiry-cli/")
    assert listing.get("KeyCount", 0) == 0
    # And with the stack's window it stages, and says where
    monkeypatch.setenv(ENV_RUN_STAGE_WINDOW_DAYS, "6")
    result = local.wheelgate(
        "stage", "--run-id", "expiry-cli", "--index", INDEX, "--commit", COMMIT, str(wheel)
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["uploaded"] == [wheel.name]
