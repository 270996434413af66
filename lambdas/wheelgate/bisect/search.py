"""The search: bisection over candidates in commit order, with skips, as ``git bisect``
does it. Pure: it says which candidate to probe next and what the verdicts so far conclude.

Candidates are numbered 0 (the good end) to N-1 (the bad end). Both ends are probed first: a
good end that is bad, a bad end that is good, or an end that is skipped ends the search. Then
each probe is the untested candidate nearest the middle of what lies between the last good
and the first bad, so a search without skips takes at most ceil(log2(N-1)) probes after the
ends. A skipped candidate proves nothing: when only skipped ones remain between the last good
and the first bad, the first bad "could be any of" them and the first bad.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType


class Verdict(StrEnum):
    """What a probe of a candidate concluded."""

    GOOD = "good"
    BAD = "bad"
    SKIP = "skip"


class Conclusion(StrEnum):
    """How a search ended."""

    #: The first bad candidate is known.
    FOUND = "found"
    #: Only skipped candidates lie before the first bad: it could be any of them.
    INCONCLUSIVE = "inconclusive"
    #: The good end is bad, the bad end good, or an end was skipped: nothing was searched.
    GOOD_END_IS_BAD = "good-end-is-bad"
    BAD_END_IS_GOOD = "bad-end-is-good"
    END_SKIPPED = "end-skipped"


@dataclass(frozen=True)
class Outcome:
    """Where a search ended: the last good and first bad candidate when the ends held, and
    the candidates the first bad could be (just it when found)."""

    conclusion: Conclusion
    last_good: int | None = None
    first_bad: int | None = None
    could_be: tuple[int, ...] = ()


@dataclass(frozen=True)
class Bisection:
    """The verdicts so far over ``count`` candidates; immutable, so a caller can ask what
    would come next after either verdict (prefetching) without changing it."""

    count: int
    verdicts: Mapping[int, Verdict] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        if self.count < 2:
            raise ValueError("a bisection needs at least its two ends")

    def with_verdict(self, index: int, verdict: Verdict) -> Bisection:
        """The bisection once candidate ``index`` got ``verdict``."""
        if not 0 <= index < self.count:
            raise ValueError(f"candidate {index} is not one of 0..{self.count - 1}")
        return Bisection(self.count, MappingProxyType({**self.verdicts, index: verdict}))

    def _bounds(self) -> tuple[int, int]:
        """The last good before the first bad, and the first bad."""
        bad = min(i for i, v in self.verdicts.items() if v is Verdict.BAD)
        good = max(i for i, v in self.verdicts.items() if v is Verdict.GOOD and i < bad)
        return good, bad

    def _ends(self) -> Outcome | None:
        last = self.count - 1
        for end, wrong, conclusion in (
            (0, Verdict.BAD, Conclusion.GOOD_END_IS_BAD),
            (last, Verdict.GOOD, Conclusion.BAD_END_IS_GOOD),
        ):
            verdict = self.verdicts.get(end)
            if verdict is wrong:
                return Outcome(conclusion)
            if verdict is Verdict.SKIP:
                return Outcome(Conclusion.END_SKIPPED)
        return None

    def outcome(self) -> Outcome | None:
        """How the search ended, or ``None`` while it goes on."""
        if 0 not in self.verdicts or self.count - 1 not in self.verdicts:
            return self._ends()
        ended = self._ends()
        if ended is not None:
            return ended
        good, bad = self._bounds()
        between = range(good + 1, bad)
        if any(i not in self.verdicts for i in between):
            return None
        skipped = tuple(i for i in between if self.verdicts[i] is Verdict.SKIP)
        if skipped:
            return Outcome(Conclusion.INCONCLUSIVE, good, bad, (*skipped, bad))
        return Outcome(Conclusion.FOUND, good, bad, (bad,))

    def next_probe(self) -> int | None:
        """The candidate to probe next; ``None`` when the search has ended."""
        if 0 not in self.verdicts:
            return 0 if self._ends() is None else None
        if self.count - 1 not in self.verdicts:
            return self.count - 1 if self._ends() is None else None
        if self.outcome() is not None:
            return None
        good, bad = self._bounds()
        middle = (good + bad) // 2
        untested = [i for i in range(good + 1, bad) if i not in self.verdicts]
        # Nearest the middle; of two as near, the older, as git bisect does.
        return min(untested, key=lambda i: (abs(i - middle), i))

    def probes_left(self) -> int:
        """At most how many more probes the search takes, if none is skipped."""
        if self.outcome() is not None:
            return 0
        ends = sum(1 for end in (0, self.count - 1) if end not in self.verdicts)
        if ends:
            return ends + _halvings(self.count - 2)
        good, bad = self._bounds()
        return _halvings(sum(1 for i in range(good + 1, bad) if i not in self.verdicts))


def _halvings(untested: int) -> int:
    """Probes that bisecting ``untested`` candidates takes at most: ceil(log2(n + 1))."""
    return math.ceil(math.log2(untested + 1)) if untested > 0 else 0
