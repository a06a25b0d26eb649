"""Lab 12: what a spawned worker imports (written by this cell; edit it here)."""

import torch
from torch.utils.data import Dataset


class Squares(Dataset):
    """Sample i is the tensor [i, i * i]."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        ### BEGIN SOLUTION
        return torch.tensor([index, index * index])
        ### END SOLUTION


def stack(batch: list) -> torch.Tensor:
    """The collate_fn: the samples of a batch stacked into one tensor [B, 2]."""
    ### BEGIN SOLUTION
    return torch.stack(batch)
    ### END SOLUTION


def limit_threads(worker_id: int, threads: int) -> None:
    """The worker_init_fn, once threads is bound: each worker computes on that many threads."""
    ### BEGIN SOLUTION
    torch.set_num_threads(threads)
    ### END SOLUTION
