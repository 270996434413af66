"""Every option the manifest or the key layout constrains is checked when the command starts,
before any storage call, and a bad one is named on one line with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.samples import COMMIT, DEPS_FILELOCK, INDEX, SHA_A
from wheelgate.cli import common, deps
from wheelgate.cli.main import EXIT_USAGE, main
from wheelgate.core.env_names import ENV_ALLOWED_INDEXES, ENV_TEST_URL_HOSTS
from wheelgate.core.manifest import ManifestFile
from wheelgate.core.manifest_limits import MAX_FILES_PER_SET
from wheelgate.staging.manifest_building import build_manifest

WHEEL = "torch-2.7.0-py3-none-any.whl"
DEPS_YML = f"""\
schema: wheelgate/deps/v1
validation:
  hosts: [files.example.org]
  indexes: [v2/gfx94X-dcgpu]
  python_tags: [py3]
  platforms: [any]
{DEPS_FILELOCK}"""
#: What pydantic adds to its own messages, which users should never have to read.
PYDANTIC_BOILERPLATE = ("validation error for", "For further information visit", "input_value")


class StorageCalled(Exception):
    """Raised where a command would build its S3 client."""


@pytest.fixture(autouse=True)
def no_storage(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(args: object) -> None:
        raise StorageCalled

    monkeypatch.setattr(common, "s3_client", refuse)
    monkeypatch.setattr(deps, "s3_client", refuse)
    monkeypatch.delenv("GITHUB_SHA", raising=False)
    monkeypatch.delenv("WHEELGATE_STAGING_BASE_URL", raising=False)


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line a command prints when it refuses its options (exit 2)."""
    code = main(argv)
    captured = capsys.readouterr()
    assert code == EXIT_USAGE, captured
    assert captured.out == ""
    line = captured.err.rstrip("\n")
    assert "\n" not in line, line
    assert "Traceback" not in line
    assert not any(text in line for text in PYDANTIC_BOILERPLATE), line
    return line


