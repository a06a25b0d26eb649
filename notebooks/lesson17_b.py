"""Lesson 17, section 1: the fix the doctor names, a worker_init_fn (it runs in the workers)."""

import numpy as np
from torch.utils.data import get_worker_info


def reseed_worker(worker_id: int) -> None:
    """Give this worker's copy of the dataset a generator seeded from the worker's seed."""
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)  # base_seed + worker id: new every epoch
