"""Checker for lab 02: a training loader without a short last batch, a validation loader that sees
every sample once, in the same order on every pass.

The student writes ``make_loaders(train_set, val_set, batch_size) -> (train_loader, val_loader)``.
The checker builds two TensorDatasets of ``(features, id)``: 65 training samples (ids 0-64) and
23 validation samples (ids 1000-1022), so every sample can be traced, and reads two epochs of
each loader for batch sizes 32 and 10 (neither divides 65 or 23).
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable
from typing import Any

import torch
from torch.utils.data import DataLoader, TensorDataset

from loaderlab.checks.report import Wrong, checker

HINT = "Hint: notebook 02, sections 4 (drop_last) and 5 (shuffle=True is a RandomSampler)."
N_TRAIN, N_VAL, VAL_FIRST_ID = 65, 23, 1000
BATCH_SIZES = (32, 10)


def split_datasets() -> tuple[TensorDataset, TensorDataset]:
    """Return ``(train_set, val_set)``: samples ``(FloatTensor[4], id)``, ids 0-64 and 1000-1022."""
    generator = torch.Generator().manual_seed(0)
    train = TensorDataset(torch.randn(N_TRAIN, 4, generator=generator), torch.arange(N_TRAIN))
    val = TensorDataset(torch.randn(N_VAL, 4, generator=generator),
                        torch.arange(VAL_FIRST_ID, VAL_FIRST_ID + N_VAL))
    return train, val


def _epoch_ids(loader: DataLoader, name: str) -> list[list[int]]:
    """Return the sample ids of one epoch of ``loader``, batch by batch."""
    batches = []
    for batch in itertools.islice(loader, N_TRAIN + N_VAL):  # a stream that never ends stops
        if not (isinstance(batch, (list, tuple)) and len(batch) == 2
                and isinstance(batch[1], torch.Tensor) and batch[1].dim() == 1):
            raise Wrong(f"the {name} loader's batches are not (features, ids) pairs as the default "
                        f"collate_fn makes them: keep the default collate_fn. {HINT}")
        batches.append([int(i) for i in batch[1]])
    return batches


def _check_train(epochs: list[list[list[int]]], batch_size: int) -> None:
    sizes = [len(b) for epoch in epochs for b in epoch]
    if any(size > batch_size for size in sizes):
        raise Wrong(f"with batch_size={batch_size} the train loader yields batches of {max(sizes)} "
                    f"samples: pass batch_size on to the DataLoader. {HINT}")
    if any(size < batch_size for size in sizes):
        q, r = divmod(N_TRAIN, batch_size)
        raise Wrong(f"with batch_size={batch_size} the train loader's last batch holds "
                    f"{min(sizes)} sample(s) ({N_TRAIN} = {q} × {batch_size} + {r}), a batch that "
                    f"BatchNorm cannot train on: drop_last=True for training. {HINT}")
    orders = [[i for b in epoch for i in b] for epoch in epochs]
    for order in orders:
        repeated = [i for i, n in collections.Counter(order).items() if n > 1]
        if repeated or len(order) != N_TRAIN - N_TRAIN % batch_size:
            what = f"sample {repeated[0]} twice" if repeated else f"{len(order)} samples"
            raise Wrong(f"one training epoch yields {what}; a shuffled epoch of {N_TRAIN} samples "
                        f"in batches of {batch_size} holds {N_TRAIN - N_TRAIN % batch_size} "
                        f"different ones. {HINT}")
    if orders[0] == sorted(orders[0]):
        raise Wrong(f"the train loader yields the samples in index order (0, 1, 2, ...): shuffle "
                    f"the training data (shuffle=True). {HINT}")
    if orders[0] == orders[1]:
        raise Wrong(f"both training epochs come in the same shuffled order: the order was fixed "
                    f"once (e.g. a shuffled list as sampler); shuffle=True draws a new one every "
                    f"epoch. {HINT}")


def _check_val(passes: list[list[list[int]]], loader: DataLoader) -> None:
    expected = list(range(VAL_FIRST_ID, VAL_FIRST_ID + N_VAL))
    orders = [[i for b in one for i in b] for one in passes]
    for order in orders:
        missing = sorted(set(expected) - set(order))
        repeated = [i for i, n in collections.Counter(order).items() if n > 1]
        if missing and loader.drop_last:
            raise Wrong(f"the validation loader drops {len(missing)} of its {N_VAL} samples "
                        f"(drop_last=True): validation must see every sample, keep "
                        f"drop_last=False there. {HINT}")
        if missing or repeated:
            what = f"misses sample {missing[0]}" if missing else f"yields sample {repeated[0]} twice"
            raise Wrong(f"one validation pass {what}: every validation sample must come exactly "
                        f"once (no sampler drawing with replacement). {HINT}")
    if orders[0] != orders[1]:
        raise Wrong(f"the validation order changes between passes: keep shuffle=False there, so "
                    f"that every evaluation sees the samples in the same order. {HINT}")


@checker
def check_split_loaders(make_loaders: Callable[..., Any]) -> str:
    """Return a confirmation if ``make_loaders(train_set, val_set, batch_size)`` returns a train
    loader with full, reshuffled batches and a validation loader that yields every sample once,
    in the same order on every pass; raise Wrong with the first problem found."""
    for batch_size in BATCH_SIZES:
        train_set, val_set = split_datasets()
        loaders = make_loaders(train_set, val_set, batch_size)
        if not (isinstance(loaders, tuple) and len(loaders) == 2
                and all(isinstance(x, DataLoader) for x in loaders)):
            got = (f"a {len(loaders)}-tuple" if isinstance(loaders, tuple)
                   else type(loaders).__name__)
            raise Wrong(f"make_loaders must return two DataLoaders (train_loader, val_loader), "
                        f"got {got}. {HINT}")
        train_loader, val_loader = loaders
        train = [_epoch_ids(train_loader, "train") for _ in range(2)]
        val = [_epoch_ids(val_loader, "validation") for _ in range(2)]
        train_ids = {i for epoch in train for b in epoch for i in b}
        val_ids = {i for one in val for b in one for i in b}
        if max(train_ids, default=0) >= VAL_FIRST_ID or min(val_ids, default=VAL_FIRST_ID) < VAL_FIRST_ID:
            raise Wrong(f"the train loader yields validation samples or the other way round: "
                        f"return (train_loader, val_loader), in that order, each over its own "
                        f"dataset. {HINT}")
        _check_train(train, batch_size)
        _check_val(val, val_loader)
    return (f"train batches always full and reshuffled every epoch, every validation sample once "
            f"in a fixed order, for batch sizes {' and '.join(map(str, BATCH_SIZES))}")
