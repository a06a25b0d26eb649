"""Written by notebook 10, section 5: a torchrun job; each rank loads its shard, rank 0 saves what all saw."""

import argparse
import json
import os

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, help="JSON file rank 0 writes: seen[epoch][rank]")
    parser.add_argument("--size", type=int, default=42)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--num-workers", type=int, default=2)
    args = parser.parse_args()
    if os.environ.get("LOADERLAB_START_METHOD"):  # the course runs every notebook under spawn too
        torch.multiprocessing.set_start_method(os.environ["LOADERLAB_START_METHOD"])

    dist.init_process_group("gloo")  # CPU; torchrun sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
    rank, world_size = dist.get_rank(), dist.get_world_size()
    dataset = TensorDataset(torch.arange(args.size))
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)  # rank and world size from the group
    loader = DataLoader(dataset, batch_size=4, sampler=sampler, num_workers=args.num_workers,
                        persistent_workers=args.num_workers > 0)  # start the workers once, not every epoch
    seen = []
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        mine = [int(i) for (xb,) in loader for i in xb]
        everyone = [None] * world_size
        dist.all_gather_object(everyone, mine)  # every rank receives every rank's list
        seen.append(everyone)
    counts = ", ".join(f"epoch {e}: {len(s[rank])} items" for e, s in enumerate(seen))
    print(f"rank {rank}/{world_size}: {counts}\n", end="", flush=True)  # one write: ranks share stdout
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump(seen, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
