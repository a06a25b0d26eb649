"""Unit tests for the instruments notebooks 01, 03 and 15 use (loaderlab.measure): counts and ratios, not wall-clock luck."""

from __future__ import annotations

import time

import pytest
import torch
from torch.utils.data import DataLoader

import loaderlab
from loaderlab.datasets import LatencyDataset
from loaderlab.measure import (
    SharedMemoryWatcher,
    batches_in_flight,
    host_to_device_seconds,
    overlap_fraction,
    shared_memory_used_mb,
)


def test_overlap_fraction_is_zero_without_workers_and_high_with_them(no_leaked_workers):
    ds = LatencyDataset(n=48, latency_s=0.01)
    alone = loaderlab.trace_timeline(DataLoader(ds, batch_size=2), step=0.03)
    assert overlap_fraction(alone) == 0
    together = loaderlab.trace_timeline(DataLoader(ds, batch_size=2, num_workers=2), step=0.03)
    assert together.warmup_batches == 2 and overlap_fraction(together) > 0.5
    with pytest.raises(TypeError, match="timeline"):
        overlap_fraction([])


def test_batches_in_flight_counts_prefetch_per_worker(no_leaked_workers):
    ds = LatencyDataset(n=64, latency_s=0.0)
    assert batches_in_flight(DataLoader(ds, batch_size=2)) == 0
    assert batches_in_flight(DataLoader(ds, batch_size=2, num_workers=2, prefetch_factor=3)) == 6
    # capped by the number of batches
    assert batches_in_flight(DataLoader(ds, batch_size=32, num_workers=2, prefetch_factor=4)) == 2


def test_shared_memory_watcher_sees_a_large_shared_tensor():
    if shared_memory_used_mb() is None:
        pytest.skip("no /dev/shm on this system")
    with SharedMemoryWatcher() as watcher:
        shared = torch.zeros(16 * 2**20 // 4).share_memory_()  # 16 MB in shared memory
        time.sleep(0.05)
        watcher.sample()
        del shared
    assert watcher.peak_growth_mb is not None and watcher.peak_growth_mb >= 8


def test_host_to_device_seconds_validates_arguments():
    with pytest.raises(TypeError, match="batch"):
        host_to_device_seconds([1, 2], "cuda", pinned=False)
    with pytest.raises(ValueError, match="device"):
        host_to_device_seconds(torch.zeros(4), "cpu", pinned=False)
    if not torch.accelerator.is_available():
        with pytest.raises(RuntimeError, match="accelerator"):
            host_to_device_seconds(torch.zeros(4), "cuda", pinned=True)
    else:
        device = torch.accelerator.current_accelerator()
        small = host_to_device_seconds(torch.zeros(1024), device, pinned=True, repeats=3)
        big = host_to_device_seconds(torch.zeros(64 * 2**20 // 4), device, pinned=True, repeats=3)
        assert big > small  # 64 MB take longer to copy than 4 KB: the copy is timed, not just issued
