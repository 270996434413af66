"""Acceptance rules: which sets of a manifest may be promoted. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.evidence import check_evidence
from wheelgate.core.layout import MIRROR_RUN_PREFIX
from wheelgate.core.manifest import ArtifactSet, Manifest, Outcome

#: The one test a dependency-mirror run's sets carry: the review of ``deps.yml``.
MIRROR_REVIEW_TEST = "deps-review"


@dataclass(frozen=True)
class AcceptancePolicy:
    """Deployment rules.

    ``required_tests`` names tests that must be in a set of an index directory and have passed;
    ``allowed_indexes`` (empty = any) limits where sets may go; with ``block_all_on_failure``
    one rejected set rejects the whole manifest.
    """

    required_tests: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    allowed_indexes: frozenset[str] = frozenset()
    block_all_on_failure: bool = True
    #: Runs whose id starts with this prefix mirror reviewed third-party wheels (``deps.yml``):
    #: their tests are the review, so they need ``review_test`` passed instead of the index
    #: directory's required tests.
    review_run_prefix: str = MIRROR_RUN_PREFIX
    review_test: str = MIRROR_REVIEW_TEST


@dataclass(frozen=True)
class AcceptanceDecision:
    accepted: tuple[ArtifactSet, ...]
    rejected: tuple[tuple[ArtifactSet, PromotionRejected], ...]


def check_set(artifact_set: ArtifactSet, policy: AcceptancePolicy, *, run_id: str = "") -> None:
    """Raise :class:`PromotionRejected` unless the set may be promoted.

    A set needs at least one test, every test passed (skipped is not passed), every test
    the policy requires for its index directory present and passed, and each of its files
    installed by a passed test (:func:`~wheelgate.core.evidence.check_evidence`).
    """
    index = artifact_set.index
    if policy.allowed_indexes and index not in policy.allowed_indexes:
        raise PromotionRejected(
            Reason.INDEX_NOT_ALLOWED,
            f"index directory {index!r} is not one this deployment promotes to",
            index=index,
        )
    if not artifact_set.tests:
        raise PromotionRejected(
            Reason.TESTS_MISSING, f"set {index!r} lists no test results", index=index
        )
    results = {t.name: t.result for t in artifact_set.tests}
    required = policy.required_tests.get(index, ())
    if policy.review_run_prefix and run_id.startswith(policy.review_run_prefix):
        required = (policy.review_test,)
    missing = [n for n in required if n not in results]
    if missing:
        raise PromotionRejected(
            Reason.TESTS_MISSING,
            f"set {index!r} lacks required test(s) {', '.join(sorted(missing))}",
            index=index,
        )
    not_passed = sorted(f"{n} {r.value}" for n, r in results.items() if r is not Outcome.PASSED)
    if not_passed:
        raise PromotionRejected(
            Reason.TESTS_FAILED,
            f"set {index!r} has tests that did not pass: {', '.join(not_passed)}",
            index=index,
        )
    check_evidence(artifact_set)


def decide(manifest: Manifest, policy: AcceptancePolicy) -> AcceptanceDecision:
    """Split the manifest's sets into accepted and rejected ones.

    With ``block_all_on_failure`` a single rejected set moves every other set to rejected with
    reason ``blocked-by-other-set``.
    """
    accepted: list[ArtifactSet] = []
    rejected: list[tuple[ArtifactSet, PromotionRejected]] = []
    for artifact_set in manifest.sets:
        try:
            check_set(artifact_set, policy, run_id=manifest.run_id)
        except PromotionRejected as exc:
            rejected.append((artifact_set, exc))
        else:
            accepted.append(artifact_set)
    if rejected and policy.block_all_on_failure and accepted:
        first = rejected[0][1]
        rejected += [
            (
                s,
                PromotionRejected(
                    Reason.BLOCKED_BY_OTHER_SET,
                    f"set {s.index!r} passed but is held back because set "
                    f"{first.index!r} was rejected ({first.reason})",
                    index=s.index,
                ),
            )
            for s in accepted
        ]
        accepted = []
    return AcceptanceDecision(accepted=tuple(accepted), rejected=tuple(rejected))
