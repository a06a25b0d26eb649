"""Notebook 03's instruments, in its lesson modules (notebooks/lesson03_in_flight.py and
lesson03_host_to_device.py, written by its %%writefile cells): batches_in_flight counts
prefetch_factor per worker, capped by the batch count, and stops the workers before they finish
starting; host_to_device_seconds needs an accelerator and times the copy itself, not its launch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from course_code import lesson
from torch.utils.data import DataLoader, TensorDataset


def _mark_started(worker_id: int) -> None:
    """worker_init_fn: runs once a worker has started (imported torch, unpickled the dataset)."""
    Path(os.environ["LESSON03_STARTED"], str(worker_id)).touch()


def test_batches_in_flight_counts_prefetch_per_worker(no_leaked_workers):
    batches_in_flight = lesson("lesson03_in_flight").batches_in_flight
    ds = TensorDataset(torch.arange(64.0))
    assert batches_in_flight(DataLoader(ds, batch_size=2)) == 0
    assert batches_in_flight(DataLoader(ds, batch_size=2, num_workers=2, prefetch_factor=3)) == 6
    # capped by the number of batches
    assert batches_in_flight(DataLoader(ds, batch_size=32, num_workers=2, prefetch_factor=4)) == 2


@pytest.mark.course
@pytest.mark.timing
def test_batches_in_flight_stops_spawned_workers_before_they_start(tmp_path, monkeypatch, no_leaked_workers):
    # a spawned worker imports torch (about a second) before worker_init_fn runs: stopped at
    # once, none gets that far; waited for, every one would
    monkeypatch.setenv("LESSON03_STARTED", str(tmp_path))
    loader = DataLoader(TensorDataset(torch.arange(16.0)), batch_size=2, num_workers=2,
                        worker_init_fn=_mark_started, multiprocessing_context="spawn")
    assert lesson("lesson03_in_flight").batches_in_flight(loader) == 4
    assert list(tmp_path.iterdir()) == []


def test_batches_in_flight_leaves_a_persistent_loader_usable(no_leaked_workers):
    loader = DataLoader(TensorDataset(torch.arange(8.0)), batch_size=2, num_workers=2,
                        persistent_workers=True)
    assert lesson("lesson03_in_flight").batches_in_flight(loader) == 4
    assert torch.cat([xb for (xb,) in loader]).tolist() == list(range(8))  # a whole epoch after
    del loader  # its persistent workers exit


def test_host_to_device_seconds_needs_an_accelerator_and_times_the_copy():
    host_to_device_seconds = lesson("lesson03_host_to_device").host_to_device_seconds
    if not torch.accelerator.is_available():
        for pinned in (False, True):
            # torch's CPU build says "accelerator"; its CUDA build (Python 3.12+ here) "NVIDIA driver"
            with pytest.raises(RuntimeError, match="accelerator|NVIDIA driver"):
                host_to_device_seconds(torch.zeros(4), "cuda", pinned=pinned)
        return
    device = torch.accelerator.current_accelerator()
    small = host_to_device_seconds(torch.zeros(1024), device, pinned=True, repeats=3)
    big = host_to_device_seconds(torch.zeros(64 * 2**20 // 4), device, pinned=True, repeats=3)
    assert big > small  # 64 MB take longer to copy than 4 KB: the copy is timed, not just issued
