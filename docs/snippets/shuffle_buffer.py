"""A shuffle buffer for an IterableDataset, and the epoch loop that uses it (notebook 11, section 6).

Each worker shuffles its own shard within buffer_size items: local randomness only, an item
comes out at most buffer_size - 1 places earlier than it was read. If the stream is sorted
(by class, date or file), shuffle the order of its shard files first.
"""

from collections.abc import Iterable, Iterator

import numpy as np
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


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


def train_epochs(stream, train_step, num_epochs=2, buffer_size=1024, batch_size=64, num_workers=2):
    """Train on a (sharded) stream, shuffled within each worker, in a new order every epoch."""
    shuffled = ShuffleBuffer(stream, buffer_size=buffer_size)
    loader = DataLoader(shuffled, batch_size=batch_size, num_workers=num_workers)  # no shuffle=, no sampler=
    for epoch in range(num_epochs):
        shuffled.set_epoch(epoch)  # this epoch's new workers receive the new epoch
        for batch in loader:
            train_step(batch)
