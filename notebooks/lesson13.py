"""Lesson 13: a dataset with random augmentation, the state_dict that saves its generator, and
the worker seeding it needs (workers import this module)."""

import torch
from torch.utils.data import Dataset, get_worker_info


class NoisyDataset(Dataset):
    """(features[i] + noise, i): a fixed row plus random noise from the dataset's own generator."""

    def __init__(self, n: int, dim: int = 4, seed: int = 0, global_rng: bool = False):
        self.features = torch.arange(n * dim, dtype=torch.float32).reshape(n, dim)
        self.generator = torch.Generator().manual_seed(seed)  # each worker gets its own: seed_worker_generator
        self.global_rng = global_rng  # True: draw from torch's global RNG instead, as transform libraries do
        self.fetched = torch.zeros(n, dtype=torch.int64).share_memory_()  # fetches, counted in every process

    def __getstate__(self) -> dict:
        return {**self.__dict__, "generator": None}  # a Generator cannot travel to a spawned worker (notebook 07)

    def __len__(self) -> int:
        return len(self.features)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        self.fetched[index] += 1
        noise = torch.rand(self.features.shape[1], generator=None if self.global_rng else self.generator)
        return self.features[index] + noise, index


class StatefulNoisyDataset(NoisyDataset):
    """NoisyDataset whose generator a StatefulDataLoader saves and restores, in every worker."""

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.generator.set_state(state["generator"])


def seed_worker_generator(worker_id: int) -> None:
    """worker_init_fn: give this worker's dataset a generator of its own, seeded with the worker's seed."""
    info = get_worker_info()
    info.dataset.generator = torch.Generator().manual_seed(info.seed)
