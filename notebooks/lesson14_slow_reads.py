"""Written by notebook 14, section 1: samples that take time to read, a few far slower (workers import it)."""

import time

import torch
from torch.utils.data import Dataset


class SlowReads(Dataset):
    """Sample i is (tensor([i]), i); reading it takes read_s seconds, or slow_s for the indices in slow."""

    def __init__(self, n: int, read_s: float, slow: tuple[int, ...] = (), slow_s: float = 0.0):
        self.n, self.read_s, self.slow, self.slow_s = n, read_s, set(slow), slow_s

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        time.sleep(self.slow_s if index in self.slow else self.read_s)  # the read: a wait, the CPU stays free
        return torch.tensor([float(index)]), index
