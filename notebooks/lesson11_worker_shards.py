"""Written by notebook 11, section 2: a stream sharded between DataLoader workers."""

from collections.abc import Iterator

from torch.utils.data import IterableDataset, get_worker_info


class WorkerShardedStream(IterableDataset):
    """The integers 0..n-1, one contiguous block per DataLoader worker."""

    def __init__(self, n: int):
        self.n = n

    def __iter__(self) -> Iterator[int]:
        info = get_worker_info()  # None in the main process (num_workers=0)
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        start, stop = worker * self.n // workers, (worker + 1) * self.n // workers
        yield from range(start, stop)  # blocks differ by at most one item

    def __len__(self) -> int:
        return self.n  # all workers together
