"""Written by notebook 11, section 6: a shuffle buffer that wraps any stream."""

from collections.abc import Iterable, Iterator

import numpy as np
from torch.utils.data import IterableDataset, get_worker_info


class ShuffleBuffer(IterableDataset):
    """Yields a stream's items shuffled within a buffer of buffer_size items."""

    def __init__(self, source: Iterable, buffer_size: int, seed: int = 0):
        self.source, self.buffer_size, self.seed, self.epoch = source, buffer_size, seed, 0

    def set_epoch(self, epoch: int) -> None:
        """Shuffle differently from the next iter() on: workers copy the stream when an epoch starts."""
        self.epoch = epoch

    def __iter__(self) -> Iterator:
        info = get_worker_info()
        worker = 0 if info is None else info.id
        rng = np.random.default_rng([self.seed, self.epoch, worker])  # differs per epoch and worker
        buffer = []
        for item in self.source:
            if len(buffer) < self.buffer_size:
                buffer.append(item)  # fill the buffer first
                continue
            slot = int(rng.integers(self.buffer_size))
            yield buffer[slot]  # a random buffered item goes out,
            buffer[slot] = item  # the incoming item takes its place
        rng.shuffle(buffer)
        yield from buffer  # the stream has ended: empty the buffer
