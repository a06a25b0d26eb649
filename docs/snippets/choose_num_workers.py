"""Choose num_workers by measuring, not guessing: samples per second for a few worker counts.

A warm-up epoch starts the workers (persistent_workers keeps them), then one epoch is timed.
CPU-bound datasets stop gaining near the number of idle cores; datasets that wait on I/O keep
gaining past it. Notebooks 03 (the sweep) and 19 (fast_loader).
"""

import time

import torch
from torch.utils.data import DataLoader


def samples_per_s(loader):
    for _ in loader:  # warm-up epoch: the workers start once and stay
        pass
    start, samples = time.perf_counter(), 0
    for xb, *_ in loader:
        samples += len(xb)
    return samples / (time.perf_counter() - start)


def sweep_num_workers(dataset, counts=(0, 1, 2, 4, 8), batch_size=64):
    return {n: samples_per_s(DataLoader(dataset, batch_size=batch_size, num_workers=n,
                                        persistent_workers=n > 0)) for n in counts}


def fast_loader(dataset, num_workers, batch_size=64):
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, drop_last=True,
                      num_workers=num_workers,
                      persistent_workers=num_workers > 0,  # no restart per epoch
                      prefetch_factor=2 if num_workers else None,  # raise only for jittery storage
                      pin_memory=torch.cuda.is_available())
