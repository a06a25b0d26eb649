"""Written by notebook 13, section 2: a dataset with random augmentation whose generator a loader saves."""

import numpy as np
import torch
from torch.utils.data import Dataset, get_worker_info


class NoisyDataset(Dataset):
    """(features[i] + noise, i): a fixed row plus noise from a generator built in the process that draws."""

    def __init__(self, n: int, dim: int = 4, seed: int = 0, global_rng: bool = False):
        self.features = torch.arange(n * dim, dtype=torch.float32).reshape(n, dim)
        self.seed, self.global_rng = seed, global_rng  # keep the seed, not a generator (notebook 07)
        self.rng, self.rng_seed = None, None
        self.fetched = torch.zeros(n, dtype=torch.int64).share_memory_()  # fetches, counted in every process

    def generator(self) -> np.random.Generator:
        info = get_worker_info()
        seed = info.seed if info is not None else torch.initial_seed()
        if seed != self.rng_seed:  # first draw in this worker (new workers: a new seed)
            self.rng, self.rng_seed = np.random.default_rng([seed, self.seed]), seed
        return self.rng

    def __getstate__(self) -> dict:  # workers build their own generator: never send one
        return {**self.__dict__, "rng": None, "rng_seed": None}

    def __len__(self) -> int:
        return len(self.features)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        self.fetched[index] += 1
        dim = self.features.shape[1]
        if self.global_rng:
            noise = torch.rand(dim)
        else:
            noise = torch.from_numpy(self.generator().random(dim, np.float32))
        return self.features[index] + noise, index


class StatefulNoisyDataset(NoisyDataset):
    """NoisyDataset whose generator a StatefulDataLoader saves and restores, in every worker."""

    def state_dict(self) -> dict:
        return {"generator": self.generator().bit_generator.state}

    def load_state_dict(self, state: dict) -> None:  # a new worker's generator, moved to the saved state
        self.generator().bit_generator.state = state["generator"]
