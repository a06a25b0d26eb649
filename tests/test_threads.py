"""Unit tests for loaderlab.threads: same batches as a DataLoader, where loading runs, and
robust orderings (sleep-based work, the GIL's one-core cap)."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, default_collate

from loaderlab.datasets import LatencyDataset
from loaderlab.threads import (
    FetchBatch,
    PythonLoopDataset,
    WhereLoaded,
    compare_methods,
    gil_status,
    parallel_loader,
    time_loading,
    where_loaded,
)


def same(a, b):
    return len(a) == len(b) and all(
        all(torch.equal(x, y) for x, y in zip(p, q, strict=True)) for p, q in zip(a, b, strict=True))


def test_python_loop_dataset_is_deterministic_and_validated():
    ds = PythonLoopDataset(n=4, iterations=100)
    x, y = ds[3]
    assert x.tolist() == [3.0] * 4 and ds[3][1] == y and y in (0, 1)
    with pytest.raises(IndexError):
        ds[4]
    with pytest.raises(ValueError, match="iterations"):
        PythonLoopDataset(iterations=0)


def test_fetch_batch_is_a_dataloader_worker_step():
    ds = LatencyDataset(n=8, latency_s=0.0)
    fetched = FetchBatch(ds)([1, 2, 5])
    expected = default_collate([ds[1], ds[2], ds[5]])
    assert all(torch.equal(a, b) for a, b in zip(fetched, expected, strict=True))
    with pytest.raises(TypeError, match="collate_fn"):
        FetchBatch(ds, collate_fn=3)


@pytest.mark.parametrize("method", ["thread", "process"])
def test_parallel_loader_yields_the_dataloader_batches(method, no_leaked_workers):
    ds = LatencyDataset(n=22, latency_s=0.0)
    assert same(list(parallel_loader(ds, 4, 2, method=method)), list(DataLoader(ds, batch_size=4)))


def test_parallel_loader_validates_arguments():
    ds = LatencyDataset(n=8, latency_s=0.0)
    with pytest.raises(ValueError, match="method"):
        parallel_loader(ds, 4, 2, method="fiber")
    with pytest.raises(ValueError, match="num_workers"):
        parallel_loader(ds, 4, 0)


def test_time_loading_counts_and_orders_times(no_leaked_workers):
    run = time_loading(DataLoader(LatencyDataset(n=10, latency_s=0.0), batch_size=4, num_workers=1))
    assert run.batches == 3 and run.samples == 10 and 0 < run.first_batch_s <= run.seconds
    with pytest.raises(ValueError, match="nothing"):
        time_loading([])
    with pytest.raises(TypeError, match="batches"):
        time_loading(3)


def test_where_loaded_tells_threads_from_processes(no_leaked_workers):
    threads = where_loaded(parallel_loader(WhereLoaded(8, latency_s=0.01), 2, 2))
    assert threads["processes"] == 1 and threads["in_main_process"] and threads["threads"] == 2
    assert threads["worker_methods"] == [None]
    procs = where_loaded(DataLoader(WhereLoaded(8), batch_size=2, num_workers=2))
    assert procs["processes"] == 2 and not procs["in_main_process"]
    assert procs["worker_methods"] == ["multiprocessing"] and procs["samples"] == 8


def test_threads_overlap_waits_but_not_python_bytecode(no_leaked_workers):
    rounds = compare_methods(LatencyDataset(n=32, latency_s=0.02), batch_size=2, num_workers=4, repeats=2)
    assert len(rounds) == 2
    waits = rounds[1]
    assert set(waits) == {"main process", "threads", "processes"}
    assert waits["threads"].timing.samples == 32
    rate = {m: r.timing.steady_samples_per_s for m, r in waits.items()}
    assert rate["threads"] >= 2.0 * rate["main process"]  # 4 sleeping threads: ~4x
    (loop,) = compare_methods(PythonLoopDataset(n=8, iterations=50_000), batch_size=2, num_workers=2)
    assert loop["threads"].cores_used <= 1.6  # the GIL: one thread runs bytecode at a time (short runs are noisy: 1.44 seen once)


def test_gil_status_names_the_state():
    assert gil_status().startswith(("enabled", "disabled"))


def test_speedups_take_the_median_of_paired_ratios():
    from loaderlab.threads import LoadTiming, MethodRun, median_cores, speedups

    def run(main_s, threads_s, cores):
        timing = lambda s: LoadTiming(batches=3, samples=30, seconds=s, first_batch_s=0.0)  # noqa: E731
        return {"main process": MethodRun("main process", timing(main_s), 1.0),
                "threads": MethodRun("threads", timing(threads_s), cores)}

    runs = [run(1.0, 0.5, 0.5), run(1.0, 0.25, 0.9), run(10.0, 1.0, 0.7)]  # ratios 2, 4, 10
    assert speedups(runs) == {"main process": 1.0, "threads": 4.0}
    assert median_cores(runs, "threads") == 0.7
    with pytest.raises(ValueError, match="runs"):
        speedups([])
    with pytest.raises(ValueError, match="processes"):
        median_cores(runs, "processes")
