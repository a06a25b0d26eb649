"""Thread-based parallel loading (``torchdata.nodes.ParallelMapper``) next to DataLoader
worker processes: a batch-fetching map function, a loader builder, a pure-Python CPU-bound
dataset, a probe of where samples are loaded, and a timer for any iterable of batches.

The GIL decides the comparison: threads overlap work that releases it (sleeps, I/O, PIL
decoding, most torch ops) and take turns on work that does not (a Python loop).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import psutil
import torch
from torch.utils.data import (
    BatchSampler,
    Dataset,
    SequentialSampler,
    default_collate,
    get_worker_info,
)

from loaderlab.loaders import batch_size_of, require_positive, stop_workers

METHODS = ("thread", "process")


class PythonLoopDataset(Dataset):
    """Samples that cost ``iterations`` steps of a pure-Python loop each: CPU work that holds
    the GIL the whole time (think tokenising in Python, parsing JSON by hand).

    Returns ``(features: FloatTensor[4], label: int)``; the features depend on the index only.
    """

    def __init__(self, n: int = 64, iterations: int = 20_000) -> None:
        self.n = require_positive(n, "n")
        self.iterations = require_positive(iterations, "iterations")

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        if not 0 <= index < self.n:
            raise IndexError(f"index {index} out of range for {self.n} samples")
        total = 0
        for step in range(self.iterations):  # bytecode: the GIL is held throughout
            total = (total + step * index) % 1_000_003
        return torch.full((4,), float(index)), total % 2


class WhereLoaded(Dataset):
    """Returns, for each index, where it was loaded: ``(index, pid, thread id, worker
    method)`` as a LongTensor ``[4]`` — worker method 1 for a DataLoader process worker (from
    ``get_worker_info().worker_method``), 0 when ``get_worker_info()`` is None."""

    def __init__(self, n: int = 16, latency_s: float = 0.0) -> None:
        self.n = require_positive(n, "n")
        if isinstance(latency_s, bool) or not isinstance(latency_s, (int, float)) or latency_s < 0:
            raise ValueError(f"latency_s must be a number of seconds >= 0, got {latency_s!r}")
        self.latency_s = float(latency_s)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        if self.latency_s:
            time.sleep(self.latency_s)
        info = get_worker_info()
        method = 0 if info is None else (1 if info.worker_method == "multiprocessing" else 2)
        return torch.tensor([index, os.getpid(), threading.get_ident() % 2**62, method])


class FetchBatch:
    """A map function for ``ParallelMapper``: returns ``collate_fn([dataset[i] for i in
    indices])`` — what a DataLoader worker does with one batch of indices.

    A class rather than a closure, so a process worker started with ``spawn`` can unpickle it.
    """

    def __init__(self, dataset: Dataset, collate_fn: Callable[[list[Any]], Any] = default_collate) -> None:
        if not hasattr(dataset, "__getitem__"):
            raise TypeError(f"dataset must be a map-style dataset, got {type(dataset).__name__}")
        if not callable(collate_fn):
            raise TypeError(f"collate_fn must be callable, got {type(collate_fn).__name__}")
        self.dataset, self.collate_fn = dataset, collate_fn

    def __call__(self, indices: Sequence[int]) -> Any:
        return self.collate_fn([self.dataset[i] for i in indices])


def parallel_loader(dataset: Dataset, batch_size: int, num_workers: int, method: str = "thread",
                    in_order: bool = True) -> Any:
    """Return a ``torchdata.nodes.Loader`` that yields the same batches, in the same order, as
    ``DataLoader(dataset, batch_size, shuffle=False)``, loading them in ``num_workers`` threads
    (``method="thread"``) or processes (``"process"``) of ``ParallelMapper``.

    Sampler → batches of indices → ``FetchBatch`` in parallel → Loader: the DataLoader's
    pipeline, rebuilt from nodes. ``ParallelMapper`` keeps at most ``2 * num_workers`` batches
    in flight (its default ``max_concurrent``).
    """
    import torchdata.nodes as tn

    if not hasattr(dataset, "__len__"):
        raise TypeError(f"dataset must be a map-style dataset with a length, got {type(dataset).__name__}")
    require_positive(batch_size, "batch_size")
    require_positive(num_workers, "num_workers")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    batches = BatchSampler(SequentialSampler(dataset), batch_size=batch_size, drop_last=False)
    node = tn.SamplerWrapper(batches)
    node = tn.ParallelMapper(node, map_fn=FetchBatch(dataset), num_workers=num_workers,
                             method=method, in_order=in_order)
    return tn.Loader(node)


@dataclass
class LoadTiming:
    """What ``time_loading`` measured over one pass: counts, total time, time to the first
    batch (start-up + one batch) and the steady rate after the first batch."""

    batches: int
    samples: int
    seconds: float
    first_batch_s: float

    @property
    def samples_per_s(self) -> float:
        return self.samples / self.seconds

    @property
    def steady_samples_per_s(self) -> float:
        """Samples per second counted from the arrival of the first batch (start-up left out)."""
        if self.batches < 2:
            raise ValueError("need at least 2 batches to measure after the first one")
        first = self.samples / self.batches
        return (self.samples - first) / (self.seconds - self.first_batch_s)


def time_loading(batches: Iterable[Any]) -> LoadTiming:
    """Return a LoadTiming of one full pass over ``batches`` (any iterable: a DataLoader or a
    ``torchdata.nodes.Loader``); the clock starts before ``iter()``, so start-up counts in
    ``first_batch_s``. DataLoader workers are shut down before returning, unless they are
    persistent (``loaderlab.workers.close_workers`` stops those)."""
    if not isinstance(batches, Iterable):
        raise TypeError(f"batches must be an iterable of batches, got {type(batches).__name__}")
    start = time.perf_counter()
    iterator = iter(batches)
    first = None
    count = samples = 0
    try:
        for batch in iterator:
            if first is None:
                first = time.perf_counter() - start
            count += 1
            samples += batch_size_of(batch)
    finally:
        if not getattr(batches, "persistent_workers", False):
            stop_workers(iterator)
        del iterator
    if first is None:
        raise ValueError("batches yielded nothing: nothing to time")
    return LoadTiming(count, samples, time.perf_counter() - start, first)


@dataclass
class MethodRun:
    """One pass of ``compare_methods``: its LoadTiming and the CPU seconds spent per wall
    second (this process's threads plus finished worker processes): how many cores it used."""

    method: str
    timing: LoadTiming
    cores_used: float


def _cpu_seconds() -> float:
    me = psutil.Process()
    times = me.cpu_times()
    total = times.user + times.system + times.children_user + times.children_system
    for child in me.children(recursive=True):  # live workers (persistent ones are not reaped)
        try:
            child_times = child.cpu_times()
        except psutil.Error:
            continue
        total += child_times.user + child_times.system
    return total


def compare_methods(dataset: Dataset, batch_size: int, num_workers: int,
                    repeats: int = 1) -> list[dict[str, MethodRun]]:
    """Return, for each of ``repeats`` rounds, ``{"main process", "threads", "processes"}`` →
    MethodRun of one pass over ``dataset`` each: a DataLoader without workers,
    ``parallel_loader`` with ``num_workers`` threads, and a DataLoader with ``num_workers``
    worker processes (same batches, same order). The three passes of a round run back to
    back; the worker processes persist across rounds (started once, shut down at the end).
    """
    from torch.utils.data import DataLoader

    from loaderlab.workers import close_workers

    require_positive(batch_size, "batch_size")
    require_positive(num_workers, "num_workers")
    require_positive(repeats, "repeats")
    loaders = {
        "main process": DataLoader(dataset, batch_size=batch_size),
        "threads": parallel_loader(dataset, batch_size, num_workers, method="thread"),
        "processes": DataLoader(dataset, batch_size=batch_size, num_workers=num_workers,
                                persistent_workers=True),
    }
    rounds = []
    try:
        for _ in range(repeats):
            runs = {}
            for name, loader in loaders.items():
                cpu = _cpu_seconds()
                timing = time_loading(loader)
                runs[name] = MethodRun(name, timing, (_cpu_seconds() - cpu) / timing.seconds)
            rounds.append(runs)
    finally:
        close_workers(loaders["processes"])
    return rounds


def speedups(runs: Sequence[dict[str, MethodRun]]) -> dict[str, float]:
    """Return, per method, the median over ``runs`` (results of repeated ``compare_methods``)
    of its steady samples/s divided by the main process's in the same run: each ratio compares
    passes made moments apart, so a burst of load from other programs skews one ratio, not
    the median."""
    if not runs or any(not isinstance(r, dict) or "main process" not in r for r in runs):
        raise ValueError("runs must be a non-empty list of compare_methods results")
    ratios: dict[str, list[float]] = {}
    for run in runs:
        base = run["main process"].timing.steady_samples_per_s
        for method, result in run.items():
            ratios.setdefault(method, []).append(result.timing.steady_samples_per_s / base)
    return {method: sorted(values)[len(values) // 2] for method, values in ratios.items()}


def median_cores(runs: Sequence[dict[str, MethodRun]], method: str) -> float:
    """Return the median, over ``runs``, of the cores that ``method`` used."""
    if not runs or any(method not in r for r in runs):
        raise ValueError(f"every run must have a result for method {method!r}")
    values = sorted(r[method].cores_used for r in runs)
    return values[len(values) // 2]


def where_loaded(batches: Iterable[torch.Tensor]) -> dict[str, Any]:
    """Return a summary of the ``WhereLoaded`` batches in ``batches``: how many distinct
    processes and threads loaded them, whether any ran in this process, and the worker
    methods that ``get_worker_info()`` reported (``None`` = no worker info)."""
    rows = torch.cat([torch.as_tensor(b).reshape(-1, 4) for b in batches])
    if not len(rows):
        raise ValueError("batches yielded nothing")
    names = {0: None, 1: "multiprocessing", 2: "thread"}
    pids = set(rows[:, 1].tolist())
    return {
        "samples": len(rows),
        "processes": len(pids),
        "threads": len(set(zip(rows[:, 1].tolist(), rows[:, 2].tolist(), strict=True))),
        "in_main_process": os.getpid() in pids,
        "worker_methods": sorted({names[m] for m in rows[:, 3].tolist()}, key=str),
    }


def gil_status() -> str:
    """Return whether this interpreter runs with the GIL: ``"enabled"``, ``"disabled"`` (a
    free-threaded 3.13+ build running without it) or ``"enabled (Python < 3.13)"``."""
    import sys

    probe = getattr(sys, "_is_gil_enabled", None)
    if probe is None:
        return f"enabled (Python {sys.version_info.major}.{sys.version_info.minor} always has it)"
    return "enabled" if probe() else "disabled"
