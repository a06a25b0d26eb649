"""Load batches in threads with torchdata.nodes: the DataLoader's pipeline, rebuilt (notebook 16).

Prefer threads when __getitem__ mostly waits (network, object store, slow disk) or runs C code
that releases the GIL (PIL, NumPy, torch ops): as fast as worker processes there, with no
process start-up, no copy of the dataset per worker, and batches that stay in this process.
Prefer DataLoader worker processes when __getitem__ runs Python code (parsing, tokenising in
Python): threads take turns on the GIL and use one core at most. get_worker_info() is None in
a thread, so shard in the sampler, never inside the dataset. FetchBatch is notebook 16's
lesson16_threads.FetchBatch.
"""

import torchdata.nodes as tn
from torch.utils.data import BatchSampler, RandomSampler, default_collate


class FetchBatch:
    """What a DataLoader worker does with one batch of indices: fetch the samples, collate them."""

    def __init__(self, dataset, collate_fn=default_collate):
        self.dataset, self.collate_fn = dataset, collate_fn

    def __call__(self, indices):
        return self.collate_fn([self.dataset[i] for i in indices])


def thread_loader(dataset, batch_size=64, num_workers=16, prefetch_factor=4):
    """Shuffled batches of dataset, each fetched and collated in one of num_workers threads."""
    sampler = BatchSampler(RandomSampler(dataset), batch_size=batch_size, drop_last=True)
    node = tn.SamplerWrapper(sampler)  # batches of indices: shard here, not in the dataset
    node = tn.ParallelMapper(node, map_fn=FetchBatch(dataset), num_workers=num_workers,
                             method="thread")  # I/O-bound: many threads wait at once
    node = tn.Prefetcher(node, prefetch_factor=prefetch_factor)
    return tn.Loader(node)


def train(dataset, train_step, num_epochs=2):
    loader = thread_loader(dataset)
    for _ in range(num_epochs):  # each `for` over the loader is a new, reshuffled pass
        for xb, yb in loader:
            train_step(xb, yb)
