"""Written by notebook 13, section 5: a restarted job that resumes a saved loader state (python -O)."""

import signal
import sys

import torch
from lesson08_locks import DumpStackOnSignal  # notebook 08: a worker's stack on SIGUSR1
from lesson13_noisy import StatefulNoisyDataset
from torchdata.stateful_dataloader import StatefulDataLoader

if __name__ == "__main__":  # not when a spawned worker imports this file
    state_path, out_path, stacks, start_method, num_workers = sys.argv[1:6]
    dump = DumpStackOnSignal(stacks) if hasattr(signal, "SIGUSR1") else None  # no SIGUSR1 on Windows
    loader = StatefulDataLoader(StatefulNoisyDataset(n=64), batch_size=4, shuffle=True,  # as build() does
                                generator=torch.Generator().manual_seed(7), num_workers=int(num_workers),
                                multiprocessing_context=start_method, worker_init_fn=dump)
    loader.load_state_dict(torch.load(state_path, weights_only=True))
    batches = []
    for xb, idx in loader:  # the rest of the epoch
        batches.append([xb, idx])
    torch.save(batches, out_path)
