"""Checker for lab 02: a training loader without a short last batch, a validation loader that sees
every sample once, in the same order on every pass. ``make_loaders(train_set, val_set, batch_size)``
gets 65 training samples ``(features, id)`` with ids 0-64 and 23 validation ones (ids 1000-1022),
traced over two epochs each, for batch sizes 32 and 10 (neither divides 65 or 23)."""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import torch
from torch.utils.data import DataLoader

from loaderlab.checks.report import Wrong, checker, epoch
from loaderlab.labs.lab02 import N_TRAIN, N_VAL, VAL_FIRST_ID, split_datasets

HINT = "Hint: notebook 02, sections 4 (drop_last) and 5 (shuffle=True is a RandomSampler)."
BATCH_SIZES = (32, 10)


def _two_epochs(loader: DataLoader, name: str) -> tuple[list[list[int]], list[int]]:
    """Return the sample ids of two epochs of ``loader``, and the sizes of its batches."""
    orders, sizes = [], []
    for _ in range(2):
        batches = epoch(loader, N_TRAIN + N_VAL)  # a stream that never ends stops
        if not all(
            isinstance(b, (list, tuple))
            and len(b) == 2
            and isinstance(b[1], torch.Tensor)
            and b[1].dim() == 1
            for b in batches
        ):
            raise Wrong(
                f"the {name} loader's batches are not (features, ids) pairs as the default "
                f"collate_fn makes them: keep the default collate_fn. {HINT}"
            )
        orders.append([int(i) for b in batches for i in b[1]])
        sizes += [len(b[1]) for b in batches]
    return orders, sizes


def _check_train(orders: list[list[int]], sizes: list[int], batch_size: int) -> None:
    if max(sizes, default=0) > batch_size:
        raise Wrong(
            f"with batch_size={batch_size} the train loader yields batches of {max(sizes)} "
            f"samples: pass batch_size on to the DataLoader. {HINT}"
        )
    if min(sizes, default=batch_size) < batch_size:
        q, r = divmod(N_TRAIN, batch_size)
        raise Wrong(
            f"with batch_size={batch_size} the train loader's last batch holds "
            f"{min(sizes)} sample(s) ({N_TRAIN} = {q} × {batch_size} + {r}), a batch that "
            f"BatchNorm cannot train on: drop_last=True for training. {HINT}"
        )
    full = N_TRAIN - N_TRAIN % batch_size
    for order in orders:
        repeated = [i for i, n in collections.Counter(order).items() if n > 1]
        if repeated or len(order) != full:
            what = f"sample {repeated[0]} twice" if repeated else f"{len(order)} samples"
            raise Wrong(
                f"one training epoch yields {what}; a shuffled epoch of {N_TRAIN} samples "
                f"in batches of {batch_size} holds {full} different ones. {HINT}"
            )
    if orders[0] == sorted(orders[0]):
        raise Wrong(
            f"the train loader yields the samples in index order (0, 1, 2, ...): shuffle "
            f"the training data (shuffle=True). {HINT}"
        )
    if orders[0] == orders[1]:
        raise Wrong(
            f"both training epochs come in the same shuffled order: the order was fixed "
            f"once (e.g. a shuffled list as sampler); shuffle=True draws a new one every "
            f"epoch. {HINT}"
        )


def _check_val(orders: list[list[int]], loader: DataLoader) -> None:
    for order in orders:
        missing = sorted(set(range(VAL_FIRST_ID, VAL_FIRST_ID + N_VAL)) - set(order))
        repeated = [i for i, n in collections.Counter(order).items() if n > 1]
        if missing and loader.drop_last:
            raise Wrong(
                f"the validation loader drops {len(missing)} of its {N_VAL} samples "
                f"(drop_last=True): validation must see every sample, keep "
                f"drop_last=False there. {HINT}"
            )
        if missing or repeated:
            what = f"misses sample {missing[0]}" if missing else f"yields sample {repeated[0]} twice"
            raise Wrong(
                f"one validation pass {what}: every validation sample must come exactly "
                f"once (no sampler drawing with replacement). {HINT}"
            )
    if orders[0] != orders[1]:
        raise Wrong(
            f"the validation order changes between passes: keep shuffle=False there, so "
            f"that every evaluation sees the samples in the same order. {HINT}"
        )


@checker
def check_split_loaders(make_loaders: Callable[..., Any]) -> str:
    """Return a confirmation if ``make_loaders(train_set, val_set, batch_size)`` returns a train
    loader with full, reshuffled batches and a validation loader that yields every sample once,
    in the same order on every pass; raise Wrong with the first problem found."""
    for batch_size in BATCH_SIZES:
        loaders = make_loaders(*split_datasets(), batch_size)
        if not (
            isinstance(loaders, tuple)
            and len(loaders) == 2
            and all(isinstance(x, DataLoader) for x in loaders)
        ):
            got = f"a {len(loaders)}-tuple" if isinstance(loaders, tuple) else type(loaders).__name__
            raise Wrong(
                f"make_loaders must return two DataLoaders (train_loader, val_loader), got {got}. {HINT}"
            )
        (train, sizes), (val, _) = _two_epochs(loaders[0], "train"), _two_epochs(loaders[1], "validation")
        if max(train[0], default=0) >= VAL_FIRST_ID or min(val[0], default=VAL_FIRST_ID) < VAL_FIRST_ID:
            raise Wrong(
                f"the train loader yields validation samples or the other way round: return "
                f"(train_loader, val_loader), in that order, each over its own dataset. {HINT}"
            )
        _check_train(train, sizes, batch_size)
        _check_val(val, loaders[1])
    return (
        f"train batches always full and reshuffled every epoch, every validation sample once "
        f"in a fixed order, for batch sizes {' and '.join(map(str, BATCH_SIZES))}"
    )
