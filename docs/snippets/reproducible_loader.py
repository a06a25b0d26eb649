"""A loader whose order *and* worker randomness repeat across runs.

One seeded generator drives the shuffle and the workers' base seed. Seed it once, not every
epoch: re-seeding each epoch makes every epoch identical. Notebook 07.
"""

import torch
from torch.utils.data import DataLoader


def reproducible_loader(dataset, seed, batch_size=32, num_workers=2, worker_init_fn=None):
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                      generator=torch.Generator().manual_seed(seed),
                      worker_init_fn=worker_init_fn)
