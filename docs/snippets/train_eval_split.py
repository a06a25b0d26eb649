"""Split once into indices, then build training and validation sets with their own transforms.

`random_split(dataset, ...)` returns two `Subset`s of the same dataset object: validation
reads the training transform, random augmentation included, and setting the transform on one
changes it for both. Build the dataset twice, once per transform, and split one list of
indices between them. Notebook 22.
"""

import torch
from torch.utils.data import Subset


def split_indices(n, val_fraction=0.2, seed=0):
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()
    n_train = n - int(n * val_fraction)
    return order[:n_train], order[n_train:]  # random_split's indices for the same seed and lengths


def train_and_val_sets(make_dataset, train_transform, val_transform, val_fraction=0.2, seed=0):
    train_full, val_full = make_dataset(train_transform), make_dataset(val_transform)  # same files
    train_idx, val_idx = split_indices(len(train_full), val_fraction, seed)
    return Subset(train_full, train_idx), Subset(val_full, val_idx)
