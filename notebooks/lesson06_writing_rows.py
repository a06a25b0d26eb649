"""Written by notebook 06, section 4: a Dataset that writes to its table (workers import it)."""

from collections.abc import Sequence

import numpy as np
import torch
from torch.utils.data import Dataset


class NormalizingRowLengths(Dataset):
    """A NumPy bytes table cleaned lazily: each row read is upper-cased in place; sample i is its length."""

    def __init__(self, table: np.ndarray):
        self.table = table

    def __len__(self) -> int:
        return len(self.table)

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor(self.__getitems__([index])[0])

    def __getitems__(self, indices: Sequence[int]) -> list[int]:
        table = self.table
        lengths = []
        for i in indices:
            table[i] = table[i].upper()  # a write into the table the worker shares with its parent
            lengths.append(len(table[i]))
        return lengths
