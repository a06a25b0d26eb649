"""A distributed epoch loop: set_epoch every epoch, and an evaluation without padding.

DistributedSampler shuffles with seed + epoch: without set_epoch every epoch repeats the same
order. For evaluation it pads shards to equal size (duplicates skew the metric): deal the
samples without padding instead and sum the counts across ranks, as tensors on the model's
device (NCCL refuses CPU tensors). Plain torch. Notebook 10.
"""

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, Sampler


def train_epochs(train_set, num_epochs, train_step, batch_size=64):
    sampler = DistributedSampler(train_set, shuffle=True, seed=0)   # same seed on every rank
    loader = DataLoader(train_set, batch_size=batch_size, sampler=sampler)
    for epoch in range(num_epochs):
        sampler.set_epoch(epoch)          # or every epoch has the same order
        for batch in loader:
            train_step(batch)


class UnpaddedDistributedSampler(Sampler):
    """DistributedSampler's shards without padding: every index on exactly one rank.

    For evaluation: a rank may get one sample more than another, so do not train a DDP model
    with it (a rank with one batch fewer leaves the others waiting in a collective).
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=False, seed=0):
        self.n, self.shuffle, self.seed, self.epoch = len(dataset), shuffle, seed, 0
        self.num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
        self.rank = dist.get_rank() if rank is None else rank

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        order = list(range(self.n))
        if self.shuffle:  # DistributedSampler's permutation: seeded with seed + epoch
            generator = torch.Generator().manual_seed(self.seed + self.epoch)
            order = torch.randperm(self.n, generator=generator).tolist()
        return iter(order[self.rank::self.num_replicas])   # dealt round-robin: no padding, no drop

    def __len__(self):
        return len(range(self.rank, self.n, self.num_replicas))


def evaluate(model, val_set, batch_size=256):
    """Accuracy with every validation sample counted exactly once, on any number of ranks."""
    device = next(model.parameters()).device  # NCCL reduces tensors on the GPU only; gloo, CPU
    val_loader = DataLoader(val_set, batch_size=batch_size, sampler=UnpaddedDistributedSampler(val_set))
    counts = torch.zeros(2, dtype=torch.long, device=device)  # [hits, samples] on this rank
    with torch.no_grad():
        for xb, yb in val_loader:
            xb, yb = xb.to(device), yb.to(device)
            counts[0] += (model(xb).argmax(1) == yb).sum()
            counts[1] += len(yb)
    dist.all_reduce(counts)  # sum over ranks, on the model's device
    return (counts[0] / counts[1]).item()  # every sample counted once
