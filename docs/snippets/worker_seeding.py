"""Random augmentations that differ in every worker and epoch, and repeat with the same seed.

torch seeds `random`, `torch` and NumPy's *global* generator in every worker. A generator your
Dataset creates in `__init__` (`self.rng = np.random.default_rng(0)`) is copied into every
worker in the same state, so the workers repeat each other. Reseeding it from a worker_init_fn
(`get_worker_info().dataset.rng = ...`) silently misses it once the dataset is wrapped in a
Subset or ConcatDataset, and a held `torch.Generator` cannot even reach a spawned worker. Keep
the seed instead and build the generator where it is used, from the worker's seed and its own
(two datasets in one worker, joined by a ConcatDataset, need seeds of their own). Notebook 07.
"""

import numpy as np
import torch
from torch.utils.data import Dataset, get_worker_info


class NoisySamples(Dataset):
    """Returns samples[i] plus noise from a generator built in the worker that loads it."""

    def __init__(self, samples, noise=0.1, seed=0):
        self.samples, self.noise, self.seed = samples, noise, seed  # keep the seed, not a generator
        self.rng, self.rng_seed = None, None

    def __len__(self):
        return len(self.samples)

    def generator(self):
        info = get_worker_info()
        seed = info.seed if info is not None else torch.initial_seed()
        if seed != self.rng_seed:  # first draw in this worker (a new worker, a new seed)
            self.rng, self.rng_seed = np.random.default_rng([seed, self.seed]), seed
        return self.rng

    def __getstate__(self):  # workers build their own generator: never send one
        return {**self.__dict__, "rng": None, "rng_seed": None}

    def __getitem__(self, index):
        return self.samples[index] + self.generator().normal(0.0, self.noise)
