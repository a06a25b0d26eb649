"""Lab 07: a Dataset whose random draws differ in every worker and epoch (workers import this module;
edit it in the cell)."""

import numpy as np
import torch
from torch.utils.data import Dataset, get_worker_info


class Augmented(Dataset):
    """Rows [index, worker, draw] like HeldRng's; the draw comes from a generator built where it is used."""

    def __init__(self, n: int = 16, seed: int = 0):
        self.n, self.seed = n, seed  # keep the seed, never a generator
        self.rng, self.rng_seed = None, None  # built by generator(), in the process that draws

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        info = get_worker_info()
        worker = info.id if info is not None else -1
        return torch.tensor([index, worker, self.generator().random()], dtype=torch.float64)

    def generator(self) -> np.random.Generator:
        """This process's generator: built from the worker's seed (torch.initial_seed() without
        workers) mixed with self.seed, and built again when that seed changes (a new epoch)."""
        ### BEGIN SOLUTION
        info = get_worker_info()
        seed = info.seed if info is not None else torch.initial_seed()
        if seed != self.rng_seed:  # first draw in this process, or a new epoch's worker
            self.rng, self.rng_seed = np.random.default_rng([seed, self.seed]), seed
        return self.rng
        ### END SOLUTION

    def __getstate__(self) -> dict:
        """What pickle sends to a spawned worker: everything but the generator."""
        ### BEGIN SOLUTION
        return {**self.__dict__, "rng": None, "rng_seed": None}
        ### END SOLUTION
