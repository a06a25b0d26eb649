"""Notebook 11's lesson modules (notebooks/lesson11_streams*.py, written by its %%writefile cells): an
unsharded stream is read whole by every worker; sharded by worker, or by rank and worker, every
item arrives once and len() is the rank's share; the shuffle buffer is a permutation that moves
items at most buffer_size - 1 places earlier, new per epoch and per worker."""

from __future__ import annotations

import warnings

import pytest
from course_code import lesson
from torch.utils.data import DataLoader


def items(dataset, num_workers: int, batch_size: int | None = 4) -> list:
    with warnings.catch_warnings():  # 3 workers exceed the suggested maximum on 2 cores
        warnings.simplefilter("ignore", UserWarning)
        loader = DataLoader(dataset, batch_size=batch_size, num_workers=num_workers)
        return [i for batch in loader for i in (batch.tolist() if batch_size else [batch])]


def test_range_stream_is_read_whole_by_every_worker(no_leaked_workers):
    les = lesson("lesson11_streams")
    assert sorted(items(les.RangeStream(10), 2)) == sorted(list(range(10)) * 2)
    assert repr(les.RangeStream(10)) == "RangeStream(n=10)" and len(les.RangeStream(10)) == 10
    tagged = items(les.TagWorker(les.RangeStream(3)), 2, batch_size=None)
    assert sorted((int(i), int(w)) for i, w in tagged) == [(i, w) for i in range(3) for w in (0, 1)]
    assert list(les.TagWorker(les.RangeStream(2))) == [(0, -1), (1, -1)]


@pytest.mark.parametrize("num_workers", [0, 2, 3])
@pytest.mark.parametrize("n", [7, 24])
def test_worker_sharded_stream_delivers_every_item_once(n, num_workers, no_leaked_workers):
    stream = lesson("lesson11_worker_shards").WorkerShardedStream(n)
    assert sorted(items(stream, num_workers)) == list(range(n)) and len(stream) == n


@pytest.mark.parametrize(("n", "world_size", "num_workers"), [(43, 2, 2), (13, 3, 2), (5, 2, 0), (3, 2, 3)])
def test_rank_worker_sharded_stream_delivers_every_item_once_and_len_is_the_share(
    n, world_size, num_workers, no_leaked_workers
):
    stream_class = lesson("lesson11_rank_shards").RankWorkerShardedStream
    seen = []
    for rank in range(world_size):
        stream = stream_class(n, rank=rank, world_size=world_size)
        mine = items(stream, num_workers)
        assert len(mine) == len(stream)
        seen += mine
    assert sorted(seen) == list(range(n))
    assert len(stream_class(n)) == n  # no process group: one rank holds everything


def test_shuffle_buffer_is_a_bounded_permutation_new_per_epoch_and_worker(no_leaked_workers):
    shuffle_buffer = lesson("lesson11_shuffle_buffer").ShuffleBuffer
    buffer = shuffle_buffer(range(500), buffer_size=16)
    first = list(buffer)
    assert sorted(first) == list(range(500)) and first != list(range(500))
    assert min(position - item for position, item in enumerate(first)) >= -15  # at most 15 places earlier
    assert list(buffer) == first  # a rerun repeats
    buffer.set_epoch(1)
    assert list(buffer) != first
    assert list(shuffle_buffer(range(20), buffer_size=1)) == list(range(20))
    # two workers over the same unsharded range shuffle it differently (the worker id seeds them)
    streams = lesson("lesson11_streams")
    per_worker = items(shuffle_buffer(streams.TagWorker(streams.RangeStream(64)), 8), 2, batch_size=None)
    orders = {w: [int(i) for i, tag in per_worker if int(tag) == w] for w in (0, 1)}
    assert sorted(orders[0]) == sorted(orders[1]) == list(range(64)) and orders[0] != orders[1]
