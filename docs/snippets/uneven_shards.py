"""Every rank runs the same number of batches, and a collective cannot hang forever.

In DDP every loss.backward() all-reduces the gradients on every rank: a rank with one more
batch waits for the others until the process group's timeout (30 minutes for gloo by default).
Agree on the smallest batch count with all_reduce(MIN) before the epoch (or use
DistributedSampler(drop_last=True), or torch.distributed.algorithms.Join), and give
init_process_group a timeout that turns a hang into an error. Notebook 25.
"""

import datetime
import itertools

import torch
import torch.distributed as dist


def common_batches(loader):
    """Yield the first N batches of loader, N the smallest len(loader) over all ranks."""
    count = torch.tensor(len(loader))
    dist.all_reduce(count, op=dist.ReduceOp.MIN)  # every rank learns the smallest count
    yield from itertools.islice(loader, int(count))


def init_bounded(backend="gloo"):
    """Join the process group; a collective that waits past 5 minutes raises instead of hanging."""
    dist.init_process_group(backend, timeout=datetime.timedelta(minutes=5))
