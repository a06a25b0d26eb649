"""An IterableDataset that every rank and every worker reads a disjoint part of.

Without sharding, each worker replays the whole stream. Readers are numbered
rank * num_workers + worker_id; contiguous blocks differ by at most one item, so any n is
covered exactly once. Notebook 11.
"""

import torch.distributed as dist
from torch.utils.data import IterableDataset, get_worker_info


class ShardedRange(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        rank, world = (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)
        reader, readers = rank * workers + worker, world * workers
        start = reader * self.n // readers
        stop = (reader + 1) * self.n // readers
        yield from range(start, stop)
