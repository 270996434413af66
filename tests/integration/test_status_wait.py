"""`wheelgate status --wait --manifest-sha256` waits for the decision about the manifest that
`wheelgate report` wrote, not whatever the run's record said before: a re-reported run whose
first manifest was rejected is not answered with that old rejection (real S3 API, moto
server; the promoter Lambda's own handler)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.installs import evidence, pip_report
from tests.integration.test_promoter import COMMIT, Run, deliver, wheel
from wheelgate.cli.common import EXIT_OK, EXIT_PENDING, EXIT_REJECTED
from wheelgate.cli.main import main
from wheelgate.core.layout import STAGING
from wheelgate.local.stack import LocalWheelGate
from wheelgate.storage.bucket import Bucket

URL = "https://github.com/o/r/actions/runs/1"


def report(run: Run, result: str, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    """``wheelgate report`` of ``run`` with its one test ``result``; the manifest's SHA-256 it
    printed."""
    code = main(["report", "--run-id", run.run_id, "--commit", COMMIT,
                 "--test", f"{run.index}:smoke={result}@{URL}", *extra])  # fmt: skip
    out = capsys.readouterr().out
    assert code == EXIT_OK, out
    written = json.loads(out)
    body = run.staging.get(STAGING.manifest(run.run_id))
    assert body is not None
    # The SHA-256 it prints is the one of the bytes it wrote
    assert written["manifest_sha256"] == hashlib.sha256(body[0]).hexdigest()
    return str(written["manifest_sha256"])


def status(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["status", *argv])
    out = capsys.readouterr().out
    return code, json.loads(out[out.index("{\n") :])


def installed_by_its_test(
    stack: LocalWheelGate, venv_factory: Any, run: Run, built: Path
) -> list[str]:
    """The run's test job installs ``built`` from the run's index with pip's report: the
    ``wheelgate report`` options that pass it on."""
    index_url = stack.staging_url + STAGING.run_index_prefix(run.run_id, run.index)
    return evidence(run.index, pip_report(venv_factory, index_url, [built]))


@pytest.fixture
def rejected_run(
    buckets: tuple[Bucket, Bucket], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[Run, Path]:
    """A run whose first report (a failed test) the promoter rejected."""
    built = wheel(tmp_path, "rerun")
    run = Run(buckets, tmp_path, f"rerun-{tmp_path.name[-20:]}", "t/rerun").stage(built)
    first = report(run, "failed", capsys)
    assert deliver(STAGING.manifest(run.run_id)) == {"batchItemFailures": []}
    code, document = status(capsys, run.run_id, "--manifest-sha256", first)
    assert (code, document["state"], document["reason"]) == (
        EXIT_REJECTED,
        "rejected",
        "tests-failed",
    )
    return run, built


def test_a_rereported_run_waits_for_the_new_manifest_not_the_old_rejection(
    rejected_run: tuple[Run, Path],
    stack: LocalWheelGate,
    venv_factory: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run, built = rejected_run
    # Given the run reported again, its test (which installed it) passed this time
    installed = installed_by_its_test(stack, venv_factory, run, built)
    second = report(run, "passed", capsys, *installed)
    # ...and a promoter that decides only after status has read the record once
    original, reads = Bucket.get, []

    def get_then_decide(self: Bucket, key: str, **kwargs: Any) -> Any:
        found = original(self, key, **kwargs)
        if key == STAGING.record(run.run_id) and not reads:
            reads.append(json.loads(found[0]) if found else None)
            assert deliver(STAGING.manifest(run.run_id)) == {"batchItemFailures": []}
        return found

    monkeypatch.setattr(Bucket, "get", get_then_decide)
    # When status waits for the manifest report printed
    code, document = status(
        capsys, run.run_id, "--wait", "60", "--interval", "0.1", "--manifest-sha256", second
    )
    # Then its first read saw the old rejection, and it went on waiting past it
    assert reads[0]["state"] == "rejected"
    assert (code, document["state"]) == (EXIT_OK, "promoted")
    assert document["manifest_sha256"] == second
    assert document["manifest_decision"] == {
        "manifest_sha256": second,
        "state": "promoted",
        "reason": None,
        "message": document["history"][-1]["message"],
    }


def test_an_undecided_manifest_is_pending_whatever_the_record_said_before(
    rejected_run: tuple[Run, Path],
    stack: LocalWheelGate,
    venv_factory: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run, built = rejected_run
    # Given the run reported again, and the promoter has not decided on the new manifest yet
    installed = installed_by_its_test(stack, venv_factory, run, built)
    second = report(run, "passed", capsys, *installed)
    # When status is asked about that manifest (no wait)
    code, document = status(capsys, run.run_id, "--manifest-sha256", second)
    # Then it is pending, though the record still says rejected
    assert code == EXIT_PENDING
    assert document["state"] == "rejected"
    assert document["manifest_decision"]["state"] == "pending"
    # And without the manifest, status answers with the record as it stands
    code, document = status(capsys, run.run_id)
    assert (code, document["state"]) == (EXIT_REJECTED, "rejected")
