"""The Datasets, samplers and helpers of the doctor's catalogue (loaderlab.doctor.catalogue): each
reproduces one pitfall of the course, or its fix. Spawned workers import them from here. The seeding
datasets are notebook 07's (notebooks/lesson07_draws.py and lesson07_lazy_rng.py), imported, not written
again."""

import hashlib
import importlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import (
    Dataset,
    IterableDataset,
    Sampler,
    default_collate,
    get_worker_info,
)

NOTEBOOKS = str(Path(__file__).resolve().parents[2] / "notebooks")
if NOTEBOOKS not in sys.path:  # notebook 07's lesson modules; spawned workers inherit sys.path
    sys.path.insert(0, NOTEBOOKS)

LESSON07 = {
    "GlobalDraws": "lesson07_draws",
    "HeldRng": "lesson07_draws",
    "seed_globals": "lesson07_draws",
    "InheritedNumpyState": "lesson07_draws",
    "LazyRng": "lesson07_lazy_rng",
}


def lesson07(name: str):
    """Return one of notebook 07's seeding datasets or functions (imported from its lesson module,
    not written again); an ImportError that says where they are when the notebooks are not here."""
    try:
        return getattr(importlib.import_module(LESSON07[name]), name)
    except ModuleNotFoundError as exc:
        raise ImportError(
            f"{name} is notebook 07's (notebooks/{LESSON07[name]}.py): run from a copy of the "
            "course that has its notebooks/ folder"
        ) from exc


def __getattr__(name: str):
    if name in LESSON07:
        return lesson07(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


from loaderlab.cores import usable_cores  # noqa: E402, F401 - re-exported to the catalogue


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
        return len(self.buffer[self.offsets[index] : self.offsets[index + 1]].tobytes().decode())


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
        record = self.buffer[index * 16 : (index + 1) * 16]
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
        self.file: io.BufferedReader | None = open(self.path, "rb")  # noqa: SIM115 - the bug

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
        self.n, self.keep = n, keep
        self.stored: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> int:
        decoded = np.ones(512 * 1024)  # 4 MB, written: private pages
        if self.keep:
            self.stored[index] = decoded
        return index


class Photos(Dataset):
    """Notebook 21: n small images read from files; ``unreadable`` holds the indices whose file is
    truncated (reading raises, as PIL does on a cut JPEG) or missing (``missing="none"``: the
    Dataset returns None instead of raising, the pitfall)."""

    def __init__(self, n: int, unreadable: tuple[int, ...] = (), missing: str = "raise"):
        self.n, self.unreadable, self.missing = n, set(unreadable), missing

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int):
        if index in self.unreadable:
            if self.missing == "none":
                return None
            raise OSError(f"image file is truncated (sample {index}: 3 bytes not processed)")
        return torch.full((3, 8, 8), index % 256, dtype=torch.uint8), index % 2


def readable_indices(dataset: Dataset) -> list[int]:
    """The fix, run once before training: the indices whose sample reads (and is not None)."""
    keep = []
    for i in range(len(dataset)):
        try:
            if dataset[i] is not None:
                keep.append(i)
        except Exception:  # noqa: BLE001 - an unreadable sample is left out, and counted by the caller
            pass
    return keep


class Listed(Dataset):
    """Notebook 21: reads ``files``, a list; ``length``: a __len__ kept apart from the list (the bug)."""

    def __init__(self, n_files: int, length: int | None = None):
        self.files = [f"img_{i:04d}.png" for i in range(n_files)]
        self.length = length

    def __len__(self) -> int:
        return self.length if self.length is not None else len(self.files)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        name = self.files[index]  # IndexError past the list
        return torch.tensor([index, len(name)]), index % 2


class PilImages(Dataset):
    """PIL images as __getitem__ returns them without a ToTensor-like conversion (``to_tensor``: with it)."""

    def __init__(self, n: int, to_tensor: bool = False):
        self.n, self.to_tensor = n, to_tensor

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int):
        from PIL import Image

        image = Image.fromarray(np.full((8, 8, 3), index % 256, dtype=np.uint8))
        if self.to_tensor:  # the conversion: HWC uint8 -> CHW uint8 tensor
            return torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1), index % 2
        return image, index % 2


