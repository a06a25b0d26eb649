"""Lesson 17, section 3: the datasets of the other pitfalls of the course, each bug next to its fix."""

import time

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset, default_collate, get_worker_info


class Samples(Dataset):
    """n samples (features, label), each taking latency_s to fetch, like a remote read."""

    def __init__(self, n: int, latency_s: float = 0.0):
        self.n, self.latency_s = n, latency_s
        self.features = torch.randn(n, 8, generator=torch.Generator().manual_seed(0))

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        time.sleep(self.latency_s)
        return self.features[index], index % 2


def make_rows(n: int) -> list[str]:
    """n distinct rows of 64 characters, each its own Python object."""
    return [f"{i:012d}|{'x' * 51}" for i in range(n)]


class Rows(Dataset):
    """Notebook 06's bug: a table kept as a list of str (each read writes a refcount). Returns row lengths."""

    def __init__(self, rows: list[str]):
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> int:
        return len(self.rows[index])


class PackedRows(Dataset):
    """The fix: all rows in one byte buffer plus offsets, two objects whatever the length."""

    def __init__(self, rows: list[str]):
        self.buffer = np.frombuffer("".join(rows).encode(), dtype=np.uint8)
        self.offsets = np.cumsum([0] + [len(row) for row in rows])

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, index: int) -> int:
        return len(self.buffer[self.offsets[index]:self.offsets[index + 1]].tobytes().decode())


class EpochSeen(Dataset):
    """Notebook 08's bug: returns [index, epoch]; epoch is a plain int each worker copies once."""

    def __init__(self, n: int):
        self.n, self.epoch = n, 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor([index, self.epoch])


class SharedEpochSeen(EpochSeen):
    """The fix: the epoch lives in a shared-memory tensor that every worker reads."""

    def __init__(self, n: int):
        self.n, self.shared_epoch = n, torch.zeros((), dtype=torch.long).share_memory_()

    @property
    def epoch(self) -> int:
        return int(self.shared_epoch)

    @epoch.setter
    def epoch(self, value: int) -> None:
        self.shared_epoch.fill_(value)


class Stream(IterableDataset):
    """Notebook 11's bug: the integers 0..n-1, read whole by each worker."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        return iter(range(self.n))

    def __repr__(self) -> str:  # named in torch's length warning
        return f"{type(self).__name__}({self.n})"


class ShardedStream(Stream):
    """The fix: worker k of K yields its own contiguous block of the stream."""

    def __iter__(self):
        info = get_worker_info()
        k, workers = (info.id, info.num_workers) if info else (0, 1)
        return iter(range(k * self.n // workers, (k + 1) * self.n // workers))


def collate(batch: list) -> object:
    """Notebook 12's fix: a collate_fn defined at module level, which spawn workers import by name."""
    return default_collate(batch)
