"""``wheelgate bisect run`` and ``bisect log`` end to end over a fake installer (the history
handed in, the command a real shell): the step lines, the summary, the JSON and its schema,
the exit codes, resume."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from tests.unit.bisect_world import SHELL_COMMAND, FakeInstaller, linear_history, newest_first
from tests.unit.memory_bucket import World
from wheelgate.bisect.result import json_schema, schema_text
from wheelgate.bisect.run_installer import SKIP_EXPIRED
from wheelgate.cli import bisect as cli_bisect
from wheelgate.cli.main import main
from wheelgate.core.layout import STAGING
from wheelgate.history.model import HistoryHead, HistoryRun, HistoryShard, MonthRef
from wheelgate.storage import http

REPO = Path(__file__).resolve().parents[2]
SCHEMA_DOC = REPO / "docs" / "bisect-result.schema.json"
STEP_LINE = re.compile(
    r"^\[\d+/~\d+\] run \d+ · [0-9a-f]{7} · \d{4}-\d{2}-\d{2} · promoted · "
    r"(cached|downloaded \d+|not fetched) · \d+ s → (good|bad|skip \([a-z-]+\))$"
)


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[HistoryRun]:
    """Ten runs, the history handed to the command, no index allow-list, cwd a temp dir."""
    runs = linear_history(10)
    monkeypatch.setattr(cli_bisect, "read_runs", lambda args, index, url: newest_first(runs))
    monkeypatch.setenv("WHEELGATE_STAGING_BASE_URL", "http://staging.invalid/")
    monkeypatch.delenv("WHEELGATE_ALLOWED_INDEXES", raising=False)
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    monkeypatch.chdir(tmp_path)
    return runs


def use(monkeypatch: pytest.MonkeyPatch, installer: FakeInstaller) -> None:
    monkeypatch.setattr(cli_bisect, "build_installer", lambda chosen, **choice: installer)
    monkeypatch.setattr(cli_bisect, "pin_ends", lambda installer, ends, **how: None)


def bisect_run(*extra: str, good: str = "1000", bad: str = "latest") -> int:
    argv = ["bisect", "run", "--index", "v2/gfx94X-dcgpu", "--good", good, "--bad", bad]
    return main([*argv, *extra, "--", *SHELL_COMMAND])


def test_the_first_bad_run_is_printed_with_one_line_per_step_and_a_compare_url(
    world: list[HistoryRun], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use(monkeypatch, FakeInstaller(bad={r.run_id for r in world[6:]}))
    code = bisect_run("--repository-url", "https://example.org/o/r")
    out = capsys.readouterr().out.splitlines()
    steps = [line for line in out if line.startswith("[")]
    assert code == 0
    assert steps
    assert all(STEP_LINE.match(line) for line in steps), steps
    assert steps[0].endswith("→ good")
    assert f"first bad: run 1006 · {world[6].commit[:7]}" in "\n".join(out)
    assert f"compare: https://example.org/o/r/compare/{world[5].commit}...{world[6].commit}" in out


def test_json_output_validates_against_the_schema_in_the_docs(
    world: list[HistoryRun], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use(monkeypatch, FakeInstaller(bad={r.run_id for r in world[3:]}, skips={"1002": SKIP_EXPIRED}))
    code = bisect_run("--json")
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    jsonschema.validate(document, json.loads(SCHEMA_DOC.read_text()))
    assert code == cli_bisect.EXIT_INCONCLUSIVE
    assert document["conclusion"] == "inconclusive"
    assert [r["run_id"] for r in document["could_be"]] == ["1002", "1003"]
    assert document["skipped"][0]["reason"] == SKIP_EXPIRED
    assert STEP_LINE.match(captured.err.splitlines()[-1])


def test_the_schema_in_the_docs_is_the_one_the_result_model_generates() -> None:
    assert SCHEMA_DOC.read_text() == schema_text()
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"schema": "wheelgate/bisect-result/v1"}, json_schema())


def test_a_ref_naming_no_run_says_why_and_exits_2(
    world: list[HistoryRun], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use(monkeypatch, FakeInstaller())
    assert bisect_run(good="2026-01-01") == 2
    assert "no run was committed or staged" in capsys.readouterr().err


def test_a_good_end_that_fails_stops_with_exit_1(
    world: list[HistoryRun], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use(monkeypatch, FakeInstaller(bad={r.run_id for r in world}))
    assert bisect_run() == 1
    assert "the good end, run 1000, is bad" in capsys.readouterr().out


def test_aborted_by_a_signal_then_resumed_retests_nothing_and_the_log_shows_it(
    world: list[HistoryRun], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a bisect whose third probe's command is killed by a signal
    installer = FakeInstaller(bad={r.run_id for r in world[6:]}, exits={"1004": 137})
    use(monkeypatch, installer)
    assert bisect_run() == cli_bisect.EXIT_ABORTED
    assert "aborted" in capsys.readouterr().err
    # When the trouble is fixed and the bisect resumed
    installer.exits.clear()
    assert main(["bisect", "run", "--resume"]) == 0
    # Then only the aborted run was installed twice, and the log shows every step once
    assert {run for run, n in installer.installs.items() if n > 1} == {"1004"}
    capsys.readouterr()
    assert main(["bisect", "log"]) == 0
    logged = capsys.readouterr().out
    assert logged.count("run 1004 ·") == 1
    assert "first bad: run 1006" in logged


def test_a_new_bisect_over_a_session_is_refused(
    world: list[HistoryRun], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use(monkeypatch, FakeInstaller(bad={r.run_id for r in world[6:]}))
    assert bisect_run() == 0
    assert bisect_run() == 2
    assert "--resume it" in capsys.readouterr().err


def test_a_resumed_bisect_with_another_command_is_refused(
    world: list[HistoryRun], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use(monkeypatch, FakeInstaller(bad={r.run_id for r in world[6:]}))
    bisect_run()
    assert main(["bisect", "run", "--resume", "--", "true"]) == 2
    assert "CMD differs" in capsys.readouterr().err


def test_without_a_staging_url_the_command_says_where_files_come_from(
    world: list[HistoryRun], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("WHEELGATE_STAGING_BASE_URL")
    assert bisect_run() == 2
    assert "give --staging-url or set $WHEELGATE_STAGING_BASE_URL" in capsys.readouterr().err
    assert not Path(cli_bisect.DEFAULT_SESSION).exists()


def test_log_without_a_session_is_a_usage_error(
    world: list[HistoryRun], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bisect", "log"]) == 2
    assert "holds no bisect session" in capsys.readouterr().err


def test_the_history_is_read_from_the_staging_distribution_with_one_get_per_month(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a history of two months in the staging bucket, as the promoter writes it
    runs = linear_history(6)
    march, april = (
        runs[:3],
        [r.model_copy(update={"staged_at": r.staged_at.replace("-03-", "-04-")}) for r in runs[3:]],
    )
    world = World()
    bucket = world.bucket("staging")
    index = runs[0].index
    head = HistoryHead(
        schema="wheelgate/history/v1",
        index=index,
        updated_at=april[-1].staged_at,
        months=(MonthRef(month="2026-04", runs=3), MonthRef(month="2026-03", runs=3)),
    )
    bucket.put(
        STAGING.history_head(index), head.to_json().encode(), content_type="application/json"
    )
    for month, shard_runs in (("2026-03", march), ("2026-04", april)):
        shard = HistoryShard(
            schema="wheelgate/history-shard/v1", index=index, month=month, runs=tuple(shard_runs)
        )
        bucket.put(
            STAGING.history_month(index, month),
            shard.to_json().encode(),
            content_type="application/json",
        )
    base = "http://staging.invalid/"

    def served(url: str) -> bytes | None:
        found = bucket.get(url.removeprefix(base))
        return None if found is None else found[0]

    monkeypatch.setattr(http, "fetch", served)
    monkeypatch.delenv("WHEELGATE_ALLOWED_INDEXES", raising=False)
    monkeypatch.setenv("WHEELGATE_STAGING_BASE_URL", base)
    monkeypatch.chdir(tmp_path)
    use(monkeypatch, FakeInstaller(bad={"1004", "1005"}))
    # When the bisect runs from the first to the latest run
    assert bisect_run() == 0
    # Then it read the head and two months, listed nothing, and found run 1004
    assert world.calls.get("GetObject") == 3
    assert "ListObjectsV2" not in world.calls
    assert "first bad: run 1004" in capsys.readouterr().out


def test_a_resumed_bisect_builds_its_installer_with_the_sessions_projects_and_target(
    world: list[HistoryRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[tuple[list[str], str | None]] = []
    installer = FakeInstaller(bad={r.run_id for r in world[6:]}, exits={"1004": 137})

    def recorded(chosen: object, *, projects: tuple[str, ...], target: str | None) -> FakeInstaller:
        built.append((list(projects), target))
        return installer

    monkeypatch.setattr(cli_bisect, "build_installer", recorded)
    monkeypatch.setattr(cli_bisect, "pin_ends", lambda installer, ends, **how: None)
    bisect_run("--project", "torch", "--target", "gfx94X")
    installer.exits.clear()
    assert main(["bisect", "run", "--resume"]) == 0
    assert built == [(["torch"], "gfx94X"), (["torch"], "gfx94X")]
