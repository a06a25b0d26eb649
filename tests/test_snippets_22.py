"""Notebook 22's snippet: split_indices gives random_split's indices, disjoint and complete; the two
sets share no dataset object and keep their own transforms."""

from __future__ import annotations

import torch
from course_code import snippet
from torch.utils.data import Dataset, random_split


class Numbers(Dataset):
    def __init__(self, transform, n=50):
        self.n, self.transform = n, transform

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.transform(i)


def test_split_indices_are_random_splits_disjoint_and_complete():
    train_idx, val_idx = snippet("train_eval_split").split_indices(50, val_fraction=0.2, seed=3)
    assert len(train_idx) == 40 and len(val_idx) == 10
    assert sorted(train_idx + val_idx) == list(range(50))
    a, b = random_split(range(50), [40, 10], generator=torch.Generator().manual_seed(3))
    assert (train_idx, val_idx) == (list(a.indices), list(b.indices))


def test_train_and_val_sets_keep_their_own_transforms():
    module = snippet("train_eval_split")
    noisy = lambda i: i + float(torch.rand(()))  # noqa: E731 - a random "augmentation"
    train_set, val_set = module.train_and_val_sets(Numbers, noisy, float, val_fraction=0.2, seed=0)
    assert train_set.dataset is not val_set.dataset
    first, second = [val_set[k] for k in range(10)], [val_set[k] for k in range(10)]
    assert first == second == [float(i) for i in val_set.indices]
    assert train_set[0] != train_set[0] and int(train_set[0]) == train_set.indices[0]
    assert not set(train_set.indices) & set(val_set.indices)
