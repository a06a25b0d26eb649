"""Lesson 17, section 2: draws from the global generators, and two worker_init_fns around them."""

import random

import numpy as np
import torch
from torch.utils.data import Dataset


class GlobalDraws(Dataset):
    """Draws from the process's global generators: [index, random, numpy, torch]."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        values = [index, random.random(), np.random.random(), torch.rand(()).item()]
        return torch.tensor(values, dtype=torch.float64)


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
