"""Checks of loaderlab.startmethods: start-up timing, pickling errors, unpickle costs, forkserver."""

from __future__ import annotations

import multiprocessing

import pytest
import torch
from torch.utils.data import DataLoader

from loaderlab.data import make_metadata
from loaderlab.datasets import LatencyDataset
from loaderlab.startmethods import (
    restart_forkserver,
    shares_storage,
    start_error,
    startup_times,
    unguarded_script,
    unpickle_costs,
    without_addresses,
)

HAS_FORK = "fork" in multiprocessing.get_all_start_methods()
HAS_FORKSERVER = "forkserver" in multiprocessing.get_all_start_methods()


def _count(batch):  # module level: picklable
    return len(batch)


def test_without_addresses():
    assert without_addresses("<function <lambda> at 0x7f3a2b1c>: failed") == "<function <lambda>>: failed"
    assert without_addresses("no address") == "no address"
    with pytest.raises(TypeError):
        without_addresses(3)


@pytest.mark.skipif(not HAS_FORKSERVER, reason="no forkserver on this platform")
def test_restart_forkserver_sets_preload():
    assert restart_forkserver(["torch"]) == ["torch"]
    assert restart_forkserver([]) == []
    with pytest.raises(TypeError):
        restart_forkserver("torch")


def test_startup_times_validates():
    dataset = LatencyDataset(n=8, latency_s=0.0)
    with pytest.raises(ValueError):
        startup_times(dataset, "teleport")
    with pytest.raises(ValueError):
        startup_times(dataset, "spawn", epochs=0)
    with pytest.raises(TypeError):
        startup_times(dataset, "spawn", persistent_workers=1)


@pytest.mark.skipif(not HAS_FORK, reason="no fork on this platform")
def test_startup_times_one_figure_per_epoch(no_leaked_workers):
    times = startup_times(LatencyDataset(n=8, latency_s=0.0), "fork", epochs=3, num_workers=1)
    assert len(times) == 3 and all(t > 0 for t in times)


def test_start_error_lambda_fails_only_when_pickled(no_leaked_workers):
    dataset = LatencyDataset(n=8, latency_s=0.0)
    spawn = DataLoader(dataset, batch_size=4, num_workers=1, collate_fn=lambda b: len(b),
                       multiprocessing_context="spawn")
    with pytest.warns(UserWarning):
        error = start_error(spawn)
    assert error is not None and error.startswith(("PicklingError", "AttributeError")) and "0x" not in error
    if HAS_FORK:
        fork = DataLoader(dataset, batch_size=4, num_workers=1, collate_fn=lambda b: len(b),
                          multiprocessing_context="fork")
        assert start_error(fork) is None
    assert start_error(DataLoader(dataset, batch_size=4, collate_fn=_count)) is None


def test_unpickle_costs_copies_lists_not_tensors(no_leaked_workers):
    rows = make_metadata(n_rows=100_000, row_chars=64)
    parts = {"tensor": torch.zeros(2_500_000), "list": rows}
    assert not shares_storage(parts["tensor"])
    costs = unpickle_costs(parts, ["spawn"])
    assert set(costs) == {"spawn"} and set(costs["spawn"]) == {"tensor", "list"}
    assert costs["spawn"]["list"] >= 8.0  # ~11 MB of str objects, copied
    assert costs["spawn"]["tensor"] < 2.5  # 9.5 MB tensor, not copied
    assert shares_storage(parts["tensor"])  # pickling moved it into shared memory
    with pytest.raises(TypeError):
        unpickle_costs({}, ["spawn"])
    with pytest.raises(TypeError):
        unpickle_costs(parts, "spawn")


def test_shares_storage_type():
    with pytest.raises(TypeError):
        shares_storage([1, 2])
    assert shares_storage(torch.zeros(3).share_memory_())


@pytest.mark.skipif(not HAS_FORK, reason="no fork on this platform")
def test_unguarded_script_runs_under_fork():
    result = unguarded_script("fork", timeout_s=60.0)
    assert result == {"ok": True, "bootstrapping_error": False, "returncode": 0}
    with pytest.raises(ValueError):
        unguarded_script("fork", timeout_s=0)
