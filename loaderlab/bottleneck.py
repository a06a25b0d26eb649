"""Finding the input-pipeline bottleneck (notebook 14): data wait vs compute per step, the
profiler's DataLoader events and trace file, slow samples and ``in_order=False``.

The Dataset lives here so that ``spawn`` workers can unpickle it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from loaderlab.datasets import DelayedDataset
from loaderlab.loaders import require_loader, require_positive, require_seconds, stop_workers
from loaderlab.measure import Timeline
from loaderlab.workers import close_workers

STEP_EVENT = "train_step"


class SlowSamplesDataset(DelayedDataset):
    """Samples that take ``base_s`` to fetch, except those in ``slow_indices``, which take
    ``slow_s`` (a cold file, a retried network read). Returns ``(FloatTensor[1] = index, index)``.

    Delays are sleeps (the CPU stays free) chosen by index only, so every run sees the same
    slow samples.
    """

    def __init__(
        self, n: int = 64, base_s: float = 0.002, slow_s: float = 0.3, slow_indices: Sequence[int] = (0,)
    ) -> None:
        require_positive(n, "n")
        self.base_s = require_seconds(base_s, "base_s")
        self.slow_s = require_seconds(slow_s, "slow_s")
        if isinstance(slow_indices, (str, bytes)) or not all(
            isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n for i in slow_indices
        ):
            raise ValueError(f"slow_indices must be indices in 0..{n - 1}, got {slow_indices!r}")
        self.n, self.slow_indices = n, frozenset(slow_indices)

    def delay(self, index: int) -> float:
        """Return the seconds that fetching ``index`` takes."""
        return self.slow_s if index in self.slow_indices else self.base_s

    def make_sample(self, index: int) -> tuple[torch.Tensor, int]:
        return torch.tensor([float(index)]), index


def wait_split(timeline: Timeline) -> dict[str, float]:
    """Return where the steady state of one traced pass went: ``wait_s`` (inside
    ``next(loader)``), ``other_s`` (the steps) and ``wait_fraction`` (0 = never starved).

    The batches before every worker has delivered one (``timeline.warmup_batches``: worker
    start-up, notebook 12) and the workers' shutdown after the last step are left out: the
    window runs from the end of the last warm-up step to the end of the last step.
    """
    if not isinstance(timeline, Timeline):
        raise TypeError(f"timeline must be a Timeline from loaderlab.trace_timeline, got {type(timeline).__name__}")
    records = timeline.records
    warmup = timeline.warmup_batches
    if len(records) <= warmup:
        raise ValueError(f"timeline must hold more batches than its warm-up ({warmup}), got {len(records)}")
    seconds = records[-1]["step_end"] - records[warmup - 1]["step_end"]
    wait = sum(r["wait"] for r in records[warmup:])
    return {"wait_s": wait, "other_s": seconds - wait, "wait_fraction": wait / seconds if seconds else 0.0}


def bound_by(timeline: Timeline, threshold: float = 0.2) -> str:
    """Return ``"data"`` if, after the warm-up batches, the main process waited for batches more
    than ``threshold`` of the wall time (the input pipeline is the bottleneck), else
    ``"compute"``."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold < 1:
        raise ValueError(f"threshold must be a fraction between 0 and 1, got {threshold!r}")
    return "data" if wait_split(timeline)["wait_fraction"] > threshold else "compute"


def dataloader_event_name(loader: DataLoader) -> str:
    """Return the profiler event name torch records around each ``next()`` on ``loader``'s
    iterator: ``enumerate(DataLoader)#<iterator class>.__next__``
    (``torch/utils/data/dataloader.py``, ``_BaseDataLoaderIter.__init__``: ``_profile_name``)."""
    require_loader(loader)
    kind = "_MultiProcessingDataLoaderIter" if loader.num_workers > 0 else "_SingleProcessDataLoaderIter"
    return f"enumerate(DataLoader)#{kind}.__next__"


@dataclass
class ProfileSummary:
    """What ``profile_loader`` recorded: per-event counts and total durations (ms), and the
    number of events in the exported trace file."""

    batches: int
    counts: dict[str, int]
    total_ms: dict[str, float]
    trace_events: int

    def share(self, name: str) -> float:
        """Return ``name``'s total duration as a share of (its total + the steps' total)."""
        denominator = self.total_ms.get(name, 0.0) + self.total_ms.get(STEP_EVENT, 0.0)
        return self.total_ms.get(name, 0.0) / denominator if denominator else 0.0


