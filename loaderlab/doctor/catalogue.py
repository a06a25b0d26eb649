"""The doctor's catalogue: the course's broken loaders, each next to its fix, as functions that
build them (``python -m loaderlab doctor loaderlab.doctor.catalogue:broken_held_rng``, from any folder;
``from loaderlab.doctor.catalogue import CATALOGUE`` in Python).

CATALOGUE maps each broken loader to the finding the doctor must report, its fixed counterpart
(no warning, no error) and the command-line options both are probed with. The seeding datasets
are notebook 07's (notebooks/lesson07_draws.py and lesson07_lazy_rng.py), imported, not written again.
"""

import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import (
    DataLoader,
    Dataset,
    DistributedSampler,
    IterableDataset,
    Sampler,
    WeightedRandomSampler,
    default_collate,
    get_worker_info,
)

NOTEBOOKS = str(Path(__file__).resolve().parents[2] / "notebooks")
if NOTEBOOKS not in sys.path:  # notebook 07's lesson modules; spawned workers inherit sys.path
    sys.path.insert(0, NOTEBOOKS)

from lesson07_draws import GlobalDraws, HeldRng, InheritedNumpyState, seed_globals  # noqa: E402
from lesson07_lazy_rng import LazyRng  # noqa: E402

from loaderlab.cores import usable_cores  # noqa: E402


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
    """The fix: worker k of K yields its own contiguous block of the stream; ``reported``: a wrong
    __len__ (one worker's share), which torch warns about once more items arrive."""

    def __init__(self, n: int, reported: int | None = None):
        super().__init__(n)
        self.reported = n if reported is None else reported

    def __len__(self) -> int:
        return self.reported

    def __iter__(self):
        info = get_worker_info()
        k, workers = (info.id, info.num_workers) if info else (0, 1)
        return iter(range(k * self.n // workers, (k + 1) * self.n // workers))


class StridedStream(IterableDataset):
    """Items 0..n-1; worker k of K yields items k, k + K, ...: the shares differ by one item."""

    def __init__(self, n: int):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        k, workers = (info.id, info.num_workers) if info else (0, 1)
        return iter(range(k, self.n, workers))


class Computed(Dataset):
    """Samples that compute (about 2 ms of hashing each, CPU-bound): workers beyond the cores wait."""

    def __init__(self, n: int, rounds: int = 2000):
        self.n, self.rounds = n, rounds

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        digest = index.to_bytes(8, "little")
        for _ in range(self.rounds):
            digest = hashlib.blake2b(digest).digest()
        return torch.frombuffer(bytearray(digest[:16]), dtype=torch.uint8)


class Bytes(Dataset):
    """Records in one read-only byte buffer; ``torch.from_numpy`` over it warns (not writable)
    unless ``copy``."""

    def __init__(self, n: int, copy: bool = False):
        self.buffer = np.frombuffer(bytes(range(256)) * (n * 16 // 256 + 1), dtype=np.uint8)
        self.n, self.copy = n, copy

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        record = self.buffer[index * 16:(index + 1) * 16]
        return torch.from_numpy(record.copy() if self.copy else record)


def collate(batch: list) -> object:
    """Notebook 12's fix: a collate_fn defined at module level, which spawn workers import by name."""
    return default_collate(batch)


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
    path = os.path.join(tempfile.gettempdir(), f"loaderlab_catalogue_records_{n}.bin")
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


def inverse_frequency(targets: list[int]) -> torch.Tensor:
    """One weight per class: 1 / (count of the class)."""
    return 1.0 / torch.bincount(torch.tensor(targets)).double()


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


def broken_last_batch_of_one() -> DataLoader:  # notebook 02: 65 = 8 x 8 + 1
    return DataLoader(Samples(65), batch_size=8, shuffle=True)


def fixed_last_batch_of_one() -> DataLoader:
    return DataLoader(Samples(65), batch_size=8, shuffle=True, drop_last=True)


def broken_too_few_workers() -> DataLoader:  # notebook 03: 20 ms per sample (a remote read), no worker
    return DataLoader(Samples(256, latency_s=0.02), batch_size=8)


def fixed_too_few_workers() -> DataLoader:
    return DataLoader(Samples(256, latency_s=0.02), batch_size=8, num_workers=4)


def broken_oversubscribed() -> DataLoader:  # notebook 03: samples that compute, 6 workers per core
    return DataLoader(Computed(512), batch_size=4, num_workers=6 * usable_cores())


def fixed_oversubscribed() -> DataLoader:
    return DataLoader(Computed(512), batch_size=4, num_workers=min(usable_cores(), 4))


def broken_weights_per_class() -> DataLoader:  # notebook 09: 2 class weights for 1,000 samples
    dataset = Labelled(1000)
    sampler = WeightedRandomSampler(inverse_frequency(dataset.targets), num_samples=1000)
    return DataLoader(dataset, batch_size=10, sampler=sampler)


def fixed_weights_per_sample() -> DataLoader:  # the class weights indexed by each sample's label
    dataset = Labelled(1000)
    weights = inverse_frequency(dataset.targets)[torch.tensor(dataset.targets)]
    return DataLoader(dataset, batch_size=10, sampler=WeightedRandomSampler(weights, num_samples=1000))


def broken_stream_batch_of_1() -> DataLoader:  # notebook 11: 41 items on 4 workers, worker 0 ends with 1
    return DataLoader(StridedStream(41), batch_size=10, num_workers=4)


def fixed_stream_batch_of_1() -> DataLoader:  # drop_last=True: worker 0's batch of 1 sits out
    return DataLoader(StridedStream(41), batch_size=10, num_workers=4, drop_last=True)


def broken_stream_length() -> DataLoader:  # notebook 11: __len__ counts one worker's shard
    return DataLoader(ShardedStream(64, reported=32), batch_size=8, num_workers=2)


def fixed_stream_length() -> DataLoader:
    return DataLoader(ShardedStream(64), batch_size=8, num_workers=2)


def broken_read_only_array() -> DataLoader:  # torch warns: a tensor over a read-only NumPy buffer
    return DataLoader(Bytes(64), batch_size=8)


def fixed_read_only_array() -> DataLoader:
    return DataLoader(Bytes(64, copy=True), batch_size=8)


def broken_cow_table(rows: int = 150_000) -> DataLoader:  # notebook 06
    return DataLoader(Rows(make_rows(rows)), batch_size=512, num_workers=2)


def fixed_cow_table(rows: int = 150_000) -> DataLoader:
    return DataLoader(PackedRows(make_rows(rows)), batch_size=512, num_workers=2)


def broken_held_rng() -> DataLoader:  # notebook 07: section 1's loader
    return DataLoader(HeldRng(32), batch_size=4, num_workers=2)


def fixed_held_rng() -> DataLoader:  # the one seeding recipe: a seed kept, the generator built in the worker
    return DataLoader(LazyRng(32), batch_size=4, num_workers=2)


def broken_globals_reseeded_only() -> DataLoader:  # notebook 07: seeds the globals, not the held generator
    return DataLoader(HeldRng(32), batch_size=4, num_workers=2, worker_init_fn=seed_globals)


def broken_inherited_numpy() -> DataLoader:  # notebook 07: the parent's NumPy state (torch < 1.9)
    return DataLoader(GlobalDraws(32), batch_size=4, num_workers=2, worker_init_fn=InheritedNumpyState())


def broken_stale_epoch() -> DataLoader:  # notebook 08: persistent workers keep their copy
    return DataLoader(EpochSeen(16), batch_size=4, num_workers=2, persistent_workers=True)


def fixed_stale_epoch() -> DataLoader:
    return DataLoader(SharedEpochSeen(16), batch_size=4, num_workers=2, persistent_workers=True)


def broken_distributed_order() -> DataLoader:  # notebook 10: rank 0 of 2, no process group needed
    dataset = Samples(64)
    return DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset, num_replicas=2, rank=0))


def set_sampler_epoch(loader: DataLoader, epoch: int) -> None:
    """The fix, in the training loop between epochs: a new shuffle every epoch."""
    loader.sampler.set_epoch(epoch)


def broken_unsharded_stream() -> DataLoader:  # notebook 11: both workers yield all 64 items
    return DataLoader(Stream(64), batch_size=8, num_workers=2)


def fixed_sharded_stream() -> DataLoader:  # 32 items per worker: 4 full batches each
    return DataLoader(ShardedStream(64), batch_size=8, num_workers=2)


def broken_partial_batches() -> DataLoader:  # notebook 11: 30 items per worker, each ends with a batch of 6
    return DataLoader(ShardedStream(60), batch_size=8, num_workers=2)


def broken_lambda_collate() -> DataLoader:  # notebook 12: spawn workers cannot import a lambda
    return DataLoader(Samples(32), batch_size=8, collate_fn=lambda batch: default_collate(batch))


def fixed_collate() -> DataLoader:
    return DataLoader(Samples(32), batch_size=8, collate_fn=collate)


def broken_seeded_from_worker_id() -> DataLoader:  # notebook 07: the same draws every epoch
    return DataLoader(HeldRng(32), batch_size=4, num_workers=2, worker_init_fn=seed_from_worker_id)


def fixed_global_draws() -> DataLoader:  # torch reseeds the globals; claim C15's fix keeps it so
    return DataLoader(GlobalDraws(32), batch_size=4, num_workers=2, worker_init_fn=seed_globals)


def fixed_distributed_order() -> DataLoader:  # the same loader: the fix, set_epoch, is in the loop
    return broken_distributed_order()


def fixed_partial_batches() -> DataLoader:  # blocks of 8 per worker: one partial batch (4) in all
    return DataLoader(BlockShardedStream(60, block=8), batch_size=8, num_workers=2)


def broken_stream_drop_last() -> DataLoader:  # notebook 11 §4: 12 items per worker, 4 each dropped
    return DataLoader(ShardedStream(24), batch_size=8, num_workers=2, drop_last=True)


def fixed_stream_drop_last() -> DataLoader:  # blocks of 8: 16 + 8 items, full batches only
    return DataLoader(BlockShardedStream(24, block=8), batch_size=8, num_workers=2)


def broken_variable_length() -> DataLoader:  # notebook 05: default_collate cannot stack
    return DataLoader(Tokens(32), batch_size=8)


def fixed_variable_length() -> DataLoader:
    return DataLoader(Tokens(32), batch_size=8, collate_fn=pad_collate)


def broken_open_file() -> DataLoader:  # notebook 08: forked workers share the file's offset
    return DataLoader(Records(64), batch_size=8, num_workers=2)


def fixed_open_file() -> DataLoader:
    return DataLoader(LazyRecords(64), batch_size=8, num_workers=2)


def broken_distributed_padding() -> DataLoader:  # notebook 10: 10 samples on 4 ranks, 2 repeats
    dataset = Samples(10)
    sampler = DistributedSampler(dataset, num_replicas=4, rank=0, shuffle=False)
    return DataLoader(dataset, batch_size=4, sampler=sampler)


def broken_distributed_drop_last() -> DataLoader:  # notebook 10: 10 samples on 4 ranks, 2 dropped
    dataset = Samples(10)
    sampler = DistributedSampler(dataset, num_replicas=4, rank=0, shuffle=False, drop_last=True)
    return DataLoader(dataset, batch_size=4, sampler=sampler)


def fixed_distributed_shard() -> DataLoader:  # evaluation: every sample once, on one rank
    dataset = Samples(10)
    return DataLoader(dataset, batch_size=4, sampler=UnpaddedShard(dataset, num_replicas=4, rank=0))


def broken_shm() -> DataLoader:  # notebook 15: 12 MB float32 batches x 2 prefetched x 2 workers
    return DataLoader(Images(64), batch_size=64, num_workers=2)


def fixed_shm() -> DataLoader:  # uint8 across processes, converted after the transfer: 4x smaller
    return DataLoader(Images(64, dtype=torch.uint8), batch_size=64, num_workers=2)


def broken_weighted_mix() -> DataLoader:  # notebook 09: weights that grow with the class count
    dataset = Labelled(100)
    sampler = WeightedRandomSampler(class_weights(dataset.targets, power=1), num_samples=100)
    return DataLoader(dataset, batch_size=10, sampler=sampler)


def fixed_weighted_mix() -> DataLoader:  # inverse class frequency: half and half
    dataset = Labelled(100)
    sampler = WeightedRandomSampler(class_weights(dataset.targets, power=-1), num_samples=100)
    return DataLoader(dataset, batch_size=10, sampler=sampler)


def broken_worker_cache() -> DataLoader:  # notebook 04: each worker keeps 4 MB per sample it loads
    return DataLoader(FillsCache(64), batch_size=1, num_workers=2)


def fixed_worker_cache() -> DataLoader:
    return DataLoader(FillsCache(64, keep=False), batch_size=1, num_workers=2)


NO_SPEED = ["--probes", "pickling,collate,coverage,stream,batches,random,persistent,samplers,containers"]
SPEED = ["--probes", "speed"]
HOOK = ["--between-epochs", "loaderlab.doctor.catalogue:set_sampler_epoch"]
CATALOGUE = {  # broken -> (the finding, its fixed counterpart, options for both, extra options for the fix)
    "broken_last_batch_of_one": ("batch.last_size_1", "fixed_last_batch_of_one", NO_SPEED, []),
    "broken_too_few_workers": ("speed.more_workers", "fixed_too_few_workers", SPEED, []),
    "broken_oversubscribed": ("speed.workers_over_cores", "fixed_oversubscribed", SPEED, []),
    "broken_weights_per_class": ("sampler.weights_length", "fixed_weights_per_sample", NO_SPEED, []),
    "broken_stream_batch_of_1": ("iterable.batch_of_1", "fixed_stream_batch_of_1", NO_SPEED, []),
    "broken_stream_length": ("iterable.wrong_length", "fixed_stream_length", NO_SPEED, []),
    "broken_read_only_array": ("loader.warning", "fixed_read_only_array", NO_SPEED, []),
    "broken_cow_table": ("memory.python_container", "fixed_cow_table", NO_SPEED, []),
    "broken_worker_cache": ("memory.worker_growth", "fixed_worker_cache", [*SPEED, "--workers", "0,2"], []),
    "broken_held_rng": ("random.duplicate_across_workers", "fixed_held_rng", NO_SPEED, []),
    "broken_globals_reseeded_only": ("random.duplicate_across_workers", "fixed_held_rng", NO_SPEED, []),
    "broken_inherited_numpy": ("random.duplicate_across_workers", "fixed_global_draws", NO_SPEED, []),
    "broken_seeded_from_worker_id": ("random.repeats_across_epochs", "fixed_held_rng", NO_SPEED, []),
    "broken_stale_epoch": ("persistent.stale_state", "fixed_stale_epoch", NO_SPEED, []),
    "broken_distributed_order": ("distributed.no_set_epoch", "fixed_distributed_order", NO_SPEED, HOOK),
    "broken_distributed_padding": ("distributed.padding", "fixed_distributed_shard", NO_SPEED, []),
    "broken_distributed_drop_last": ("distributed.drops", "fixed_distributed_shard", NO_SPEED, []),
    "broken_weighted_mix": ("sampler.weighted_mix", "fixed_weighted_mix", NO_SPEED, []),
    "broken_unsharded_stream": ("iterable.duplicates", "fixed_sharded_stream", NO_SPEED, []),
    "broken_partial_batches": ("iterable.partial_batches", "fixed_partial_batches", NO_SPEED, []),
    "broken_stream_drop_last": ("iterable.lost_items", "fixed_stream_drop_last", NO_SPEED, []),
    "broken_variable_length": ("collate.variable_length", "fixed_variable_length", NO_SPEED, []),
    "broken_open_file": ("dataset.open_file", "fixed_open_file", NO_SPEED, []),
    "broken_shm": ("memory.shm_too_small", "fixed_shm", [*NO_SPEED, "--shm-mb", "32"], []),
    "broken_lambda_collate": ("pickle.fails", "fixed_collate", NO_SPEED, []),
}
BROKEN = {broken: code for broken, (code, *_) in CATALOGUE.items()}  # loader -> the finding it must get
FIXED = {fixed: code for code, fixed, *_ in CATALOGUE.values()}  # loader -> a finding it must not get


def typical_loader() -> DataLoader:  # no pitfall: 1 ms reads, shuffled, 2 workers (the doctor's timing case)
    return DataLoader(Samples(2048, latency_s=0.001), batch_size=32, shuffle=True, num_workers=2)
