"""A verdict follows a promoted set, never a copy: a fan-out run rejected after its copies
leaves no file in nightly that ``wheelgate verify`` accepts, and its record names every key it
left (tests/integration/test_fanout.py's in-process executions, the local stack's KMS key)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_fanout import Fanout, Gate, Run, make_run, nightly_objects
from tests.integration.test_verdicts import verify
from wheelgate.core.errors import TransientError
from wheelgate.core.layout import PAGE_NAMES, VERDICT_SUFFIX
from wheelgate.local.names import NIGHTLY_BUCKET
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.local.stack import LocalWheelGate
from wheelgate.storage.bucket import Bucket

# Fan-out executions with real signatures: seconds each; `make test` only.
pytestmark = pytest.mark.slow


def key_published(promoter: Fanout) -> Fanout:
    """``promoter`` as a gate that has signed before: its keys document lists its key (without
    it, `verify` refuses every file for want of the gate's keys, proving nothing here)."""
    assert promoter.promoter.steps is not None
    assert promoter.promoter.steps.verdicts is not None
    promoter.promoter.steps.verdicts.publish_key(datetime.now(UTC))
    return promoter


@pytest.fixture
def promoter(stack: LocalWheelGate, buckets: tuple[Bucket, Bucket]) -> Iterator[Fanout]:
    fixture = key_published(Fanout(buckets))
    yield fixture
    if fixture.gate is not None:
        fixture.gate.open()


class Rejections:
    """Runs rejected after their copies, and what they leave, as ``wheelgate verify`` of the
    gate ``gate`` judges it."""

    def __init__(
        self, promoter: Fanout, s3: Any, gate: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        self.promoter, self.s3, self.gate, self.capsys = promoter, s3, gate, capsys

    def reject(self, run: Run, planted: dict[str, bytes]) -> dict[str, Any]:
        """``run`` handed to an execution, ``planted`` objects written into nightly behind the
        promoter's back (keys relative to the run's directory), then the execution run to its
        end; the run's record."""
        self.promoter.gate = Gate()
        run.report()
        for key, body in planted.items():
            self.s3.put_object(
                Bucket=NIGHTLY_BUCKET,
                Key=f"{run.index}/{key}",
                Body=body,
                ChecksumAlgorithm="SHA256",
            )
        self.promoter.gate.open()
        return run.done()

    def left_named_and_refused(
        self, run: Run, record: dict[str, Any]
    ) -> tuple[set[str], dict[str, str]]:
        """Every key nightly holds under the run's directory is named by the record's
        ``left_in_nightly``, no page lists any of them, and ``wheelgate verify`` refuses each
        file left (exit 1); the keys left and, by file left, why ``verify`` refused it."""
        [outcome] = record["sets"]
        left = set(nightly_objects(self.s3, run.index + "/"))
        assert not [k for k in left if k.endswith(tuple(PAGE_NAMES))]
        assert {k.removeprefix(run.index + "/") for k in outcome["left_in_nightly"]} == left
        files = [w.name for w in run.wheels if w.name in left]
        assert files, "the execution copied nothing before it was refused"
        refused = {}
        for name in files:
            url = f"{self.gate}{run.index}/{name}"
            code, report = verify(url, "--nightly-url", self.gate, capsys=self.capsys)
            assert (code, report["verified"]) == (1, False), report
            refused[name] = report["code"]
        return left, refused


@pytest.fixture
def rejections(
    promoter: Fanout, stack: LocalWheelGate, s3: Any, capsys: pytest.CaptureFixture[str]
) -> Rejections:
    return Rejections(promoter, s3, stack.nightly_url, capsys)


@pytest.fixture
def run(promoter: Fanout, tmp_path: Path, request: pytest.FixtureRequest) -> Run:
    return make_run(promoter, tmp_path, request)


def test_a_run_rejected_after_its_copies_leaves_no_verdict_and_nothing_that_verifies(
    rejections: Rejections, run: Run
) -> None:
    # Given a large set whose last wheel's core metadata key holds other bytes in nightly
    planted = {f"{run.wheels[2].name}.metadata": b"Metadata-Version: 2.1\n"}
    # When its execution copies the other wheels and the last one's copy is refused
    record = rejections.reject(run, planted)
    # Then the run is rejected, no step signed anything, the record names every key left,
    # and `wheelgate verify` refuses each copied file: it has no verdict
    assert (record["state"], record["reason"]) == ("rejected", "nightly-conflict")
    left, refused = rejections.left_named_and_refused(run, record)
    assert not [k for k in left if k.endswith(VERDICT_SUFFIX)]
    assert set(refused.values()) == {"no-verdict"}
    assert not [s for s in rejections.promoter.steps if s["fanout_step"] == "publish"]


def test_a_run_refused_by_its_publish_step_signs_nothing_and_names_the_verdict_it_found(
    rejections: Rejections, run: Run
) -> None:
    # Given a large set under one of whose verdict keys nightly holds something else
    planted = f"{run.wheels[1].name}{VERDICT_SUFFIX}"
    # When its execution copies every wheel and its publish step finds that verdict key taken
    record = rejections.reject(run, {planted: json.dumps({}).encode()})
    # Then the run is rejected before any signature: the only verdict in its directory is
    # the planted one, which the record names with every other key left, and
    # `wheelgate verify` refuses every wheel
    assert (record["state"], record["reason"]) == ("rejected", "nightly-conflict")
    steps = rejections.promoter.steps
    assert [s["fanout_step"] for s in steps if "item" not in s] == ["publish", "conclude"]
    left, refused = rejections.left_named_and_refused(run, record)
    assert [k for k in left if k.endswith(VERDICT_SUFFIX)] == [planted]
    assert {w.name for w in run.wheels} <= left
    assert refused.pop(run.wheels[1].name) != "no-verdict"
    assert set(refused.values()) == {"no-verdict"}


def test_a_publish_step_retried_after_signing_keeps_the_verdicts_it_wrote(
    promoter: Fanout, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a large set whose publish step fails once after signing, before any page
    assert promoter.promoter.steps is not None
    publisher = promoter.promoter.steps.publisher
    real_publish = publisher.publish_entries
    failures = [TransientError("SlowDown (injected)")]

    def publish_once_failing(*args: Any, **kwargs: Any) -> Any:
        if failures:
            raise failures.pop()
        return real_publish(*args, **kwargs)

    monkeypatch.setattr(publisher, "publish_entries", publish_once_failing)
    verdict_puts: list[str] = []

    def spy(params: dict[str, Any], **_: Any) -> None:
        if params["Key"].endswith(VERDICT_SUFFIX):
            verdict_puts.append(params["Key"])

    events = promoter.nightly.client.meta.events
    events.register("provide-client-params.s3.PutObject", spy)
    try:
        # When the execution runs, and Step Functions retries the publish step
        run.report()
        record = run.done()
    finally:
        events.unregister("provide-client-params.s3.PutObject", spy)
    # Then the run is promoted, and each verdict was signed and written once: the retried
    # step found the ones it wrote
    assert record["state"] == "promoted", record
    assert [s["fanout_step"] for s in promoter.steps if "item" not in s] == ["publish", "publish"]
    assert sorted(verdict_puts) == sorted(
        f"{run.index}/{w.name}{VERDICT_SUFFIX}" for w in run.wheels
    )


def test_a_single_invocation_finds_a_taken_verdict_key_before_it_signs_anything(
    buckets: tuple[Bucket, Bucket],
    stack: LocalWheelGate,
    s3: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a set promoted in one invocation, under one of whose verdict keys nightly holds
    # something else before it is reported
    single = key_published(Fanout(buckets, min_files=1_000_000))
    wheels = [build_wheel(tmp_path, f"one{n}", "1.0") for n in range(3)]
    run = Run(single, "single-verdict-taken", "f/single-verdict-taken", wheels)
    planted = f"{wheels[1].name}{VERDICT_SUFFIX}"
    s3.put_object(Bucket=NIGHTLY_BUCKET, Key=f"{run.index}/{planted}", Body=b"{}")
    # When it is reported: every file is copied, then the verdicts are to be signed
    record = run.report()
    # Then it is rejected with nothing signed: the record names every key left, the planted
    # verdict included, and `wheelgate verify` refuses every wheel
    assert (record["state"], record["reason"]) == ("rejected", "nightly-conflict")
    left, refused = Rejections(single, s3, stack.nightly_url, capsys).left_named_and_refused(
        run, record
    )
    assert [k for k in left if k.endswith(VERDICT_SUFFIX)] == [planted]
    assert {w.name for w in wheels} <= left
    assert refused.pop(wheels[1].name) != "no-verdict"
    assert set(refused.values()) == {"no-verdict"}
