"""Written by notebook 11, section 5: a stream sharded by rank and by worker."""

from collections.abc import Iterator

import torch.distributed as dist
from torch.utils.data import IterableDataset, get_worker_info


class RankWorkerShardedStream(IterableDataset):
    """The integers 0..n-1, one contiguous block per (rank, worker): every item is read once."""

    def __init__(self, n: int, rank: int | None = None, world_size: int | None = None):
        if rank is None:  # the process group's rank, or a single process
            rank, world_size = (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)
        self.n, self.rank, self.world_size = n, rank, world_size

    def __iter__(self) -> Iterator[int]:
        info = get_worker_info()  # None in the main process (num_workers=0)
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        reader, readers = self.rank * workers + worker, self.world_size * workers
        start, stop = reader * self.n // readers, (reader + 1) * self.n // readers
        yield from range(start, stop)  # your own stream: records (or whole files) start..stop-1

    def __len__(self) -> int:  # this rank's share, whatever num_workers is
        return (self.rank + 1) * self.n // self.world_size - self.rank * self.n // self.world_size
