"""Lab 13: a dataset with random augmentation that StatefulDataLoader can resume (workers import this
module)."""

import numpy as np
import torch
from torch.utils.data import Dataset, get_worker_info


class NoisyRows(Dataset):
    """(row i + noise, i): the noise comes from a generator this dataset builds, one per process."""

    def __init__(self, n: int = 24, dim: int = 4, seed: int = 0):
        self.features = torch.arange(n * dim, dtype=torch.float32).reshape(n, dim)
        self.seed = seed  # keep the seed, never a generator
        self.generator, self.generator_seed = None, None  # built by generator_here(), where it draws

    def __getstate__(self) -> dict:  # a Generator does not travel to a worker: each builds its own
        return {**self.__dict__, "generator": None, "generator_seed": None}

    def __len__(self) -> int:
        return len(self.features)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        noise = torch.rand(self.features.shape[1], generator=self.generator_here())
        return self.features[index] + noise, index

    def generator_here(self) -> torch.Generator:
        """This process's generator, built from the worker's seed (torch's initial seed without
        workers) and this dataset's seed, and built again when that seed changes (a new epoch)."""
        ### BEGIN SOLUTION
        info = get_worker_info()
        seed = info.seed if info is not None else torch.initial_seed()
        if seed != self.generator_seed:  # first draw in this process, or a new epoch's worker
            mixed = np.random.SeedSequence([seed, self.seed]).generate_state(1, np.uint64)[0]
            self.generator, self.generator_seed = torch.Generator().manual_seed(int(mixed)), seed
        return self.generator
        ### END SOLUTION

    def state_dict(self) -> dict:
        """What a checkpoint needs to continue the noise where it stands (tensors and plain values)."""
        ### BEGIN SOLUTION
        return {"generator": self.generator_here().get_state()}
        ### END SOLUTION

    def load_state_dict(self, state: dict) -> None:
        """Put back what state_dict() returned (in a resumed worker, after its worker_init_fn)."""
        ### BEGIN SOLUTION
        self.generator_here().set_state(state["generator"])
        ### END SOLUTION
