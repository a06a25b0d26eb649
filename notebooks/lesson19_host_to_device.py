"""Written by notebook 19 (19_persistent_workers_and_pin_memory.ipynb), section 2: a host-to-device copy."""

import statistics
import time

import torch


def host_to_device_seconds(batch: torch.Tensor, device: torch.device, pinned: bool,
                           repeats: int = 20) -> float:
    """Median seconds to copy a CPU batch to an accelerator (RuntimeError without one)."""
    source = batch.pin_memory() if pinned else batch  # page-locked copy, made once
    seconds = []
    for _ in range(repeats + 1):  # the first copy warms up the allocator: left out
        torch.accelerator.synchronize()
        start = time.perf_counter()
        source.to(device, non_blocking=pinned)  # from pinned memory the copy may run asynchronously
        torch.accelerator.synchronize()  # so wait for it: we time the copy, not its launch
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds[1:])
