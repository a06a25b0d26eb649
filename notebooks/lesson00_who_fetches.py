"""Written by notebook 00 (00_start_here.ipynb), section 3: datasets read in the workers."""

import os
import time

import torch
from torch.utils.data import Dataset, get_worker_info


class WhoFetches(Dataset):
    """Sample i is (i, pid of the process that fetched it, worker id; -1 = the main process)."""

    def __init__(self, n: int = 8):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[int, int, int]:
        info = get_worker_info()  # None in the main process
        return index, os.getpid(), info.id if info is not None else -1


class SlowDataset(Dataset):
    """n samples that each take latency_s to read, like a file on a network disk."""

    def __init__(self, n: int = 64, latency_s: float = 0.010, dim: int = 8):
        self.n, self.latency_s, self.dim = n, latency_s, dim

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        time.sleep(self.latency_s)  # the read: the process waits, its CPU stays free
        return torch.full((self.dim,), float(index)), index % 2
