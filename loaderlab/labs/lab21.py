"""Lab 21's scaffolding: ``SometimesBroken``, a dataset with unreadable samples (``None``), and the
readable ``sample(i)`` (also what its checker, ``loaderlab.checks.lab21``, feeds the learner's
collate_fn)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch.utils.data import Dataset

BROKEN = (3, 8, *range(16, 24), 30)  # one whole batch of 8 broken, as in notebook 21


def sample(i: int) -> tuple[torch.Tensor, int]:
    """Readable sample i: (a 3 x 4 x 4 uint8 image filled with i, label i)."""
    return torch.full((3, 4, 4), i, dtype=torch.uint8), i


class SometimesBroken(Dataset):
    """Sample i is ``sample(i)``, or None at the indices in ``broken`` (a file that cannot be read)."""

    def __init__(self, n: int = 40, broken: Sequence[int] = BROKEN):
        self.n, self.broken = n, set(broken)

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        return None if index in self.broken else sample(index)
