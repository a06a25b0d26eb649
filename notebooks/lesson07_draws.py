"""Written by notebook 07, section 2: datasets that draw random numbers in workers; fixes that miss."""

import random

import numpy as np
import torch
from torch.utils.data import Dataset, get_worker_info


def worker_id() -> int:
    """This worker's id; -1 in the main process."""
    info = get_worker_info()
    return info.id if info is not None else -1


def make_rng(kind: str, seed):
    """A new generator: "numpy" (default_rng), "random" (random.Random) or "torch" (torch.Generator).

    seed: an int, or a list of ints that NumPy's SeedSequence mixes into one."""
    if isinstance(seed, list):
        seed = int(np.random.SeedSequence(seed).generate_state(1, np.uint64)[0])
    if kind == "numpy":
        return np.random.default_rng(seed)
    if kind == "random":
        return random.Random(seed)
    return torch.Generator().manual_seed(seed)


def draw(rng) -> float:
    """One uniform float in [0, 1) from a generator of any of the three kinds."""
    if isinstance(rng, torch.Generator):
        return torch.rand((), generator=rng, dtype=torch.float64).item()
    return float(rng.random())


class GlobalDraws(Dataset):
    """Draws from the process's global generators: [index, worker, random, numpy, torch]."""

    columns = ("index", "worker", "random", "numpy", "torch")

    def __init__(self, n: int = 12):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        values = [index, worker_id(), random.random(), np.random.random(), torch.rand(()).item()]
        return torch.tensor(values, dtype=torch.float64)


class HeldRng(Dataset):
    """The bug: a generator made in __init__, copied into every worker. Returns [index, worker, draw]."""

    def __init__(self, n: int = 12, kind: str = "numpy", seed: int = 0):
        self.n = n
        self.rng = make_rng(kind, seed)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor([index, worker_id(), draw(self.rng)], dtype=torch.float64)


class InheritedNumpyState:
    """A worker_init_fn that gives each worker NumPy's global state as the parent had it (torch < 1.9)."""

    def __init__(self):
        self.state = np.random.get_state()

    def __call__(self, worker_id: int) -> None:
        np.random.set_state(self.state)


def seed_globals(worker_id: int) -> None:
    """The fix claim C15 recommends: seed the global random and NumPy from torch.initial_seed()."""
    seed = torch.initial_seed() % 2**32
    random.seed(seed)
    np.random.seed(seed)


def seed_from_worker_id(worker_id: int) -> None:
    """A fix that misses: seed torch's global generator from a fixed number plus the worker id."""
    torch.manual_seed(1234 + worker_id)


def reseed_worker(worker_id: int) -> None:
    """A fix that misses once the dataset is wrapped: replace the attribute of get_worker_info().dataset."""
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)  # info.seed = base_seed + worker id
