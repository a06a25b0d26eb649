"""Lesson 17, section 1: notebook 07's bug, a generator held by the Dataset (workers import this module)."""

import numpy as np
import torch
from torch.utils.data import Dataset


class HeldRng(Dataset):
    """The bug: a generator made in __init__, copied into every worker. Returns [index, draw]."""

    def __init__(self, n: int):
        self.n = n
        self.rng = np.random.default_rng(0)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor([index, self.rng.random()], dtype=torch.float64)
