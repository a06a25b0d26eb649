"""Checker for lab 04: decode every image once, then serve later epochs from memory, same batches.

The lab builds the starting loader in a visible cell: notebook 04's ``ImageFiles`` (in
``lesson04.py``, it decodes a JPEG on every access) over 120 images of 96×96 with labels
0-119, ``batch_size=16``, a fixed shuffled order passed as ``sampler``, ``num_workers=0``; and
passes it: ``check_cached_loader(tune, slow_loader)``. The student's ``tune(loader) ->
DataLoader`` returns a loader over cached samples (or one that fetches a batch at once with
``__getitems__``). The checker reads one epoch of it (the cache may fill then, or before) and
compares its batches with the starting loader's, exactly; then it times its next epochs (best of up to
3) against the starting loader's epoch (best of 2) and wants at least 3x.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

import torch
from torch.utils.data import DataLoader

from loaderlab.checks.report import Wrong, checker
from loaderlab.loaders import batch_size_of, same_batch, stop_workers

HINT = ("Hint: notebook 04, section 2 'Caching decoded tensors in memory' (and section 3, "
        "`__getitems__`).")
MIN_SPEEDUP = 3.0
TIMEOUT_S = 60.0  # per batch, for a loader with workers: a stuck worker cannot hang the checker


def _epoch(loader: DataLoader, limit: int | None = None) -> tuple[list[Any], float]:
    """Return the batches of one pass over ``loader`` (at most ``limit``: a stream that never
    ends cannot hang the checker) and the seconds it took."""
    start = time.perf_counter()
    batches = list(itertools.islice(loader, limit))
    return batches, time.perf_counter() - start


def _describe(batch: Any) -> str:
    if isinstance(batch, (list, tuple)) and all(isinstance(t, torch.Tensor) for t in batch):
        return "(" + ", ".join(f"{t.dtype} {list(t.shape)}" for t in batch) + ")"
    return type(batch).__name__


def _difference(batch: Any, expected: Any) -> str:
    """One clause saying how ``batch`` differs from ``expected`` (an (images, labels) pair)."""
    if _describe(batch) != _describe(expected):
        return (f"it is {_describe(batch)}, the starting loader's {_describe(expected)}: cache "
                f"the tensors the dataset returns, unchanged (same dtype, same shape)")
    if not torch.equal(batch[1], expected[1]):
        return (f"it holds the samples labelled {batch[1][:4].tolist()}..., not "
                f"{expected[1][:4].tolist()}...: keep the starting loader's sampler (shuffle=True "
                f"draws a new order)")
    return ("the right samples, but other pixel values: cache the tensors the dataset returns, "
            "unchanged")


def _compare(batches: list[Any], expected: list[Any], batch_size: int) -> None:
    sizes, wanted = [batch_size_of(b) for b in batches], [batch_size_of(b) for b in expected]
    if sizes != wanted:
        raise Wrong(f"your loader yields {len(batches)} batches of up to {max(sizes, default=0)} "
                    f"samples, the starting loader {len(expected)} batches of {batch_size} (the "
                    f"last of {wanted[-1]}): keep batch_size, the sampler and drop_last=False. {HINT}")
    for k, (batch, reference) in enumerate(zip(batches, expected, strict=True)):
        if not same_batch(batch, reference):
            raise Wrong(f"batch {k} is not the starting loader's batch {k}: "
                        f"{_difference(batch, reference)}. {HINT}")


@checker
def check_cached_loader(tune: Callable[[DataLoader], DataLoader], slow_loader: DataLoader) -> str:
    """Return a confirmation if ``tune(slow_loader)`` yields the same batches and, from its second
    epoch on, at least 3x faster; raise Wrong with the first problem found."""
    if not isinstance(slow_loader, DataLoader) or slow_loader.num_workers:
        raise Wrong(f"check_cached_loader(tune, slow_loader) needs the lab's starting loader "
                    f"(a DataLoader with num_workers=0) as slow_loader, got "
                    f"{type(slow_loader).__name__}: run the cell that builds it.")
    # One intra-op thread, as in a DataLoader worker: with two, a parallel kernel (index_select
    # of a batch) waits for a thread that a busy core has descheduled, milliseconds per call.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _check(tune, slow_loader)
    finally:
        torch.set_num_threads(threads)


def _check(tune: Callable[[DataLoader], DataLoader], slow_loader: DataLoader) -> str:
    expected, first_s = _epoch(slow_loader)
    base_s = min(first_s, _epoch(slow_loader)[1])
    tuned = tune(slow_loader)
    if not isinstance(tuned, DataLoader):
        raise Wrong(f"tune(loader) must return a DataLoader, got {type(tuned).__name__}. {HINT}")
    if tuned.num_workers:
        tuned.timeout = TIMEOUT_S
    try:
        batches, _ = _epoch(tuned, len(expected) + 1)  # the cache may fill now
        _compare(batches, expected, slow_loader.batch_size)
        times: list[float] = []
        while len(times) < 3 and sum(times) < 10 * base_s:  # best of 3, unless hopeless
            times.append(_epoch(tuned, len(expected) + 1)[1])
            if base_s / min(times) >= MIN_SPEEDUP:
                break
        epoch_s = min(times)
    finally:  # persistent workers stay in tuned._iterator: the checker owns them, stop them
        stop_workers(getattr(tuned, "_iterator", None))
        tuned._iterator = None
    speedup = base_s / epoch_s
    if speedup < MIN_SPEEDUP and tuned.num_workers:
        raise Wrong(f"same batches, but later epochs are only {speedup:.1f}x as fast as the "
                    f"starting loader's; the goal is {MIN_SPEEDUP:.0f}x. Your loader starts "
                    f"{tuned.num_workers} worker(s) every epoch, and a cache filled inside forked "
                    f"workers is thrown away with them: fill it in the main process and read "
                    f"memory with num_workers=0. {HINT}")
    if speedup < MIN_SPEEDUP:
        raise Wrong(f"same batches, but later epochs are only {speedup:.1f}x as fast as the "
                    f"starting loader's; the goal is {MIN_SPEEDUP:.0f}x: every epoch still decodes "
                    f"the files — decode each image once and keep the tensors. {HINT}")
    return (f"same batches as the starting loader, and from the second epoch on at least "
            f"{MIN_SPEEDUP:.0f}x as fast")
