"""A loader whose order *and* worker randomness repeat across runs.

One seeded generator drives the shuffle and the workers' base seed; each worker's seed is
base_seed + worker id, so the same seed with another num_workers gives other augmentations,
and with num_workers=0 no worker is seeded at all (augmentations drawn from the global
generators then follow the main process's torch.manual_seed). Keep num_workers with the seed
in the run's configuration. Seed once: each epoch draws a new order from the running generator.
Re-seeding with the same seed every epoch makes every epoch identical; when one epoch must be
reproducible on its own, seed with seed + epoch, as DistributedSampler.set_epoch does. Notebook 07.
"""

import torch
from torch.utils.data import DataLoader


def reproducible_loader(dataset, seed, num_workers, batch_size=32, worker_init_fn=None):
    # same seed AND same num_workers (> 0): same order, same augmentations
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                      generator=torch.Generator().manual_seed(seed),  # seeded once, not every epoch
                      worker_init_fn=worker_init_fn)
