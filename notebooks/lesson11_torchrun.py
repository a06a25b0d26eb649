"""Written by notebook 11, section 5: one rank of a torchrun job (lesson11_torchrun.py N OUT START_METHOD).

Each rank loads its share of a stream for 2 epochs; rank 0 writes to OUT, per epoch, [items, steps] per rank.
"""

import json
import sys

import torch.distributed as dist
from lesson11_rank_shards import RankWorkerShardedStream  # the stream of the cell above, next to this script
from torch.utils.data import DataLoader


def main(n: int, out: str, start_method: str) -> None:
    dist.init_process_group("gloo")  # torchrun sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT
    stream = RankWorkerShardedStream(n)  # rank and world size from the process group
    loader = DataLoader(stream, batch_size=5, num_workers=2, multiprocessing_context=start_method)
    epochs = []
    for _ in range(2):  # two epochs
        items, steps = [], 0
        for xb in loader:
            items += xb.tolist()
            steps += 1  # a training step would run here
        seen = [None] * dist.get_world_size()
        dist.all_gather_object(seen, [items, steps])  # every rank receives what each rank saw
        epochs.append(seen)
    if dist.get_rank() == 0:
        with open(out, "w") as f:
            json.dump(epochs, f)
    dist.destroy_process_group()


if __name__ == "__main__":  # not when a spawned DataLoader worker imports this file
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3])
