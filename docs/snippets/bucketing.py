"""Length bucketing: batches of similar lengths, reshuffled every epoch.

Sort indices by length inside large random pools, cut batches, shuffle the batches.
Pass it as `batch_sampler=` and call `set_epoch(epoch)` before each epoch. Notebook 05
builds this same sampler; it runs in the main process, so it may live in a notebook cell.
"""

import torch
from torch.utils.data import DataLoader, Sampler


class BucketBatchSampler(Sampler):
    """Batches of similar lengths: sort inside random pools, then shuffle the batches."""

    def __init__(self, lengths, batch_size, pool_size=2048, seed=0):
        self.lengths, self.batch_size = list(lengths), batch_size
        self.pool_size, self.seed, self.epoch = pool_size, seed, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def _batches(self):
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        order = torch.randperm(len(self.lengths), generator=g).tolist()
        batches = []
        for start in range(0, len(order), self.pool_size):
            pool = sorted(order[start:start + self.pool_size], key=self.lengths.__getitem__)
            batches += [pool[i:i + self.batch_size] for i in range(0, len(pool), self.batch_size)]
        return [batches[i] for i in torch.randperm(len(batches), generator=g).tolist()]

    def __iter__(self):
        return iter(self._batches())

    def __len__(self):
        pools = range(0, len(self.lengths), self.pool_size)
        return sum(-(-min(self.pool_size, len(self.lengths) - s) // self.batch_size) for s in pools)


def bucketed_epochs(dataset, lengths, collate_fn, num_epochs=2, num_workers=2):
    """Yield (epoch, batch) for length-bucketed batches collated by workers."""
    sampler = BucketBatchSampler(lengths, batch_size=32, pool_size=2048, seed=0)
    loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=collate_fn, num_workers=num_workers)
    for epoch in range(num_epochs):
        sampler.set_epoch(epoch)  # new batches every epoch
        for ids, padding_mask, labels in loader:
            yield epoch, (ids, padding_mask, labels)