class NumpyRows(Dataset):
    """Rows of a NumPy table (float64, NumPy's default) with a target; ``dtype``: what __getitem__ returns."""

    def __init__(self, n: int, dtype=np.float64):
        self.table = np.random.default_rng(0).random((n, 8))  # float64
        self.dtype = dtype

    def __len__(self) -> int:
        return len(self.table)

    def __getitem__(self, index: int):
        row = self.table[index].astype(self.dtype)
        return row, row[:1].sum()


def h5_file(n: int) -> str:
    """An HDF5 file of n rows of 8 float32 values, made once per process (h5py needed)."""
    import h5py

    path = os.path.join(tempfile.gettempdir(), f"loaderlab_catalogue_rows_{n}.h5")
    if not os.path.exists(path):
        with h5py.File(f"{path}.{os.getpid()}", "w") as f:
            f["x"] = np.arange(n * 8, dtype=np.float32).reshape(n, 8)
        os.replace(f"{path}.{os.getpid()}", path)
    return path


class H5Rows(Dataset):
    """Notebook 20's bug: the HDF5 file is opened in __init__, before the workers start."""

    def __init__(self, n: int):
        import h5py

        self.n, self.path = n, h5_file(n)
        self.file = h5py.File(self.path, "r")  # the bug: one handle for every forked worker

    def __len__(self) -> int:
        return self.n

    def opened(self):
        return self.file

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.from_numpy(self.opened()["x"][index])


class LazyH5Rows(H5Rows):
    """The fix: keep the path; each process opens the file at its first read."""

    def __init__(self, n: int):
        self.n, self.path, self.file, self.pid = n, h5_file(n), None, None

    def opened(self):
        import h5py

        if self.pid != os.getpid():
            self.file, self.pid = h5py.File(self.path, "r"), os.getpid()
        return self.file

    def __getstate__(self):
        return {**self.__dict__, "file": None, "pid": None}


class Whitened(Dataset):
    """Notebook 24: each sample is whitened by a NumPy matrix product, which NumPy's BLAS runs on
    every core, in every worker."""

    def __init__(self, n: int, size: int = 320):
        rng = np.random.default_rng(0)
        self.n, self.w, self.x = n, rng.random((size, size)), rng.random((size, size))

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.from_numpy((self.x @ self.w)[index % len(self.x), :8].astype(np.float32))


def one_thread(worker_id: int) -> None:
    """The fix: each worker's thread pools (NumPy's BLAS, OpenMP) limited to one thread."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)


class Augmented(Dataset):
    """Notebook 22: samples with a random flip and noise when ``train``; deterministic otherwise."""

    def __init__(self, n: int, train: bool = True):
        self.n, self.train = n, train
        self.images = torch.arange(n * 12, dtype=torch.float32).reshape(n, 3, 4)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        image = self.images[index]
        if self.train:  # global torch generator: torch reseeds it in every worker, every epoch
            if torch.rand(()) < 0.5:
                image = image.flip(-1)
            image = image + 0.1 * torch.randn(image.shape)
        return image


class ShuffledStridedStream(IterableDataset):
    """Items 0..n-1 in a new order every epoch (one permutation shared by the workers, from the
    epoch's base seed); worker k of K yields every K-th item of it."""

    def __init__(self, n: int):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            order, k, workers = torch.randperm(self.n), 0, 1
        else:  # every worker of an epoch draws the same permutation: base seed = seed - id
            generator = torch.Generator().manual_seed(info.seed - info.id)
            order, k, workers = torch.randperm(self.n, generator=generator), info.id, info.num_workers
        return iter(order[k::workers].tolist())


def seed_from_worker_id(worker_id: int) -> None:
    """Notebook 07's bug: a generator seeded from the worker id draws the same values every epoch."""
    get_worker_info().dataset.rng = np.random.default_rng(worker_id)
