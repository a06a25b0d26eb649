"""Lab 06's scaffolding: ``caption_rows()``, the table of captions the lab's Dataset must keep
shared by forked workers, and ``list_bytes(rows)``, what such a list occupies. The lab and its
checker (``loaderlab.checks.lab06``) both use them."""

from __future__ import annotations

import functools
import sys

import numpy as np

from loaderlab._validate import require_positive
from loaderlab.cow import list_bytes  # noqa: F401  (the lab's checker measures its rows with it)

N_ROWS = 300_000  # ~40 MB of str objects: a broken layout grows each worker by about that much

_WORDS = (
    "a", "red", "bus", "on", "the", "street", "two", "dogs", "play", "in", "snow", "café",
    "naïve", "Zürich", "São Paulo", "東京", "crème brûlée", "near", "river", "at", "night",
)


def caption_rows(n_rows: int = N_ROWS, seed: int = 0) -> list[str]:
    """Return ``n_rows`` distinct caption strings of 20-160 characters, some non-ASCII, some ending
    in a space (so truncating, padding, stripping or mis-encoding a row is caught)."""
    require_positive(n_rows, "n_rows")
    return list(_rows(n_rows, seed))  # a new list each call: a candidate may change its list


@functools.lru_cache(maxsize=2)
def _rows(n_rows: int, seed: int) -> tuple[str, ...]:
    rng = np.random.default_rng(seed)
    counts = rng.integers(3, 25, size=n_rows).tolist()
    words = [_WORDS[j] for j in rng.integers(0, len(_WORDS), size=sum(counts)).tolist()]
    ends = [" " if space else "" for space in (rng.random(n_rows) < 0.1).tolist()]
    rows, start = [], 0
    for i, count in enumerate(counts):
        rows.append(f"{i:07d} " + " ".join(words[start:start + count]) + ends[i])
        start += count
    return tuple(rows)


