"""Written by notebook 06, section 5: a worker_init_fn that runs a full garbage collection."""

import gc

import psutil


def uss_mb() -> float:
    """This process's USS in MB: the memory no other process shares with it."""
    return psutil.Process().memory_full_info().uss / 2**20


class CollectAtStart:
    """worker_init_fn: wait at `gate`, then run a full collection, as CPython does by itself after
    enough allocations, and store the MB it added to this worker's USS in added_mb[worker_id]."""

    def __init__(self, gate, added_mb):
        self.gate, self.added_mb = gate, added_mb  # added_mb: a shared array, one float per worker

    def __call__(self, worker_id: int) -> None:
        self.gate(worker_id)
        before = uss_mb()
        gc.collect()
        self.added_mb[worker_id] = uss_mb() - before
