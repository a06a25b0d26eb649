"""Iterable (stream) datasets: unsharded, sharded per worker, sharded per rank and worker, a
shuffle buffer, and counters that check every item arrives exactly once.

They live in the package so that workers started with ``spawn`` can unpickle them. Every
stream yields the integers ``0 .. n-1`` (the item *is* its stream position), so counting what a
DataLoader delivers tells at once what was duplicated, lost or moved.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info

from loaderlab.loaders import require_positive


def _require_index(value: Any, name: str, upper: int, upper_name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not 0 <= value < upper:
        raise ValueError(f"{name} must be in [0, {upper_name}={upper}), got {value}")
    return value


def shard_range(n: int, num_shards: int, shard: int) -> range:
    """Return the contiguous block of ``range(n)`` that shard ``shard`` of ``num_shards`` reads.

    Blocks are balanced: the first ``n % num_shards`` shards get one item more, so any ``n``
    is covered exactly once (a shard may be empty when ``n < num_shards``).
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an int, got {type(n).__name__}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    require_positive(num_shards, "num_shards")
    _require_index(shard, "shard", num_shards, "num_shards")
    base, extra = divmod(n, num_shards)
    start = shard * base + min(shard, extra)
    return range(start, start + base + (1 if shard < extra else 0))


def worker_shard() -> tuple[int, int]:
    """Return ``(worker_id, num_workers)`` of the calling DataLoader worker; ``(0, 1)`` in the
    main process."""
    info = get_worker_info()
    return (0, 1) if info is None else (info.id, info.num_workers)


def distributed_shard(rank: int | None = None, world_size: int | None = None) -> tuple[int, int]:
    """Return ``(rank, world_size)``: the arguments if given, else the initialised process
    group's, else ``(0, 1)`` (a single process)."""
    if (rank is None) != (world_size is None):
        raise ValueError("give both rank and world_size, or neither")
    if rank is None:
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
        return 0, 1
    require_positive(world_size, "world_size")
    _require_index(rank, "rank", world_size, "world_size")
    return rank, world_size  # type: ignore[return-value]


class RangeStream(IterableDataset):
    """A stream of the integers ``0 .. n-1``, read whole by every reader (no sharding).

    ``len()`` returns ``n``. With ``num_workers=k`` each worker holds its own copy and yields
    the whole stream, so the loader delivers every item ``k`` times.
    """

    def __init__(self, n: int) -> None:
        self.n = require_positive(n, "n")

    def positions(self) -> range:
        """Return the stream positions this reader yields (all of them)."""
        return range(self.n)

    def __iter__(self) -> Iterator[int]:
        yield from self.positions()

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:  # stable text in warnings (no memory address)
        return f"{type(self).__name__}(n={self.n})"


class WorkerShardedStream(RangeStream):
    """A stream of ``0 .. n-1`` split between DataLoader workers with ``get_worker_info()``.

    Worker ``w`` of ``k`` yields the contiguous block ``shard_range(n, k, w)``: together the
    workers yield every item exactly once. ``len()`` returns ``n``.
    """

    def positions(self) -> range:
        """Return the block of stream positions that the calling worker yields."""
        worker_id, num_workers = worker_shard()
        return shard_range(self.n, num_workers, worker_id)


class RankWorkerShardedStream(RangeStream):
    """A stream of ``0 .. n-1`` split between ranks *and* the workers of each rank.

    Reader ``rank * num_workers + worker_id`` of ``world_size * num_workers`` yields its block
    ``shard_range``; any ``n`` is covered exactly once across all ranks and workers. ``rank``
    and ``world_size`` default to the process group's (see ``distributed_shard``); every rank
    must use the same ``num_workers``. ``len()`` returns this rank's share only.
    """

    def __init__(
        self, n: int, rank: int | None = None, world_size: int | None = None, num_workers: int = 0
    ) -> None:
        super().__init__(n)
        self.rank, self.world_size = distributed_shard(rank, world_size)
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"num_workers must be an int >= 0, got {num_workers!r}")
        self.num_workers = num_workers

    def _readers(self) -> int:
        return self.world_size * max(self.num_workers, 1)

    def positions(self) -> range:
        """Return the block of stream positions that this rank's calling worker yields."""
        worker_id, num_workers = worker_shard()
        if num_workers != max(self.num_workers, 1):
            raise RuntimeError(
                f"{self!r} was built for num_workers={self.num_workers} but runs in a loader "
                f"with {num_workers if get_worker_info() else 0}; pass the loader's num_workers"
            )
        reader = self.rank * num_workers + worker_id
        return shard_range(self.n, self._readers(), reader)

    def __len__(self) -> int:
        k = max(self.num_workers, 1)
        return sum(len(shard_range(self.n, self._readers(), self.rank * k + w)) for w in range(k))

    def __repr__(self) -> str:
        return (
            f"RankWorkerShardedStream(n={self.n}, rank={self.rank}, "
            f"world_size={self.world_size}, num_workers={self.num_workers})"
        )


@dataclass(frozen=True)
class Coverage:
    """How a list of delivered items covers ``range(n)``."""

    n: int
    delivered: int
    distinct: int
    missing: int
    duplicates: int
    out_of_range: int

    @property
    def exactly_once(self) -> bool:
        """True if every item of ``range(n)`` was delivered once and nothing else."""
        return self.delivered == self.distinct == self.n and self.out_of_range == 0


def flatten_items(batches: Iterable[Any]) -> list[int]:
    """Return the integer items of a sequence of batches (tensors, lists or scalars), in order."""
    items: list[int] = []
    for batch in batches:
        if isinstance(batch, torch.Tensor):
            items.extend(int(x) for x in batch.reshape(-1).tolist())
        elif isinstance(batch, (list, tuple)):
            items.extend(flatten_items(batch))
        elif isinstance(batch, (int, np.integer)) and not isinstance(batch, bool):
            items.append(int(batch))
        else:
            raise TypeError(f"cannot read items from a batch of type {type(batch).__name__}")
    return items


def coverage(items: Iterable[int], n: int) -> Coverage:
    """Return how ``items`` cover ``range(n)``: delivered, distinct, missing, duplicated."""
    require_positive(n, "n")
    counts = collections.Counter(int(i) for i in items)
    inside = {i: c for i, c in counts.items() if 0 <= i < n}
    return Coverage(
        n=n,
        delivered=sum(counts.values()),
        distinct=len(inside),
        missing=n - len(inside),
        duplicates=sum(c - 1 for c in inside.values()),
        out_of_range=sum(c for i, c in counts.items() if not 0 <= i < n),
    )


