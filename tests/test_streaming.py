"""Tests for loaderlab.streaming: every claim is a count of items delivered by a DataLoader."""

from __future__ import annotations

import pytest
from torch.utils.data import DataLoader

from loaderlab.streaming import (
    RangeStream,
    RankWorkerShardedStream,
    WorkerShardedStream,
    coverage,
    distributed_shard,
    flatten_items,
    shard_range,
)


@pytest.mark.parametrize("n", [0, 1, 5, 7, 12, 13])
@pytest.mark.parametrize("k", [1, 2, 3, 4, 8])
def test_shard_range_covers_exactly_once_and_balanced(n, k):
    shards = [shard_range(n, k, s) for s in range(k)]
    items = [i for shard in shards for i in shard]
    assert items == list(range(n))
    sizes = [len(s) for s in shards]
    assert max(sizes) - min(sizes) <= 1


def test_shard_range_validates():
    with pytest.raises(ValueError, match="shard"):
        shard_range(10, 2, 2)
    with pytest.raises(TypeError, match="num_shards"):
        shard_range(10, 2.0, 0)
    with pytest.raises(ValueError, match="n must"):
        shard_range(-1, 2, 0)


def test_coverage_counts():
    cov = coverage([0, 1, 1, 3, 7], n=5)
    assert (cov.delivered, cov.distinct, cov.missing, cov.duplicates, cov.out_of_range) == (
        5, 3, 2, 1, 1)
    assert not cov.exactly_once
    assert coverage([2, 0, 1], n=3).exactly_once


def test_flatten_items_reads_tensors_lists_and_ints():
    import torch

    assert flatten_items([torch.tensor([3, 4]), [5, torch.tensor(6)], 7]) == [3, 4, 5, 6, 7]
    with pytest.raises(TypeError, match="batch"):
        flatten_items(["x"])


def test_unsharded_stream_repeats_every_item_per_worker(no_leaked_workers):
    loader = DataLoader(RangeStream(10), batch_size=4, num_workers=2)
    cov = coverage(flatten_items(loader), 10)
    assert cov.delivered == 20 and cov.distinct == 10 and cov.duplicates == 10


@pytest.mark.parametrize("n", [7, 10])
def test_worker_sharded_stream_exactly_once(n, no_leaked_workers):
    loader = DataLoader(WorkerShardedStream(n), batch_size=3, num_workers=2)
    assert coverage(flatten_items(loader), n).exactly_once
    assert coverage(list(WorkerShardedStream(n)), n).exactly_once  # no workers: one reader


@pytest.mark.parametrize("n,world_size,num_workers", [(13, 3, 2), (42, 2, 2), (5, 2, 0), (3, 2, 2)])
def test_rank_worker_sharded_stream_exactly_once(n, world_size, num_workers, no_leaked_workers):
    items = []
    for rank in range(world_size):
        stream = RankWorkerShardedStream(n, rank, world_size, num_workers=num_workers)
        got = flatten_items(DataLoader(stream, batch_size=2, num_workers=num_workers))
        assert len(got) == len(stream)
        items += got
    assert coverage(items, n).exactly_once


def test_rank_worker_sharded_stream_checks_worker_count():
    stream = RankWorkerShardedStream(10, 0, 2, num_workers=2)
    with pytest.raises(RuntimeError, match="num_workers=2"):
        list(stream)  # read in the main process: 1 reader, not 2
    with pytest.raises(ValueError, match="rank"):
        RankWorkerShardedStream(10, 2, 2)
    with pytest.raises(ValueError, match="both"):
        RankWorkerShardedStream(10, rank=0)


def test_distributed_shard_defaults_to_single_process():
    assert distributed_shard() == (0, 1)
    assert distributed_shard(1, 4) == (1, 4)


def test_drop_last_drops_a_partial_batch_per_worker(no_leaked_workers):
    loader = DataLoader(WorkerShardedStream(24), batch_size=8, num_workers=2, drop_last=True)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 2  # each worker had 12 = 8 + 4
    assert coverage(flatten_items(batches), 24).missing == 8


