"""Written by notebook 20, section 4: a dataset that reads the epoch, and a sampler that sends it."""

import os

import torch
from torch.utils.data import Dataset, Sampler


class EpochDataset(Dataset):
    """Returns (index, epoch this process sees, pid); the epoch is a plain attribute."""

    def __init__(self, n: int = 16):
        self.n, self.epoch = n, 0

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        if isinstance(index, tuple):  # (index, epoch) from EpochSampler
            index, epoch = index
        else:
            epoch = self.epoch
        return torch.tensor([index, epoch, os.getpid()])


class SharedEpochDataset(EpochDataset):
    """The epoch lives in a shared-memory tensor: workers read the value the main process wrote."""

    def __init__(self, n: int = 16):
        self.n, self.shared = n, torch.zeros((), dtype=torch.long).share_memory_()

    @property
    def epoch(self):
        return int(self.shared)

    @epoch.setter
    def epoch(self, value):
        self.shared.fill_(value)


class EpochSampler(Sampler):
    """Yields (index, epoch) for range(n); set_epoch(e) sets the epoch, as DistributedSampler's does."""

    def __init__(self, n: int):
        self.n, self.epoch = n, 0

    def set_epoch(self, epoch: int):
        self.epoch = epoch

    def __iter__(self):
        return ((i, self.epoch) for i in range(self.n))

    def __len__(self):
        return self.n
