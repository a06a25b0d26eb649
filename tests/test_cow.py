"""Tests for loaderlab.cow: table layouts, the unpickle probe and the per-epoch memory probe."""

from __future__ import annotations

import gc
import pickle
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from loaderlab.cow import (
    PackedRowLengths,
    RowLengths,
    UnpickleCost,
    list_size_mb,
    pack_rows,
    tracked_pages,
)
from loaderlab.data import make_metadata, metadata_array
from loaderlab.env import can_fork


def test_list_size_counts_the_list_and_every_string():
    rows = ["a" * 100, "b" * 10]
    expected = sys.getsizeof(rows) + sys.getsizeof(rows[0]) + sys.getsizeof(rows[1])
    assert list_size_mb(rows) * 2**20 == pytest.approx(expected)
    with pytest.raises(TypeError, match="rows"):
        list_size_mb(np.array([b"a"]))


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("rows", [["alpha", "b", "", "gamma"], ["héllo", "x", "ü€", "日本"]])
def test_pack_rows_round_trips(backend, rows):
    buffer, offsets = pack_rows(rows, backend=backend)
    kind = torch.Tensor if backend == "torch" else np.ndarray
    assert isinstance(buffer, kind) and isinstance(offsets, kind)
    assert int(offsets[-1]) == len(buffer) == len("".join(rows).encode())
    dataset = PackedRowLengths(buffer, offsets)
    assert len(dataset) == len(rows)
    assert [dataset.row(i) for i in range(len(rows))] == rows
    assert dataset.__getitems__([0, 3]) == [len(rows[0]), len(rows[3])]
    assert int(dataset[2]) == len(rows[2])


def test_pack_rows_and_packed_dataset_validate():
    with pytest.raises(ValueError, match="backend"):
        pack_rows(["a"], backend="jax")
    with pytest.raises(TypeError, match="rows"):
        pack_rows([])
    buffer, offsets = pack_rows(["abc", "de"])
    with pytest.raises(ValueError, match="offsets"):
        PackedRowLengths(buffer[:-1], offsets)


def test_row_lengths_batched_fetch_matches_single_fetch():
    rows = make_metadata(n_rows=50, row_chars=20)
    for table in (rows, metadata_array(rows)):
        dataset = RowLengths(table)
        indices = [3, 0, 49]
        assert dataset.__getitems__(indices) == [int(dataset[i]) for i in indices] == [20, 20, 20]


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


def test_unpickle_cost_measures_each_part():
    rows = make_metadata(n_rows=100_000, row_chars=100)
    array = np.ones(20 * 2**20, dtype=np.uint8)
    probe = UnpickleCost({"list": rows, "array": array, "small": [1, 2]}, num_items=3)
    assert len(probe) == 3 and probe[0].tolist() == [0.0, 0.0, 0.0]
    # Unpickled in a fresh Python, as in a spawned worker: in this test process, pages freed by
    # earlier tests can take the copy without any growth of USS (measured 0.0 MB once).
    unpickle = ("import pickle, sys; copy = pickle.loads(sys.stdin.buffer.read()); "
                "print(*copy[0].tolist())")
    result = subprocess.run([sys.executable, "-c", unpickle], input=pickle.dumps(probe),
                            capture_output=True, timeout=120, check=True)
    list_mb, array_mb, small_mb = map(float, result.stdout.split())
    copy = pickle.loads(pickle.dumps(probe))
    assert list_mb >= 0.5 * list_size_mb(rows)
    assert 15 <= array_mb <= 25
    assert small_mb < 1.0
    assert copy.parts["small"] == [1, 2] and len(copy) == 3
    with pytest.raises(TypeError, match="parts"):
        UnpickleCost({})
    with pytest.raises(ValueError, match="num_items"):
        UnpickleCost({"a": 1}, num_items=0)


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


@pytest.mark.skipif(not can_fork(), reason="copy-on-write sharing needs fork")
def test_watch_reads_each_worker_at_the_gate_before_its_first_fetch(no_leaked_workers):
    from torch.utils.data import DataLoader

    from loaderlab.measure import WorkerMemorySampler

    other = DataLoader(range(8), batch_size=4, num_workers=1, persistent_workers=True)
    assert list(other)  # a worker alive before: not read
    try:
        mem = WorkerMemorySampler(interval_s=0.5)  # slow thread: only the gate reading can be early
        loader = DataLoader(FirstFetchAllocates(mb=40), batch_size=1, num_workers=2,
                            multiprocessing_context="fork", worker_init_fn=mem.gate)
        batches = [int(b) for b in mem.watch(loader)]
        assert batches == [0, 1, 2, 3]
        growth = mem.worker_uss_growth_mb()
        assert len(growth) == 2 and other._iterator._workers[0].pid not in growth
        assert all(35 <= g <= 60 for g in growth.values()), growth  # first reading before the allocation
        assert loaderlab_workers_alive() == 1  # the loader's workers are stopped after the pass
    finally:
        other._iterator._shutdown_workers()


def test_watch_gate_works_with_spawn_workers(no_leaked_workers):
    from torch.utils.data import DataLoader

    from loaderlab.measure import WorkerMemorySampler

    mem = WorkerMemorySampler()
    loader = DataLoader(range(6), batch_size=3, num_workers=1, multiprocessing_context="spawn",
                        worker_init_fn=mem.gate)  # the gate pickles for a spawned worker
    assert [b.tolist() for b in mem.watch(loader)] == [[0, 1, 2], [3, 4, 5]]
    assert len(mem.worker_pids()) == 1


def loaderlab_workers_alive() -> int:
    from loaderlab.measure import live_workers

    return len(live_workers())
