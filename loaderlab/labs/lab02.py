"""Lab 02's scaffolding: ``split_datasets()``, the training and validation sets the lab's loaders
read (also what its checker, ``loaderlab.checks.lab02``, traces)."""

from __future__ import annotations

import torch
from torch.utils.data import TensorDataset

N_TRAIN, N_VAL, VAL_FIRST_ID = 65, 23, 1000


def split_datasets() -> tuple[TensorDataset, TensorDataset]:
    """Return ``(train_set, val_set)``: samples ``(FloatTensor[4], id)``, ids 0-64 and 1000-1022."""
    generator = torch.Generator().manual_seed(0)
    train = TensorDataset(torch.randn(N_TRAIN, 4, generator=generator), torch.arange(N_TRAIN))
    val = TensorDataset(torch.randn(N_VAL, 4, generator=generator),
                        torch.arange(VAL_FIRST_ID, VAL_FIRST_ID + N_VAL))
    return train, val
