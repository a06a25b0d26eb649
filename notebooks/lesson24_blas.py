"""Written by notebook 24, section 1: samples that run NumPy matrix products; a worker_init_fn for BLAS."""

import numpy as np
import torch
from threadpoolctl import threadpool_info, threadpool_limits
from torch.utils.data import Dataset, get_worker_info


class MatmulSamples(Dataset):
    """Returns a small summary of `repeats` NumPy products of a size × size matrix: BLAS work."""

    def __init__(self, n: int, size: int = 256, repeats: int = 4):
        self.n, self.size, self.repeats = n, size, repeats

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        a = np.random.default_rng(index).standard_normal((self.size, self.size), dtype=np.float32)
        for _ in range(self.repeats):
            a = (a @ a.T) / self.size  # NumPy's BLAS, with as many threads as it was given
        return torch.from_numpy(a[:4, :4].copy())


def one_blas_thread(worker_id: int) -> None:
    """worker_init_fn: this worker's BLAS (and OpenMP) pools use one thread each."""
    threadpool_limits(limits=1)


def thread_counts(index: int) -> dict:
    """What this process runs with: torch's intra-op threads and each native thread pool's size."""
    info = get_worker_info()
    return {"worker": info.id if info else None, "torch": torch.get_num_threads(),
            **{pool["internal_api"]: pool["num_threads"] for pool in threadpool_info()}}
