"""Lab 07: the worker_init_fn the workers import (written by the cell; edit it there)."""

import numpy as np
from torch.utils.data import get_worker_info


def worker_init_fn(worker_id: int) -> None:
    """Give this worker's copy of the dataset its own generator, seeded by the loader."""
    ### BEGIN SOLUTION
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)
    ### END SOLUTION
