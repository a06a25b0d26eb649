"""Written by notebook 07, section 4: the recipe: keep the seed, build the generator in the worker."""

import torch
from lesson07_draws import draw, make_rng, worker_id  # section 2's module
from torch.utils.data import Dataset, get_worker_info


class LazyRng(Dataset):
    """The fix: a generator built on first use in each worker, from its seed. Returns [index, worker,
    draw]."""

    def __init__(self, n: int = 12, kind: str = "numpy", seed: int = 0):
        self.n, self.kind, self.seed = n, kind, seed  # keep the seed, not a generator
        self.rng, self.rng_seed = None, None

    def __len__(self) -> int:
        return self.n

    def generator(self):
        info = get_worker_info()
        seed = info.seed if info is not None else torch.initial_seed()
        if seed != self.rng_seed:  # first draw in this worker (a new worker, a new seed)
            self.rng, self.rng_seed = make_rng(self.kind, [seed, self.seed]), seed
        return self.rng

    def __getstate__(self):  # workers build their own generator: never send one
        return {**self.__dict__, "rng": None, "rng_seed": None}

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor([index, worker_id(), draw(self.generator())], dtype=torch.float64)
