"""Helpers for the notebooks on batching and worker processes (01-03): how much loading
overlapped the steps, sweeping ``num_workers``, worker start-up per epoch, batches in flight, shared-memory
growth, a dataset with latency spikes, and host-to-device copy timing."""

from __future__ import annotations

import os
import shutil
import time

import torch
from torch.utils.data import DataLoader

from loaderlab._validate import require_loader, require_positive
from loaderlab.loaders import stop_workers
from loaderlab.measure import BackgroundSampler, Timeline

SHM_PATH = "/dev/shm"


# ------------------------------------------------------------------------------- datasets


# --------------------------------------------------------------------------- timing passes


def overlap_fraction(timeline: Timeline) -> float:
    """Return the share of batch-loading time (workers' fetch + collate) that ran while the
    main process was running its step: 0 when loading and computing take turns, near 1 when
    loading is hidden behind computing.

    Steady state only: the batches before every worker has delivered one
    (``timeline.warmup_batches``) are left out, since they load before any step exists and,
    under spawn, carry each new worker's start-up costs.
    """
    if not isinstance(timeline, Timeline):
        raise TypeError(f"timeline must be a Timeline from trace_timeline, got {type(timeline).__name__}")
    records = timeline.records[timeline.warmup_batches:]
    steps = [(r["received"], r["step_end"]) for r in timeline.records]
    loading = overlapped = 0.0
    for r in records:
        start, end = r["start"], r["end"]
        loading += end - start
        overlapped += sum(max(0.0, min(end, b) - max(start, a)) for a, b in steps)
    return overlapped / loading if loading > 0 else 0.0



def close_workers(loader: DataLoader) -> None:
    """Shut down the persistent workers a DataLoader keeps between epochs (no-op otherwise)."""
    require_loader(loader)
    iterator = getattr(loader, "_iterator", None)
    stop_workers(iterator)
    loader._iterator = None

def batches_in_flight(loader: DataLoader) -> int:
    """Return how many batches a fresh iterator over ``loader`` requests from its workers
    before the first ``next()`` (``num_workers * prefetch_factor``, capped by the batch count);
    0 without workers, which load only when asked."""
    require_loader(loader)
    if loader.num_workers == 0:
        return 0
    iterator = iter(loader)
    try:
        return int(iterator._tasks_outstanding)  # private counter of _MultiProcessingDataLoaderIter
    finally:
        iterator._shutdown_workers()
        del iterator
        if loader.persistent_workers:
            close_workers(loader)


# ------------------------------------------------------------------------- shared memory


def shared_memory_used_mb() -> float | None:
    """Return the MB used in ``/dev/shm`` (where workers put batches on Linux), or None when
    the system has no ``/dev/shm`` (macOS, Windows)."""
    if not os.path.isdir(SHM_PATH):
        return None
    return shutil.disk_usage(SHM_PATH).used / 2**20


class SharedMemoryWatcher(BackgroundSampler):
    """Context manager that records the peak growth of ``/dev/shm`` use while it is open.

    Batches made by workers travel to the main process through shared memory; batches
    prefetched but not yet consumed sit there. ``peak_growth_mb`` is None where there is no
    ``/dev/shm``. The figure is machine-wide: other programs using shared memory add to it.
    """

    thread_name = "loaderlab-shm"

    def __init__(self, interval_s: float = 0.005) -> None:
        super().__init__(interval_s)
        self.baseline_mb: float | None = None
        self.peak_growth_mb: float | None = None

    def sample(self) -> None:
        """Take one reading now."""
        used = shared_memory_used_mb()
        if used is None or self.baseline_mb is None:
            return
        growth = max(0.0, used - self.baseline_mb)
        self.peak_growth_mb = max(self.peak_growth_mb or 0.0, growth)

    def _begin(self) -> None:
        self.baseline_mb = shared_memory_used_mb()
        self.peak_growth_mb = 0.0 if self.baseline_mb is not None else None


# -------------------------------------------------------------------- host-to-device copy


def host_to_device_seconds(
    batch: torch.Tensor, device: str | torch.device, pinned: bool, repeats: int = 20
) -> float:
    """Return the median seconds to copy ``batch`` from host to ``device`` (synchronised),
    from pageable memory or (``pinned=True``) from a pinned copy with ``non_blocking=True``.

    Needs an accelerator: raises RuntimeError when none is available.
    """
    if not isinstance(batch, torch.Tensor):
        raise TypeError(f"batch must be a tensor, got {type(batch).__name__}")
    if batch.device.type != "cpu":
        raise ValueError(f"batch must live on the CPU, got device {batch.device}")
    require_positive(repeats, "repeats")
    device = torch.device(device)
    if device.type == "cpu":
        raise ValueError("device must be an accelerator (e.g. 'cuda'), got 'cpu'")
    if not torch.accelerator.is_available():
        raise RuntimeError("no accelerator available: host-to-device copies cannot be timed")
    source = batch.pin_memory() if pinned else batch
    times = []
    for _ in range(repeats + 1):  # the first copy warms up the allocator
        torch.accelerator.synchronize()
        t0 = time.perf_counter()
        source.to(device, non_blocking=pinned)
        torch.accelerator.synchronize()
        times.append(time.perf_counter() - t0)
    times = sorted(times[1:])
    return times[len(times) // 2]
