"""From a hand-written batching loop to a DataLoader, then workers that load while you train.

The same batches in the same order as the loop; worker processes then fetch while the
training step runs. Notebook 01.
"""

import torch
from torch.utils.data import DataLoader


def same_order_loader(dataset, order, batch_size=16):
    # the same order as your old loop: any iterable of indices is a sampler
    return DataLoader(dataset, batch_size=batch_size, sampler=order)


def overlapping_loader(dataset, batch_size=16, num_workers=2, seed=0):
    # overlap loading with training: workers fetch while the main process steps
    generator = torch.Generator().manual_seed(seed)
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, generator=generator,
                      num_workers=num_workers)
