"""Lesson 17, section 3: more of the course's pitfalls, each bug next to its fix (workers import this module)."""

import os
import tempfile

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import Dataset, IterableDataset, Sampler, get_worker_info


class Tokens(Dataset):
    """Notebook 05: sequences of 3 to 10 token ids, and a label; default_collate cannot stack them."""

    def __init__(self, n: int):
        self.lengths = [3 + (7 * i) % 8 for i in range(n)]

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        return torch.arange(1, self.lengths[index] + 1), index % 2


def pad_collate(batch: list) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The fix: pad the ids to the longest in the batch; return ids, lengths, labels."""
    ids, labels = zip(*batch, strict=True)
    lengths = torch.tensor([len(x) for x in ids])
    return pad_sequence(list(ids), batch_first=True), lengths, torch.tensor(labels)


def record_file(n: int) -> str:
    """A file of n 8-byte records (the number i as text), made once per process."""
    path = os.path.join(tempfile.gettempdir(), f"lesson17_records_{n}.bin")
    if not os.path.exists(path):  # written whole, then renamed: a reader never sees half a file
        with open(f"{path}.{os.getpid()}", "wb") as f:
            f.write(b"".join(f"{i:8d}".encode() for i in range(n)))
        os.replace(f"{path}.{os.getpid()}", path)
    return path


class Records(Dataset):
    """Notebook 08's bug: the file is opened in __init__, so forked workers share its offset."""

    def __init__(self, n: int):
        self.n, self.path = n, record_file(n)
        self.file = open(self.path, "rb")  # noqa: SIM115 - the bug

    def __len__(self) -> int:
        return self.n

    def opened(self):
        return self.file

    def __getitem__(self, index: int) -> int:
        file = self.opened()
        file.seek(index * 8)
        return int(file.read(8))


class LazyRecords(Records):
    """The fix: keep the path; each process opens the file at its first read."""

    def __init__(self, n: int):
        self.n, self.path, self.file, self.pid = n, record_file(n), None, None

    def opened(self):
        if self.pid != os.getpid():
            self.file, self.pid = open(self.path, "rb"), os.getpid()  # noqa: SIM115
        return self.file

    def __getstate__(self):
        return {**self.__dict__, "file": None, "pid": None}


class UnpaddedShard(Sampler):
    """Notebook 10's fix for evaluation: rank r takes indices r, r + world, ... (no repeats, no drops)."""

    def __init__(self, dataset, num_replicas: int, rank: int):
        self.indices = list(range(rank, len(dataset), num_replicas))

    def __len__(self) -> int:
        return len(self.indices)

    def __iter__(self):
        return iter(self.indices)


class Images(Dataset):
    """Notebook 15: n images of 3 x 128 x 128 in dtype (float32: 192 KiB each, uint8: 48 KiB)."""

    def __init__(self, n: int, dtype: torch.dtype = torch.float32):
        self.n, self.dtype = n, dtype

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.full((3, 128, 128), index % 256, dtype=self.dtype)


class Labelled(Dataset):
    """Notebook 09: a 90/10 label set, labels reachable as dataset.targets."""

    def __init__(self, n: int):
        self.targets = [int(i % 10 == 0) for i in range(n)]

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int) -> tuple[int, int]:
        return index, self.targets[index]


def class_weights(targets: list[int], power: float) -> list[float]:
    """Each sample's weight: (count of its class) ** power; -1 balances the classes, +1 does the opposite."""
    counts = np.bincount(targets)
    return [float(counts[y]) ** power for y in targets]


class BlockShardedStream(IterableDataset):
    """Notebook 11's fix for partial batches: worker k yields blocks k, k + K, ... of `block` items."""

    def __init__(self, n: int, block: int):
        self.n, self.block = n, block

    def __iter__(self):
        info = get_worker_info()
        k, workers = (info.id, info.num_workers) if info else (0, 1)
        for start in range(k * self.block, self.n, workers * self.block):
            yield from range(start, min(start + self.block, self.n))


class FillsCache(Dataset):
    """Notebook 04's counter-case: each worker fills its own cache (4 MB per sample), never shared."""

    def __init__(self, n: int, keep: bool = True):
        self.n, self.keep, self.stored = n, keep, {}

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> int:
        decoded = np.ones(512 * 1024)  # 4 MB, written: private pages
        if self.keep:
            self.stored[index] = decoded
        return index


def seed_from_worker_id(worker_id: int) -> None:
    """Notebook 07's bug: a generator seeded from the worker id draws the same values every epoch."""
    get_worker_info().dataset.rng = np.random.default_rng(worker_id)
