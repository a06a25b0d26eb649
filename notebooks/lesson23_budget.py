"""Written by notebook 23, section 1: workers that grow a cache, and the same data in shared storage."""

import numpy as np
import torch
from torch.utils.data import Dataset


class CachingSamples(Dataset):
    """Returns a float32 sample of `sample_mb` MB; each process that reads keeps up to `cache_mb` MB
    of decoded data in its own cache (a worker's growth)."""

    def __init__(self, n: int, sample_mb: float = 1.0, cache_mb: int = 48):
        self.n, self.numel, self.cache_mb = n, int(sample_mb * 2**20) // 4, cache_mb
        self.cache = {}  # each worker fills its own copy

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        if len(self.cache) < self.cache_mb:  # 1 MB of "decoded" data per new index, up to cache_mb
            self.cache[index] = np.full(2**20, index % 251, dtype=np.uint8)
        return torch.full((self.numel,), float(index))


class SharedSamples(Dataset):
    """The same samples read from one tensor in shared memory, built once in the main process."""

    def __init__(self, n: int, sample_mb: float = 1.0, stored_mb: int = 48):
        self.n, self.numel = n, int(sample_mb * 2**20) // 4
        self.store = torch.zeros(stored_mb * 2**20, dtype=torch.uint8).share_memory_()  # one copy

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        return torch.full((self.numel,), float(index))
