"""Reseed a generator that your Dataset created in __init__, once per worker.

torch already seeds `random`, `torch` and NumPy's *global* generator differently in every
worker; a generator the dataset holds (`self.rng = np.random.default_rng(...)`) is copied as
is into every worker and repeats. Derive its seed from the worker's torch seed, which changes
every epoch and follows `DataLoader(generator=...)`. Notebook 07.
"""

import numpy as np
from torch.utils.data import get_worker_info


def worker_init_fn(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)  # info.seed = base_seed + worker_id
