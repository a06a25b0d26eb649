"""Written by notebook 25, section 1: one rank of a torchrun job whose ranks get uneven shards.

lesson25_uneven.py OUT_DIR TIMEOUT_S MODE [MODE ...]: for each MODE, one epoch of DDP training on 2
ranks, then a barrier (where a real job evaluates or saves); each rank writes OUT_DIR/rank<r>.json.
"""

import datetime
import itertools
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.algorithms import Join
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, Subset, TensorDataset


def make_loader(dataset, mode: str, rank: int, world_size: int) -> DataLoader:
    if mode == "drop_last":  # every rank gets len(dataset) // world_size samples
        sampler = DistributedSampler(dataset, shuffle=False, drop_last=True)
        return DataLoader(dataset, batch_size=4, sampler=sampler)
    shard = Subset(dataset, range(rank, len(dataset), world_size))  # a hand-made split: 21 and 20 samples
    return DataLoader(shard, batch_size=4)


def train_epoch(model, loader, mode: str, progress: dict) -> None:
    """One epoch of DDP steps; counts them in progress["steps"]."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = iter(loader)
    if mode == "all_reduce_min":  # agree on the smallest batch count before the first step
        count = torch.tensor(len(loader))
        dist.all_reduce(count, op=dist.ReduceOp.MIN)
        batches = itertools.islice(batches, int(count))
    with Join([model], enable=mode == "join"):  # a rank that runs out shadows the others' all_reduces
        for xb, yb in batches:
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()  # DDP all_reduces the gradients here: every rank must take part
            optimizer.step()
            progress["steps"] += 1


def main(out_dir: str, timeout_s: float, modes: list[str]) -> None:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=timeout_s))  # bounds every collective
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(41, 8), torch.randn(41, 1))  # 41 samples: not divisible by 2
    report = {}
    for mode in modes:
        model = DDP(torch.nn.Linear(8, 1))
        loader = make_loader(dataset, mode, rank, world_size)
        start, progress, error = time.perf_counter(), {"steps": 0}, None
        try:
            train_epoch(model, loader, mode, progress)
            dist.barrier()  # where a real job evaluates or saves a checkpoint
        except RuntimeError as exc:
            error = f"{type(exc).__name__}: {exc}"
        report[mode] = {"batches": len(loader), **progress, "seconds": time.perf_counter() - start,
                        "error": error}
        if error:
            break  # the process group is broken after a timeout
    with open(f"{out_dir}/rank{rank}.json", "w") as f:
        json.dump(report, f)
    if error:  # stay until every rank failed too: exiting would close the sockets another still waits on
        deadline = time.monotonic() + 3 * timeout_s
        while time.monotonic() < deadline and not all(os.path.exists(f"{out_dir}/rank{r}.json")
                                                      for r in range(world_size)):
            time.sleep(0.05)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), sys.argv[3:])
