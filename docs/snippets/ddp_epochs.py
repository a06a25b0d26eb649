"""A distributed epoch loop: set_epoch every epoch, and an evaluation without padding.

DistributedSampler shuffles with seed + epoch: without set_epoch every epoch repeats the same
order. For evaluation it pads shards to equal size (duplicates skew the metric): shard without
padding instead and sum counts across ranks. Notebook 10.
"""

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def train_epochs(dataset, epochs, train_step, batch_size=32):
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for batch in loader:
            train_step(batch)


def evaluate(dataset, count_correct, batch_size=256):
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)
    indices = list(range(rank, len(dataset), world))  # no padding: every sample exactly once
    loader = DataLoader(torch.utils.data.Subset(dataset, indices), batch_size=batch_size)
    totals = torch.tensor([sum(count_correct(batch) for batch in loader), len(indices)])
    if dist.is_initialized():
        dist.all_reduce(totals)
    return (totals[0] / totals[1]).item()