def profile_loader(loader: DataLoader, step_s: float, trace_path: str | Path, max_batches: int = 8) -> ProfileSummary:
    """Return a ProfileSummary of ``max_batches`` steps run under ``torch.profiler.profile``
    (CPU), each step a ``record_function("train_step")`` sleeping ``step_s``; the trace is
    exported with ``export_chrome_trace`` to ``trace_path`` (open it in Perfetto or
    chrome://tracing). The profiler's own log lines (kineto writes start/stop lines with
    timestamps and pids to file descriptor 2) go to ``trace_path`` with suffix ``.log``.
    Workers are shut down before returning."""
    require_loader(loader)
    step_s = require_seconds(step_s, "step_s")
    require_positive(max_batches, "max_batches")
    trace_path = Path(trace_path)
    if not trace_path.parent.is_dir():
        raise ValueError(f"trace_path must be in an existing directory, got {trace_path.name!r}")
    from torch.profiler import ProfilerActivity, profile, record_function

    from loaderlab.failures import child_stderr_to

    batches = 0
    with child_stderr_to(trace_path.with_suffix(".log")), profile(activities=[ProfilerActivity.CPU]) as prof:
        iterator = iter(loader)
        try:
            for _ in range(max_batches):
                try:
                    next(iterator)
                except StopIteration:
                    break
                batches += 1
                with record_function(STEP_EVENT):
                    time.sleep(step_s)
        finally:
            stop_workers(iterator)
            del iterator
    counts: dict[str, int] = {}
    total_ms: dict[str, float] = {}
    for event in prof.key_averages():
        counts[event.key] = int(event.count)
        total_ms[event.key] = event.cpu_time_total / 1000.0
    prof.export_chrome_trace(str(trace_path))
    return ProfileSummary(batches, counts, total_ms, trace_event_count(trace_path))


def trace_event_count(path: str | Path, name: str | None = None) -> int:
    """Return how many events a Chrome-format trace file holds (only those called ``name``
    if given)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path must be an existing trace file, got {path.name!r}")
    data = json.loads(path.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    return sum(1 for e in events if name is None or e.get("name") == name)


def batch_order(batches: Sequence[Any]) -> list[int]:
    """Return each batch's first sample index, in the order the batches arrived (batches are
    ``(features, indices)`` as ``SlowSamplesDataset`` collates them)."""
    return [int(indices[0]) for _features, indices in batches]


def displaced(order: Sequence[int], reference: Sequence[int]) -> int:
    """Return at how many positions ``order`` differs from ``reference`` (same length)."""
    if len(order) != len(reference):
        raise ValueError(f"order has {len(order)} entries, reference {len(reference)}")
    return sum(a != b for a, b in zip(order, reference, strict=True))


@dataclass
class OrderRun:
    """One pass of ``run_in_order``: batch order, first-batch time and epoch time."""

    order: list[int]
    first_batch_s: float
    epoch_s: float


class WarmupBatchSampler(Sampler):
    """A batch sampler over ``range(n)`` in order (batches of ``batch_size``); while ``only``
    is set it yields just those batches instead (a warm-up epoch). It runs in the main
    process, so changing ``only`` between epochs reaches persistent workers too."""

    def __init__(self, n: int, batch_size: int) -> None:
        self.n, self.batch_size = require_positive(n, "n"), require_positive(batch_size, "batch_size")
        self.only: list[list[int]] | None = None

    def __iter__(self) -> Iterator[list[int]]:
        if self.only is not None:
            yield from (list(batch) for batch in self.only)
            return
        for start in range(0, self.n, self.batch_size):
            yield list(range(start, min(start + self.batch_size, self.n)))

    def __len__(self) -> int:
        return len(self.only) if self.only is not None else -(-self.n // self.batch_size)


def run_in_order(
    dataset: Dataset, in_order: bool = True, step_s: float = 0.0, batch_size: int = 4, num_workers: int = 2
) -> OrderRun:
    """Return the batch order (first index of each batch), the seconds to the first batch and
    the epoch's wall time for one sequential pass over ``dataset`` (``in_order`` as given),
    sleeping ``step_s`` per batch.

    With workers, the measured epoch is the second one of a ``persistent_workers`` loader: a
    warm-up epoch first gives each worker one batch of the last ``num_workers * batch_size``
    samples, so that worker start-up (seconds under ``spawn``) is not part of the figures.
    """
    if not isinstance(in_order, bool):
        raise TypeError(f"in_order must be a bool, got {type(in_order).__name__}")
    step_s = require_seconds(step_s, "step_s")
    require_positive(batch_size, "batch_size")
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
        raise ValueError(f"num_workers must be an int >= 0, got {num_workers!r}")
    n = len(dataset)  # type: ignore[arg-type]
    sampler = WarmupBatchSampler(n, batch_size)
    loader = DataLoader(dataset, batch_sampler=sampler, num_workers=num_workers, in_order=in_order,
                        persistent_workers=num_workers > 0)
    try:
        if num_workers:
            last = range(max(0, n - num_workers * batch_size), n)
            sampler.only = [list(last[i:i + batch_size]) for i in range(0, len(last), batch_size)]
            for _ in loader:
                pass
            sampler.only = None
        start = time.perf_counter()
        first = None
        batches = []
        for batch in loader:
            if first is None:
                first = time.perf_counter() - start
            batches.append(batch)
            time.sleep(step_s)
        epoch_s = time.perf_counter() - start
    finally:
        close_workers(loader)
    if first is None:
        raise ValueError("dataset yielded no batches")
    return OrderRun(batch_order(batches), first, epoch_s)
