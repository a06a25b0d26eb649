"""Notebook 03's and 19's lesson modules (notebooks/lesson03_in_flight.py, lesson03_sweep.py and
lesson19_host_to_device.py, written by their %%writefile cells): batches_in_flight counts
prefetch_factor per worker, capped by the batch count, and stops the workers before they finish
starting; the CPU sweep's checks run on idle cores and say why not elsewhere; host_to_device_seconds
needs an accelerator and times the copy itself, not its launch."""

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
    loader = DataLoader(
        TensorDataset(torch.arange(16.0)),
        batch_size=2,
        num_workers=2,
        worker_init_fn=_mark_started,
        multiprocessing_context="spawn",
    )
    assert lesson("lesson03_in_flight").batches_in_flight(loader) == 4
    assert list(tmp_path.iterdir()) == []


def test_batches_in_flight_leaves_a_persistent_loader_usable(no_leaked_workers):
    loader = DataLoader(
        TensorDataset(torch.arange(8.0)), batch_size=2, num_workers=2, persistent_workers=True
    )
    assert lesson("lesson03_in_flight").batches_in_flight(loader) == 4
    assert torch.cat([xb for (xb,) in loader]).tolist() == list(range(8))  # a whole epoch after
    del loader  # its persistent workers exit


def test_host_to_device_seconds_needs_an_accelerator_and_times_the_copy():
    host_to_device_seconds = lesson("lesson19_host_to_device").host_to_device_seconds
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


def test_the_cpu_checks_run_on_idle_cores_and_say_why_not_elsewhere():
    sweep = lesson("lesson03_sweep")
    # k: whole idle cores, at least 1, at most MAX_K (memory: the sweep starts k + 1 workers)
    ks = [sweep.idle_k(x) for x in (0.0, 0.4, 1.6, 2.0, 15.8, 64.0)]
    assert ks == [1, 1, 2, 2, sweep.MAX_K, sweep.MAX_K]
    # a quiet 2-core machine: both checks run
    assert sweep.scaling_not_measured(2, 1.95, 0.05) is None
    assert sweep.stop_not_measured(2, 1.95, 0.05, usable=2) is None
    # one quiet core (taskset -c 0): no parallel speed-up to show, but worker 2 is judged
    assert "one idle core" in sweep.scaling_not_measured(1, 0.97, 0.0)
    assert sweep.stop_not_measured(1, 0.97, 0.0, usable=1) is None
    # other programs busy before or during the sweep: neither runs, and the line says why
    for idle, others in ((0.5, 0.0), (2.0, 0.3), (0.0, 1.8)):
        k = sweep.idle_k(idle)
        for why in (sweep.scaling_not_measured(k, idle, others), sweep.stop_not_measured(k, idle, others, 2)):
            assert why.startswith("other programs used the cores"), why
    # load that stopped before the sweep (k = 1 counted, 2 cores free during it): worker 2 had a core
    assert "worker 2 may still find an idle core" in sweep.stop_not_measured(1, 1.2, 0.0, usable=2)
    # more idle cores than the sweep starts workers: the scaling is judged, the stop is not
    assert sweep.scaling_not_measured(sweep.MAX_K, 16.0, 0.0) is None
    why = sweep.stop_not_measured(sweep.MAX_K, 16.0, 0.0, 16)
    assert f"16 cores and {sweep.MAX_K} + 1 workers at most" in why
    # waiting needs no core, handing batches over needs some: over half the cores busy elsewhere
    assert sweep.latency_not_measured(0.2, 1) is None and sweep.latency_not_measured(0.9, 2) is None
    assert "kept 0.8 of 1 cores busy" in sweep.latency_not_measured(0.8, 1)
    assert "kept 1.8 of 2 cores busy" in sweep.latency_not_measured(1.8, 2)
