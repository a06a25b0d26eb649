"""Unit tests for the instruments notebooks 01, 03 and 15 use (loaderlab.measure): counts and ratios,
not wall-clock luck."""

from __future__ import annotations

import time

import pytest
import torch
from torch.utils.data import DataLoader

import loaderlab
from loaderlab.datasets import LatencyDataset
from loaderlab.measure import (
    SharedMemoryWatcher,
    overlap_fraction,
    shared_memory_used_mb,
)


@pytest.mark.course
@pytest.mark.timing
def test_overlap_fraction_is_zero_without_workers_and_high_with_them(no_leaked_workers):
    ds = LatencyDataset(n=48, latency_s=0.01)
    alone = loaderlab.trace_timeline(DataLoader(ds, batch_size=2), step=0.03)
    assert overlap_fraction(alone) == 0
    together = loaderlab.trace_timeline(DataLoader(ds, batch_size=2, num_workers=2), step=0.03)
    # each 20 ms fetch can hide in a 30 ms step (near 1 when idle); without workers it is 0
    assert together.warmup_batches == 2 and overlap_fraction(together) > 0.5
    with pytest.raises(TypeError, match="timeline"):
        overlap_fraction([])


@pytest.mark.course
def test_shared_memory_watcher_sees_a_large_shared_tensor():
    if shared_memory_used_mb() is None:
        pytest.skip("no /dev/shm on this system")
    with SharedMemoryWatcher() as watcher:
        shared = torch.zeros(16 * 2**20 // 4).share_memory_()  # 16 MB in shared memory
        time.sleep(0.05)
        watcher.sample()
        del shared
    assert watcher.peak_growth_mb is not None and watcher.peak_growth_mb >= 8
