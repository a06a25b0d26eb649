"""Tests for loaderlab.cow (list sizes, pages a collection writes) and WorkerMemorySampler's gate."""

from __future__ import annotations

import gc
import sys
import time

import numpy as np
import pytest
import torch

from loaderlab.cow import list_size_mb, tracked_pages
from loaderlab.env import can_fork


def test_list_size_counts_the_list_and_every_string():
    rows = ["a" * 100, "b" * 10]
    expected = sys.getsizeof(rows) + sys.getsizeof(rows[0]) + sys.getsizeof(rows[1])
    assert list_size_mb(rows) * 2**20 == pytest.approx(expected)
    with pytest.raises(TypeError, match="rows"):
        list_size_mb(np.array([b"a"]))


def test_tracked_pages_counts_what_a_collection_would_write():
    objects, mb = tracked_pages()
    assert objects > 10_000  # torch and the test modules are loaded
    assert 4096 / 2**20 <= mb <= objects * 4096 / 2**20
    gc.freeze()
    try:
        frozen_objects, frozen_mb = tracked_pages()
    finally:
        gc.unfreeze()
    assert frozen_objects < objects / 10 and frozen_mb < mb / 10  # frozen objects are out of reach


# ------------------------------------------- WorkerMemorySampler.gate and .watch (loaderlab.measure)


class FirstFetchAllocates(torch.utils.data.Dataset):
    """Each worker allocates and touches `mb` MB at its first fetch, then holds it."""

    def __init__(self, mb: int, n: int = 4) -> None:
        self.mb, self.n, self.ballast = mb, n, None

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> int:
        if self.ballast is None:
            self.ballast = np.ones(self.mb * 2**20 // 8)
        return index


@pytest.mark.course
def test_memory_gate_holds_a_worker_until_opened_and_counts_arrivals():
    import threading

    from loaderlab.measure import MemoryGate

    gate = MemoryGate(timeout_s=0.3)
    with pytest.raises(RuntimeError, match="0 of 1 workers reached the gate"):
        gate.wait_for(1)  # nobody arrived: one sentence, after the timeout
    gate.timeout_s = 10.0
    done = []
    thread = threading.Thread(target=lambda: done.append(gate(0)))
    thread.start()
    gate.wait_for(1)  # returns once the "worker" waits at the gate
    time.sleep(0.2)
    assert not done  # still held
    gate.open()
    thread.join(5)
    assert done == [None]
    gate.close()
    assert repr(gate) == "MemoryGate(open=False)"


@pytest.mark.course
@pytest.mark.skipif(not can_fork(), reason="copy-on-write sharing needs fork")
def test_watch_reads_each_worker_at_the_gate_before_its_first_fetch(no_leaked_workers):
    from torch.utils.data import DataLoader

    from loaderlab.measure import WorkerMemorySampler

    other = DataLoader(range(8), batch_size=4, num_workers=1, persistent_workers=True)
    assert list(other)  # a worker alive before: not read
    try:
        mem = WorkerMemorySampler(interval_s=0.5)  # slow thread: only the gate reading can be early
        loader = DataLoader(
            FirstFetchAllocates(mb=40),
            batch_size=1,
            num_workers=2,
            multiprocessing_context="fork",
            worker_init_fn=mem.gate,
        )
        batches = [int(b) for b in mem.watch(loader)]
        assert batches == [0, 1, 2, 3]
        growth = mem.worker_uss_growth_mb()
        assert len(growth) == 2 and other._iterator._workers[0].pid not in growth
        assert all(35 <= g <= 60 for g in growth.values()), growth  # first reading before the allocation
        assert loaderlab_workers_alive() == 1  # the loader's workers are stopped after the pass
    finally:
        other._iterator._shutdown_workers()


@pytest.mark.spawn
@pytest.mark.course
def test_watch_gate_works_with_spawn_workers(no_leaked_workers):
    from torch.utils.data import DataLoader

    from loaderlab.measure import WorkerMemorySampler

    mem = WorkerMemorySampler()
    loader = DataLoader(
        range(6), batch_size=3, num_workers=1, multiprocessing_context="spawn", worker_init_fn=mem.gate
    )  # the gate pickles for a spawned worker
    assert [b.tolist() for b in mem.watch(loader)] == [[0, 1, 2], [3, 4, 5]]
    assert len(mem.worker_pids()) == 1


def loaderlab_workers_alive() -> int:
    from loaderlab.measure import live_workers

    return len(live_workers())
