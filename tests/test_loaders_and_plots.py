"""Rebuilding loaders, counting batch sizes, and the plots."""

from __future__ import annotations

import multiprocessing
import os
import threading

import matplotlib.pyplot as plt
import pytest
import torch
from torch.utils.data import DataLoader, IterableDataset, TensorDataset

import loaderlab
from loaderlab import plots
from loaderlab._validate import require_seconds
from loaderlab.datasets import LatencyDataset
from loaderlab.loaders import (
    batch_size_of,
    rebuild,
    same_batch,
    same_batches,
    stop_workers,
)
from loaderlab.measure import WorkerMemorySampler, throughput, trace_timeline


class Stream(IterableDataset):
    def __iter__(self):
        yield from range(10)


def _dataset():
    return TensorDataset(torch.arange(20.0).unsqueeze(1), torch.arange(20) % 3)


def test_rebuild_yields_the_same_batches_with_other_worker_counts(no_leaked_workers):
    def make():
        return DataLoader(
            _dataset(), batch_size=6, shuffle=True, drop_last=True, generator=torch.Generator().manual_seed(0)
        )

    assert same_batches(rebuild(make(), num_workers=2), make())
    assert len(rebuild(make())) == len(make()) == 3


def test_rebuild_handles_unbatched_and_iterable_loaders(no_leaked_workers):
    unbatched = DataLoader(_dataset(), batch_size=None)
    assert same_batches(rebuild(unbatched), unbatched)
    stream = DataLoader(Stream(), batch_size=4, drop_last=True)
    assert [b.tolist() for b in rebuild(stream)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    persistent = DataLoader(
        _dataset(), batch_size=5, num_workers=1, persistent_workers=True, prefetch_factor=3
    )
    assert rebuild(persistent, num_workers=0).prefetch_factor is None


def test_batch_size_of_understands_common_batch_shapes():
    assert batch_size_of(torch.zeros(7, 3)) == 7
    assert batch_size_of((torch.zeros(5, 2), torch.zeros(5))) == 5
    assert batch_size_of({"ids": torch.zeros(4, 9), "label": torch.zeros(4)}) == 4
    assert batch_size_of([[1, 2], [3, 4], [5, 6]]) == 2  # default collate of lists: fields first
    assert batch_size_of(["a", "b", "c"]) == 3


def test_same_batch_tells_equal_from_different():
    a = (torch.tensor([1, 2]), {"m": torch.tensor([True])})
    assert same_batch(a, (torch.tensor([1, 2]), {"m": torch.tensor([True])}))
    assert not same_batch(a, (torch.tensor([1, 3]), {"m": torch.tensor([True])}))
    assert not same_batch(torch.tensor([1, 2]), torch.tensor([1.0, 2.0]))  # dtype matters
    assert not same_batches([torch.zeros(1)], [torch.zeros(1), torch.zeros(1)])


@pytest.mark.course
def test_plots_label_their_axes(no_leaked_workers):
    loader = DataLoader(LatencyDataset(n=8, latency_s=0.001), batch_size=2, num_workers=2)
    ax = plots.plot_timeline(trace_timeline(loader, step=0.001), title="finding")
    assert ax.get_xlabel().endswith("(s)") and ax.get_title() == "finding"
    assert [t.get_text() for t in ax.get_yticklabels()][1:] == ["worker 0", "worker 1"]
    with WorkerMemorySampler(interval_s=0.01) as sampler:
        throughput(loader)
    ax = plots.plot_worker_memory(sampler.records, title="memory", metric="uss")
    assert ax.get_ylabel() == "USS (MB)"
    plt.close("all")


def test_plots_reject_bad_input():
    with pytest.raises(TypeError, match="timeline"):
        plots.plot_timeline([], title="x")
    with pytest.raises(ValueError, match="metric"):
        plots.plot_worker_memory([], title="x", metric="vms")
    with pytest.raises(ValueError, match="records"):
        plots.plot_worker_memory([], title="x")


@pytest.mark.course
def test_stop_workers_ends_the_workers_of_a_live_iterator_at_once():
    iterator = iter(DataLoader(LatencyDataset(n=16, latency_s=0), batch_size=2, num_workers=2))
    next(iterator)
    assert len(loaderlab.live_workers()) == 2
    stop_workers(iterator)  # the iterator is still referenced: only an explicit stop ends them
    assert loaderlab.wait_for_workers_to_exit(10.0) == 0
    stop_workers(iter(DataLoader(LatencyDataset(n=4, latency_s=0))))  # no workers: no-op
    stop_workers(None)


def _die_holding_the_lock(event) -> None:
    event._cond._lock.acquire()  # as a worker inside done_event.is_set() holds it
    os._exit(0)  # and dies: nobody releases it


@pytest.mark.course
@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_killing_workers_does_not_hang_on_the_done_events_lock_a_dead_process_held():
    # A worker killed while it holds _workers_done_event's lock left it locked, and torch's
    # _shutdown_workers then waited in Event.set() forever: notebook 03's batches_in_flight hung
    # a clean-clone CI for its 180 s cell timeout.
    iterator = iter(DataLoader(LatencyDataset(n=16, latency_s=0), batch_size=2, num_workers=2))
    next(iterator)
    holder = multiprocessing.get_context("fork").Process(
        target=_die_holding_the_lock, args=(iterator._workers_done_event,)
    )
    holder.start()
    holder.join(10)
    assert holder.exitcode == 0
    stopped = threading.Event()
    threading.Thread(target=lambda: (stop_workers(iterator, kill=True), stopped.set()), daemon=True).start()
    assert stopped.wait(30), "stop_workers(kill=True) waited for a lock whose owner is dead"
    assert loaderlab.wait_for_workers_to_exit(10.0) == 0


def test_require_seconds_names_the_argument():
    assert require_seconds(0, "wait_s") == 0.0 and require_seconds(1, "wait_s", positive=True) == 1.0
    with pytest.raises(ValueError, match="wait_s must be > 0 seconds"):
        require_seconds(0, "wait_s", positive=True)
    with pytest.raises(ValueError, match="wait_s must be >= 0 seconds"):
        require_seconds(-1, "wait_s")
    with pytest.raises(TypeError, match="wait_s must be a number of seconds, got bool"):
        require_seconds(True, "wait_s")
