"""Lab 13: a dataset with random augmentation that StatefulDataLoader can resume (workers import this module)."""

import torch
from torch.utils.data import Dataset, get_worker_info


class NoisyRows(Dataset):
    """(row i + noise, i): the noise comes from a generator this dataset holds, one per process."""

    def __init__(self, n: int = 24, dim: int = 4, seed: int = 0):
        self.features = torch.arange(n * dim, dtype=torch.float32).reshape(n, dim)
        self.seed = seed
        self.generator = None  # made by generator_here(), in the process that draws

    def __getstate__(self) -> dict:
        return {**self.__dict__, "generator": None}  # a Generator does not travel to a spawned worker

    def __len__(self) -> int:
        return len(self.features)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        noise = torch.rand(self.features.shape[1], generator=self.generator_here())
        return self.features[index] + noise, index

    def generator_here(self) -> torch.Generator:
        """This process's generator, made on first use: seed in the main process, seed + 1 + worker id in a worker."""
        ### BEGIN SOLUTION
        if self.generator is None:
            info = get_worker_info()
            self.generator = torch.Generator().manual_seed(self.seed + (0 if info is None else 1 + info.id))
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
