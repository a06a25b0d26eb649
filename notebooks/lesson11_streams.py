"""Written by notebook 11, section 1: a stream that every worker reads whole, and a worker tag."""

from collections.abc import Iterator

from torch.utils.data import IterableDataset, get_worker_info


class RangeStream(IterableDataset):
    """The integers 0..n-1 in order. No sharding: each worker yields all of them."""

    def __init__(self, n: int):
        self.n = n

    def __iter__(self) -> Iterator[int]:
        yield from range(self.n)

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:  # named in torch's length warning below
        return f"RangeStream(n={self.n})"


class TagWorker(IterableDataset):
    """Wraps a stream: yields (item, id of the worker that produced it), -1 in the main process."""

    def __init__(self, source: IterableDataset):
        self.source = source

    def __iter__(self) -> Iterator[tuple[int, int]]:
        info = get_worker_info()
        worker = -1 if info is None else info.id
        for item in self.source:
            yield item, worker
