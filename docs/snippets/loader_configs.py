"""Safe training and validation loaders.

Training: shuffled, reproducible, no tiny last batch (BatchNorm), workers that persist between
epochs. Validation: every sample exactly once, in order. Notebooks 02, 03, 07.
"""

import torch
from torch.utils.data import DataLoader


def make_loaders(train_set, val_set, batch_size=64, num_workers=4, seed=0):
    generator = torch.Generator().manual_seed(seed)
    workers = dict(num_workers=num_workers, persistent_workers=num_workers > 0,
                   pin_memory=torch.cuda.is_available())
    train = DataLoader(train_set, batch_size=batch_size, shuffle=True, drop_last=True,
                       generator=generator, **workers)
    val = DataLoader(val_set, batch_size=batch_size, shuffle=False, drop_last=False, **workers)
    return train, val