def test_stage_refuses_a_short_commit(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["stage", "--run-id", "1", "--index", INDEX, "--commit", "abc123", WHEEL]
    assert refused(argv, capsys) == (
        "wheelgate stage: error: --commit 'abc123' is not a full 40-character hex commit SHA"
    )


def test_stage_names_github_sha_when_the_commit_came_from_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_SHA", "ABC" * 13 + "D")
    argv = ["stage", "--run-id", "1", "--index", INDEX, WHEEL]
    assert refused(argv, capsys) == (
        f"wheelgate stage: error: GITHUB_SHA {'ABC' * 13 + 'D'!r} is not a full 40-character "
        "hex commit SHA"
    )


def test_report_refuses_the_commit_stage_used_to_accept(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["report", "--run-id", "1", "--commit", "abc123"]
    assert refused(argv, capsys) == (
        "wheelgate report: error: --commit 'abc123' is not a full 40-character hex commit SHA"
    )


def test_report_takes_the_commit_from_github_sha(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    test = f"--test={INDEX}:smoke=passed"
    # Without --commit nor GITHUB_SHA, it is refused naming both...
    assert refused(["report", "--run-id", "1", test], capsys) == (
        "wheelgate report: error: --commit is required (or set GITHUB_SHA)"
    )
    # ...and with GITHUB_SHA set, as in GitHub Actions, it goes on to storage
    monkeypatch.setenv("GITHUB_SHA", COMMIT)
    with pytest.raises(StorageCalled):
        main(["report", "--run-id", "1", test])


def report(*tests: str) -> list[str]:
    return ["report", "--run-id", "1", "--commit", COMMIT, *(f"--test={t}" for t in tests)]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["stage", "--run-id", "../1", "--index", INDEX, "--commit", COMMIT, WHEEL],
         "wheelgate stage: error: --run-id: run id '../1' is not valid"),
        (["stage", "--run-id", "1", "--index", "runs/x", "--commit", COMMIT, WHEEL],
         "wheelgate stage: error: --index: index directory 'runs/x' starts with 'runs'"),
        (["report", "--run-id", "a/b", "--commit", COMMIT],
         "wheelgate report: error: --run-id: run id 'a/b' is not valid"),
        (report("v2"), "wheelgate report: error: --test: test 'v2' is not DIR:NAME="),
        (report("/v2:smoke=passed"),
         "wheelgate report: error: --test: index directory '/v2' must not start"),
        (report(f"{INDEX}:smoke test=passed"),
         "wheelgate report: error: --test: test name 'smoke test' must be letters"),
        (report(f"{INDEX}:smoke=ok"), "--test: test 'v2/gfx94X-dcgpu:smoke=ok': result must be"),
        (report(f"{INDEX}:smoke=passed@javascript:alert(1)"),
         "wheelgate report: error: --test: test URL 'javascript:alert(1)' is not an https URL"),
        (report(f"{INDEX}:smoke=passed@https://ci.example/" + "x" * 2048),
         "is not an https URL without spaces (at most 2048 characters)"),
        (report(f"{INDEX}:smoke=passed@http://ci.example/1"),
         "test URL 'http://ci.example/1' is not an https URL"),
        (report(f"{INDEX}:smoke=passed@https://ci:pw1234567@ci.example/1"),
         "test URL 'https://ci:****@ci.example/1' carries user information"),
        (report(f"{INDEX}:smoke=passed@https://ci.example/1?sig=abc123xyz"),
         "test URL 'https://ci.example/1?sig=****' carries the query parameter 'sig'"),
        (report(f"{INDEX}:smoke=passed@https://ci.example/1?X-Amz-Signature=abc123xyz"),
         "carries the query parameter 'X-Amz-Signature'"),
        (report(f"{INDEX}:smoke=passed@https://ci.example/1?Access_Token=abc123xyz"),
         "carries the query parameter 'Access_Token'"),
        (report(f"{INDEX}:smoke=passed@https://ci.example/r/eyJhbGciOiJI.eyJzdWIiOiIx.c2ln"),
         "test URL 'https://ci.example/r/****' carries a JSON Web Token"),
        (report(f"{INDEX}:smoke=passed", f"{INDEX}:smoke=failed"),
         f"wheelgate report: error: --test: test 'smoke' is listed twice in set '{INDEX}'"),
        (report(*(f"{INDEX}:t{n}=passed" for n in range(257))),
         f"wheelgate report: error: --test: set '{INDEX}' has 257 tests; at most 256"),
        ([*report(f"{INDEX}:smoke=passed"), "--installed", f"{INDEX}:smoke=/absent/r.json"],
         "wheelgate report: error: --installed: evidence /absent/r.json: no such file"),
        ([*report(f"{INDEX}:smoke=passed"), "--installed", f"{INDEX}:lint=/absent/r.json"],
         f"wheelgate report: error: --installed: '{INDEX}:lint=/absent/r.json' names test "
         f"'lint' of {INDEX}, which no --test gives"),
        ([*report(f"{INDEX}:smoke=passed"), "--installed", "r.json"],
         "wheelgate report: error: --installed: 'r.json' is not DIR:NAME=PATH"),
        (["pins", "--run-id", "1", "--index", "v2//x"],
         "wheelgate pins: error: --index: index directory 'v2//x' has an invalid segment ''"),
        (["pins", "--run-id", "..", "--index", INDEX],
         "wheelgate pins: error: --run-id: run id '..' is not valid"),
        (["pins", "--run-id", "1", "--index", INDEX],
         "wheelgate pins: error: --staging-url is required (or set WHEELGATE_STAGING_BASE_URL)"),
        (["pins", "--run-id", "1", "--index", INDEX, "--staging-url", "https://s/",
          "--python-version", "3.12 --index-url=x"],
         "wheelgate pins: error: --python-version: '3.12 --index-url=x' is not a Python version"),
        (["pins", "--run-id", "1", "--index", INDEX, "--staging-url", "https://s/",
          "--platform=--extra-index-url=https://x"],
         "wheelgate pins: error: --platform: '--extra-index-url=https://x' is not a platform"),
        (["status", "x y"], "wheelgate status: error: RUN_ID: run id 'x y' is not valid"),
        (["status", "1", "--manifest-sha256", "ABC"],
         "wheelgate status: error: --manifest-sha256: 'ABC' is not a SHA-256 (64 lowercase hex"),
        (["yank", "--index", "..", WHEEL, "--reason", "broken"],
         "wheelgate yank: error: --index: index directory '..' has an invalid segment"),
        (["yank", "--index", INDEX, "torch.whl", "--reason", "broken"],
         "wheelgate yank: error: FILE: 'torch.whl' is not a valid distribution file name"),
        (["yank", "--index", INDEX, WHEEL, "--reason", "r" * 501],
         "wheelgate yank: error: --reason: String should have at most 500 characters"),
        (["unyank", "--index", INDEX, "a/torch-2.7.0-py3-none-any.whl"],
         "wheelgate unyank: error: FILE: file name 'a/torch-2.7.0-py3-none-any.whl' is not"),
        (["promote", "--run-id", "a b", "--override", "--reason", "the runner was down"],
         "wheelgate promote: error: --run-id: run id 'a b' is not valid"),
        (["promote", "--run-id", "yank-20261130T040000Z-ab", "--override", "--reason", "r" * 12],
         "wheelgate promote: error: --run-id: 'yank-20261130T040000Z-ab' is a request, not a run"),
        (["promote", "--run-id", "1", "--override", "--reason", "r" * 1001],
         "wheelgate promote: error: --reason: String should have at most 1000 characters"),
        (["local", "--listing-retention", "{keep_versions: 2}"],
         "wheelgate local: error: --listing-retention is not JSON: Expecting property name"),
        (["local", "--listing-retention", '{"default": {"keep_versions": 0}}'],
         "wheelgate local: error: --listing-retention.default.keep_versions is 0; use a "
         "positive integer"),
        (["local", "--index", INDEX, "--listing-retention",
          '{"indexes": {"v2/other": {"keep_days": 7}}}'],
         "wheelgate local: error: --listing-retention names 'v2/other', which is not one of "
         f"the --index directories ({INDEX})"),
        (["index", "rebuild", "--index", "status/x"],
         "wheelgate index: error: --index: index directory 'status/x' starts with 'status'"),
        (["stage", "--run-id", "import-0123456789abcdef", "--index", INDEX, "--commit", COMMIT,
          WHEEL], "wheelgate stage: error: --run-id: run id 'import-0123456789abcdef' starts "
         "with import-, which only requests to the promoter take"),
        (["promote", "--run-id", "import-0123456789abcdef", "--override", "--reason", "r" * 12],
         "wheelgate promote: error: --run-id: 'import-0123456789abcdef' is a request, not a run"),
        (["import", "--from", "old-bucket/v2/x/", "--index", INDEX],
         "wheelgate import: error: --from: 'old-bucket/v2/x/' is not an s3://bucket/prefix/ URI"),
        (["import", "--from", "s3://Old_Bucket/v2/", "--index", INDEX],
         "wheelgate import: error: --from: 's3://Old_Bucket/v2/' does not name an S3 bucket"),
        (["import", "--from", "s3://old-bucket/v2/x", "--index", INDEX],
         "wheelgate import: error: --from: 's3://old-bucket/v2/x': the key prefix 'v2/x' must be"),
        (["import", "--from", "s3://old-bucket/v2/", "--index", "runs/x"],
         "wheelgate import: error: --index: index directory 'runs/x' starts with 'runs'"),
        (["import", "--from", "s3://old-bucket/v2/", "--index", INDEX, "--since", "last week"],
         "wheelgate import: error: --since: 'last week' is not a date (2025-01-31) or an ISO"),
    ],
)  # fmt: skip
def test_bad_options_are_named_on_one_line_before_any_storage_call(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert expected in refused(argv, capsys)


OTHER = "v2/gfx950-dcgpu"


@pytest.mark.parametrize(
    "argv",
    [
        ["stage", "--run-id", "1", "--index", OTHER, "--commit", COMMIT, WHEEL],
        ["pins", "--run-id", "1", "--index", OTHER],
        ["yank", "--index", OTHER, WHEEL, "--reason", "broken"],
        ["index", "rebuild", "--index", OTHER],
    ],
)
def test_an_index_directory_not_configured_is_refused(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the stack's index_dirs in the environment, as CI sets them...
    monkeypatch.setenv(ENV_ALLOWED_INDEXES, json.dumps([INDEX]))
    # ...a command for another directory is refused before any storage call.
    line = refused(argv, capsys)
    assert f"index-not-allowed: --index '{OTHER}' is not a configured index directory" in line
    assert INDEX in line


def test_import_refuses_a_source_outside_the_stacks_import_sources(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the stack's import_sources in the environment (the ImportSources output)...
    monkeypatch.setenv("WHEELGATE_IMPORT_SOURCES", json.dumps(["old-bucket/v2/"]))
    # ...a source elsewhere is refused before any storage call, as the promoter would.
    line = refused(["import", "--from", "s3://old-bucket/v1/x/", "--index", INDEX], capsys)
    assert "import-source-not-allowed: s3://old-bucket/v1/x/ is not under an import source" in line
    monkeypatch.setenv("WHEELGATE_IMPORT_SOURCES", "[")
    assert "WHEELGATE_IMPORT_SOURCES is not valid JSON" in refused(
        ["import", "--from", "s3://old-bucket/v2/x/", "--index", INDEX], capsys
    )


@pytest.mark.parametrize(
    ("source", "named"),
    [
        ("s3://old-bucket/v2/../v1/x/", "has the segment '..'"),
        ("s3://old-bucket/v2/./x/", "has the segment '.'"),
        ("s3://old-bucket/v2//x/", "has an empty segment"),
    ],
)
@pytest.mark.parametrize("allow_list", [True, False])
def test_import_refuses_a_source_with_a_dot_or_empty_segment(
    source: str,
    named: str,
    allow_list: bool,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a source whose text starts with an import_sources entry (or none configured)...
    if allow_list:
        monkeypatch.setenv("WHEELGATE_IMPORT_SOURCES", json.dumps(["old-bucket/v2/"]))
    # ...it is bad input, the segment named, before any storage call (dry run or not).
    for extra in ([], ["--dry-run"]):
        line = refused(["import", "--from", source, "--index", INDEX, *extra], capsys)
        assert line.startswith(f"wheelgate import: error: --from: {source!r}: "), line
        assert named in line


def test_report_refuses_a_test_url_on_another_host(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Unset, test URLs must be on github.com, as for the promoter.
    argv = report(f"{INDEX}:smoke=passed@https://ci.example.org/runs/1")
    line = refused(argv, capsys)
    assert "test URL 'https://ci.example.org/runs/1' is not on an allowed host (github.com)" in line
    # Configured (the stack's TestUrlHosts output), the command goes on to storage.
    monkeypatch.setenv(ENV_TEST_URL_HOSTS, json.dumps(["ci.example.org"]))
    with pytest.raises(StorageCalled):
        main(argv)


def test_deps_refuses_an_index_directory_not_configured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    deps_yml = tmp_path / "deps.yml"
    deps_yml.write_text(DEPS_YML)
    monkeypatch.setenv(ENV_ALLOWED_INDEXES, json.dumps([OTHER]))
    line = refused(["deps", "check", str(deps_yml)], capsys)
    assert f"index-not-allowed: {deps_yml} mirrors wheels into '{INDEX}'" in line
    monkeypatch.setenv(ENV_ALLOWED_INDEXES, json.dumps([INDEX, OTHER]))
    assert main(["deps", "check", str(deps_yml)]) == 0


def test_a_nested_allow_list_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_ALLOWED_INDEXES, json.dumps(["v2", INDEX]))
    line = refused(["pins", "--run-id", "1", "--index", INDEX], capsys)
    assert "may not nest" in line


REVIEW_URL = "https://github.com/ROCm/TheRock/pull/1"


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--commit", "abc123"],
         "wheelgate deps: error: --commit 'abc123' is not a full 40-character hex commit SHA"),
        ([], "wheelgate deps: error: --commit is required (or set GITHUB_SHA)"),
        (["--commit", COMMIT, "--review-url", "ftp://review.example/1"],
         "wheelgate deps: error: --review-url: test URL 'ftp://review.example/1' is not an "
         "https URL"),
        (["--commit", COMMIT, "--review-url", REVIEW_URL, "--step", "report"],
         "wheelgate deps: error: --step report needs --run-id"),
        (["--commit", COMMIT, "--review-url", REVIEW_URL, "--step", "report",
          "--run-id", "deps-000000000000"],
         "wheelgate deps: error: --run-id: 'deps-000000000000' is not a mirror run of this "
         "deps.yml"),
    ],
)  # fmt: skip
def test_deps_sync_checks_the_commit_and_review_url_like_the_manifest(
    options: list[str], expected: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    deps_yml = tmp_path / "deps.yml"
    deps_yml.write_text(DEPS_YML)
    assert refused(["deps", "sync", str(deps_yml), *options], capsys).startswith(expected)


def test_good_options_pass_the_checks_and_reach_storage(tmp_path: Path) -> None:
    pins = tmp_path / "pins.txt"
    pins.write_text(f"torch==2.7.0 --hash=sha256:{SHA_A}\n")
    with pytest.raises(StorageCalled):
        main(
            [
                *report(
                    f"{INDEX}:pytorch:smoke=passed@https://github.com/o/r/actions/runs/1?job=2"
                ),
                f"--test={INDEX}:other=skipped",
                "--test=v2/gfx950-dcgpu:smoke=failed",
                f"--installed={INDEX}:pytorch:smoke={pins}",
            ]
        )


def test_a_staged_set_the_manifest_cannot_hold_is_one_line() -> None:
    files = [
        ManifestFile(filename=f"torch-2.7.0+{n}-py3-none-any.whl", sha256=SHA_A, size=1)
        for n in range(MAX_FILES_PER_SET + 1)
    ]
    with pytest.raises(ValueError, match=r"set 'v2/gfx94X-dcgpu': files: .* at most 5000") as bad:
        build_manifest(run_id="1", commit=COMMIT, staged={INDEX: files}, tests=[])
    assert "\n" not in str(bad.value)
    assert not any(text in str(bad.value) for text in PYDANTIC_BOILERPLATE)


def test_since_reads_a_date_or_a_time_in_utc() -> None:
    from datetime import UTC, datetime, timedelta, timezone

    from wheelgate.cli.import_command import since_option

    assert since_option(None) is None
    assert since_option("2025-01-31") == datetime(2025, 1, 31, tzinfo=UTC)
    assert since_option("2025-01-31T12:30:00Z") == datetime(2025, 1, 31, 12, 30, tzinfo=UTC)
    assert since_option("2025-01-31T12:30:00") == datetime(2025, 1, 31, 12, 30, tzinfo=UTC)
    plus_two = since_option("2025-01-31T12:30:00+02:00")
    assert plus_two == datetime(2025, 1, 31, 12, 30, tzinfo=timezone(timedelta(hours=2)))


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["verify"], "give FILE_OR_URL, or --installed NAME"),
        (["verify", WHEEL, "--installed", "torch"], "give FILE_OR_URL, or --installed NAME"),
        (["verify", WHEEL, "--python", "/usr/bin/python3"], "--python goes with --installed"),
    ],
)
def test_verify_takes_a_file_or_an_installed_distribution(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert said in refused(argv, capsys)
