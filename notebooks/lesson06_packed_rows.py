"""Written by notebook 06, section 6: rows in one byte buffer plus offsets (workers import it)."""

from collections.abc import Sequence

import numpy as np
import torch
from torch.utils.data import Dataset


class PackedRowLengths(Dataset):
    """Rows as one uint8 buffer plus int64 offsets (row i is buffer[offsets[i]:offsets[i + 1]]): no
    Python object per row, so reading a row writes nothing shared. Sample i is the row's length."""

    def __init__(self, buffer: np.ndarray, offsets: np.ndarray):
        self.buffer, self.offsets = buffer, offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def row(self, index: int) -> str:
        """Row `index` decoded: a new str, owned by the process that asked for it."""
        return self.buffer[self.offsets[index]:self.offsets[index + 1]].tobytes().decode()

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor(len(self.row(index)))

    def __getitems__(self, indices: Sequence[int]) -> list[int]:
        return [len(self.row(i)) for i in indices]
