"""Training without a tiny last batch, validation over every sample, a fixed mixed order for debugging.

Training drops the incomplete last batch (a batch of one breaks BatchNorm in training mode);
validation keeps it, in order, so every sample counts exactly once. While debugging, a sampler
with its own generator, seeded once, gives the same batches every run without storage order's
one-class batches (a new order each epoch; re-seeding every epoch would repeat the first).
Notebook 02.
"""

import torch
from torch.utils.data import DataLoader, RandomSampler


def train_and_val_loaders(train_set, val_set, batch_size=32):
    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, drop_last=True)
    val_loader = DataLoader(val_set, batch_size=batch_size, shuffle=False, drop_last=False)
    return train_loader, val_loader


def debug_loader(train_set, batch_size=32, seed=0):
    # a fixed but mixed order while debugging: seeded once, each run repeats the same epochs
    sampler = RandomSampler(train_set, generator=torch.Generator().manual_seed(seed))
    return DataLoader(train_set, batch_size=batch_size, sampler=sampler, drop_last=True)
