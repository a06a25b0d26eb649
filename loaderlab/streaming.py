"""Counting what a loader delivered against ``range(n)`` (notebooks 10 and 11): every stream
there yields the integers ``0 .. n-1`` (the item *is* its position), so ``coverage`` tells at
once what was duplicated, lost or out of range."""

from __future__ import annotations

import collections
from collections.abc import Iterable
from dataclasses import dataclass

from loaderlab._validate import require_positive


@dataclass(frozen=True)
class Coverage:
    """How a list of delivered items covers ``range(n)``."""

    n: int
    delivered: int
    distinct: int
    missing: int
    duplicates: int
    out_of_range: int

    @property
    def exactly_once(self) -> bool:
        """True if every item of ``range(n)`` was delivered once and nothing else."""
        return self.delivered == self.distinct == self.n and self.out_of_range == 0


def coverage(items: Iterable[int], n: int) -> Coverage:
    """Return how ``items`` cover ``range(n)``: delivered, distinct, missing, duplicated."""
    require_positive(n, "n")
    counts = collections.Counter(int(i) for i in items)
    inside = {i: c for i, c in counts.items() if 0 <= i < n}
    return Coverage(
        n=n,
        delivered=sum(counts.values()),
        distinct=len(inside),
        missing=n - len(inside),
        duplicates=sum(c - 1 for c in inside.values()),
        out_of_range=sum(c for i, c in counts.items() if not 0 <= i < n),
    )
