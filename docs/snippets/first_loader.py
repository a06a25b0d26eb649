"""A first training loader: a reproducible shuffled order, and workers that load while you train.

Worker code (the Dataset, collate_fn, transforms) lives in a module the workers can import,
not in a notebook cell or under ``if __name__ == "__main__":``. Notebook 00.
"""

import torch
from torch.utils.data import DataLoader


def make_train_loader(dataset, batch_size=64, num_workers=2, seed=0):
    generator = torch.Generator().manual_seed(seed)  # a reproducible order
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, generator=generator,
                      num_workers=num_workers)  # workers load while you train


def train_one_epoch(loader, train_step):
    for xb, yb in loader:  # with workers, the next batches load while train_step runs
        train_step(xb, yb)
