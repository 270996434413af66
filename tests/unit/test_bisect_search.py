"""The search: git bisect's bisection with skips, both ends first, in few steps."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from wheelgate.bisect.search import Bisection, Conclusion, Outcome, Verdict


def search(count: int, verdict: Callable[[int], Verdict]) -> tuple[list[int], Outcome]:
    """Probe until the search ends; the probes in order and the outcome."""
    bisection, probes = Bisection(count), []
    while (probe := bisection.next_probe()) is not None:
        probes.append(probe)
        bisection = bisection.with_verdict(probe, verdict(probe))
    outcome = bisection.outcome()
    assert outcome is not None
    return probes, outcome


def culprit_at(first_bad: int, skipped: frozenset[int] = frozenset()) -> Callable[[int], Verdict]:
    def verdict(i: int) -> Verdict:
        if i in skipped:
            return Verdict.SKIP
        return Verdict.BAD if i >= first_bad else Verdict.GOOD

    return verdict


def test_both_ends_are_probed_first() -> None:
    probes, _ = search(10, culprit_at(6))
    assert probes[:2] == [0, 9]


@pytest.mark.parametrize("first_bad", [1, 2, 500, 998, 999])
def test_a_thousand_candidates_take_at_most_log2_plus_two_probes(first_bad: int) -> None:
    probes, outcome = search(1000, culprit_at(first_bad))
    assert outcome == Outcome(Conclusion.FOUND, first_bad - 1, first_bad, (first_bad,))
    assert len(probes) <= math.ceil(math.log2(1000)) + 2
    assert len(set(probes)) == len(probes)


def test_a_skipped_probe_moves_to_its_neighbour_and_the_culprit_is_still_found() -> None:
    probes, outcome = search(10, culprit_at(6, frozenset({4})))
    # The middle of 0..9 is 4: skipped, its older neighbour is next.
    assert probes[2:4] == [4, 3]
    assert outcome == Outcome(Conclusion.FOUND, 5, 6, (6,))


def test_only_skipped_runs_before_the_first_bad_could_be_any_of_them() -> None:
    _, outcome = search(8, culprit_at(5, frozenset({3, 4})))
    assert outcome.conclusion is Conclusion.INCONCLUSIVE
    assert (outcome.last_good, outcome.first_bad, outcome.could_be) == (2, 5, (3, 4, 5))


@pytest.mark.parametrize(
    ("verdict", "conclusion", "probes"),
    [
        (lambda i: Verdict.BAD, Conclusion.GOOD_END_IS_BAD, [0]),
        (lambda i: Verdict.GOOD, Conclusion.BAD_END_IS_GOOD, [0, 5]),
        (lambda i: Verdict.SKIP, Conclusion.END_SKIPPED, [0]),
        (lambda i: Verdict.SKIP if i == 5 else Verdict.GOOD, Conclusion.END_SKIPPED, [0, 5]),
    ],
)
def test_an_end_that_does_not_hold_stops_the_search(
    verdict: Callable[[int], Verdict], conclusion: Conclusion, probes: list[int]
) -> None:
    found, outcome = search(6, verdict)
    assert (found, outcome.conclusion) == (probes, conclusion)


def test_the_estimate_of_probes_left_bounds_the_probes_taken() -> None:
    bisection = Bisection(1000)
    assert bisection.probes_left() == 2 + math.ceil(math.log2(999))
    probes, _ = search(1000, culprit_at(777))
    assert len(probes) <= bisection.probes_left()


def test_two_ends_adjacent_find_the_bad_end_at_once() -> None:
    probes, outcome = search(2, culprit_at(1))
    assert probes == [0, 1]
    assert outcome.first_bad == 1


def test_a_candidate_outside_the_list_is_refused() -> None:
    with pytest.raises(ValueError, match="not one of"):
        Bisection(3).with_verdict(3, Verdict.GOOD)
