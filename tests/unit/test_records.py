"""Which decision of a run's record is about a given manifest."""

from __future__ import annotations

from wheelgate.core.records import PromotionRecord, RecordEntry, State

OLD, NEW = "a" * 64, "b" * 64


def record(*history: RecordEntry) -> PromotionRecord:
    last = history[-1]
    return PromotionRecord(run_id="1", state=last.state, history=list(history))


def entry(state: State, sha256: str | None, reason: str | None = None) -> RecordEntry:
    return RecordEntry(
        at="2026-12-01T00:00:00Z", state=state, reason=reason, manifest_sha256=sha256
    )


def test_an_earlier_decision_is_not_about_a_new_manifest() -> None:
    rejected = record(entry(State.REJECTED, OLD, "tests-failed"))
    assert rejected.decision_about(OLD) == rejected.history[0]
    assert rejected.decision_about(NEW) is None


def test_a_pending_entry_is_no_decision_but_the_later_one_is() -> None:
    handed_over = entry(State.PENDING, NEW)
    promoted = entry(State.PROMOTED, NEW)
    assert record(entry(State.REJECTED, OLD), handed_over).decision_about(NEW) is None
    assert record(entry(State.REJECTED, OLD), handed_over, promoted).decision_about(NEW) == promoted


def test_an_untrusted_write_of_the_manifest_settles_it_as_ignored() -> None:
    ignored = entry(State.PENDING, NEW, "untrusted-writer")
    assert record(entry(State.REJECTED, OLD), ignored).decision_about(NEW) == ignored
    # A decision about the same bytes (from the trusted writer) wins over the note
    promoted = entry(State.PROMOTED, NEW)
    assert record(ignored, promoted).decision_about(NEW) == promoted
