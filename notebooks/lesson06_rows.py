"""Written by notebook 06, section 1: a Dataset over a read-only table of rows (workers import it)."""

from collections.abc import Sequence

import torch
from torch.utils.data import Dataset


class RowLengths(Dataset):
    """A metadata table (a list of str, or a NumPy bytes array), only ever read: sample i is len(rows[i])."""

    def __init__(self, rows):
        self.rows = rows  # never assigned to again: the table is read-only

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor(len(self.rows[index]))

    def __getitems__(self, indices: Sequence[int]) -> list[int]:
        """A whole batch in one call (the DataLoader uses it): plain ints, one tensor once collated."""
        rows = self.rows
        return [len(rows[i]) for i in indices]
