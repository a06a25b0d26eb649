"""Checks of loaderlab.bottleneck: wait split, profiler event names, trace files, batch order."""

from __future__ import annotations

from pathlib import Path

import pytest
from torch.utils.data import DataLoader

from loaderlab.bottleneck import (
    STEP_EVENT,
    SlowSamplesDataset,
    WarmupBatchSampler,
    batch_order,
    bound_by,
    dataloader_event_name,
    displaced,
    profile_loader,
    run_in_order,
    trace_event_count,
    wait_split,
)
from loaderlab.data import workspace
from loaderlab.measure import Timeline


def test_slow_samples_dataset():
    dataset = SlowSamplesDataset(n=8, base_s=0.0, slow_s=0.5, slow_indices=(3,))
    assert dataset.delay(3) == 0.5 and dataset.delay(2) == 0.0
    x, i = dataset[2]
    assert i == 2 and x.tolist() == [2.0]
    with pytest.raises(ValueError):
        SlowSamplesDataset(n=8, slow_indices=(8,))
    with pytest.raises(ValueError):
        SlowSamplesDataset(base_s=-1)
    with pytest.raises(IndexError):
        dataset[8]


def _timeline(waits, step, workers=1):
    records, t = [], 0.0
    for i, wait in enumerate(waits):
        requested, received = t, t + wait
        t = received + step
        records.append({"batch": i, "worker": i % workers, "pid": 1, "start": 0.0, "end": 0.0,
                        "requested": requested, "received": received, "wait": wait, "step_end": t})
    return Timeline(records, t + 5.0)  # + a slow shutdown, which must not count


def test_wait_split_and_bound_by():
    timeline = _timeline([2.0, 0.3, 0.3, 0.3], step=0.1)
    split = wait_split(timeline)
    assert split["wait_s"] == pytest.approx(0.9) and split["other_s"] == pytest.approx(0.3)
    assert split["wait_fraction"] == pytest.approx(0.75)
    assert bound_by(timeline) == "data" and bound_by(timeline, threshold=0.8) == "compute"
    assert bound_by(_timeline([2.0, 0.0, 0.01], step=0.1)) == "compute"
    with pytest.raises(ValueError):
        bound_by(timeline, threshold=1.5)
    with pytest.raises(TypeError):
        wait_split("run")
    with pytest.raises(ValueError, match="warm-up"):
        wait_split(_timeline([1.0], step=0.1))


def test_wait_split_leaves_out_every_workers_first_batch():
    # Under spawn the second worker can start a second later than the first: its first batch
    # is start-up, not a data-bound steady state.
    timeline = _timeline([1.0, 1.5, 0.0, 0.0, 0.01, 0.0], step=0.1, workers=2)
    assert timeline.warmup_batches == 2
    split = wait_split(timeline)
    assert split["wait_s"] == pytest.approx(0.01) and split["other_s"] == pytest.approx(0.4)
    assert bound_by(timeline) == "compute"
    with pytest.raises(ValueError, match="warm-up"):
        wait_split(_timeline([1.0, 1.5], step=0.1, workers=2))


def test_event_name_matches_torch():
    dataset = SlowSamplesDataset(n=4, base_s=0.0, slow_s=0.0)
    for workers in (0, 1):
        loader = DataLoader(dataset, batch_size=2, num_workers=workers)
        iterator = iter(loader)
        assert dataloader_event_name(loader) == iterator._profile_name
        del iterator


def test_profile_loader_counts_one_event_per_batch(no_leaked_workers):
    root = workspace()
    try:
        loader = DataLoader(SlowSamplesDataset(n=12, base_s=0.0, slow_s=0.0), batch_size=2)
        trace = workspace_path = Path(root.name) / "t.json"
        summary = profile_loader(loader, step_s=0.0, trace_path=workspace_path, max_batches=4)
        name = dataloader_event_name(loader)
        assert summary.batches == 4 and summary.counts[name] == 4 and summary.counts[STEP_EVENT] == 4
        assert trace_event_count(trace, name) == 4 and summary.trace_events >= 8
        assert 0.0 <= summary.share(name) <= 1.0
    finally:
        root.cleanup()
    with pytest.raises(ValueError):
        trace_event_count(workspace_path)


def test_order_helpers():
    import torch

    batches = [(torch.zeros(2, 1), torch.tensor([4, 5])), (torch.zeros(2, 1), torch.tensor([0, 1]))]
    assert batch_order(batches) == [4, 0]
    assert displaced([4, 0, 8], [0, 4, 8]) == 2
    with pytest.raises(ValueError):
        displaced([1], [1, 2])


def test_run_in_order_without_workers():
    run = run_in_order(SlowSamplesDataset(n=8, base_s=0.0, slow_s=0.0), num_workers=0, batch_size=2)
    assert run.order == [0, 2, 4, 6] and 0 < run.first_batch_s <= run.epoch_s
    with pytest.raises(TypeError):
        run_in_order(SlowSamplesDataset(n=8), in_order=1)


def test_run_in_order_warms_up_and_leaves_no_workers(no_leaked_workers):
    dataset = SlowSamplesDataset(n=16, base_s=0.0, slow_s=0.0)
    assert run_in_order(dataset, in_order=True, num_workers=2).order == [0, 4, 8, 12]
    assert sorted(run_in_order(dataset, in_order=False, num_workers=2).order) == [0, 4, 8, 12]


def test_warmup_batch_sampler():
    sampler = WarmupBatchSampler(10, 4)
    assert list(sampler) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]] and len(sampler) == 3
    sampler.only = [[9]]
    assert list(sampler) == [[9]] and len(sampler) == 1
