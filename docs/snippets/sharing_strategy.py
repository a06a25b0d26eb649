""""Too many open files" from a DataLoader, and a full /dev/shm.

On Linux a batch from a worker arrives in shared memory that your process holds through one
open file descriptor per tensor (the `file_descriptor` strategy): keep many received batches
and the descriptor limit (`ulimit -n`) runs out. Switch to `file_system` (segments travel by
name) in the main process AND in every worker: the strategy is read by the worker that sends,
and a worker started by spawn or forkserver (the default from Python 3.14) starts at the
default. Or raise the limit, or keep copies. A full /dev/shm (Docker: 64 MB) fails with either
strategy: `docker run --shm-size=2g` (or `--ipc=host`), smaller batches, a lower
prefetch_factor. Notebook 15.
"""

import torch.multiprocessing
from torch.utils.data import DataLoader


def use_file_system(worker_id):
    """worker_init_fn: this worker sends its batches by name, not by descriptor."""
    torch.multiprocessing.set_sharing_strategy("file_system")


def file_system_loader(dataset, **loader_kwargs):
    torch.multiprocessing.set_sharing_strategy("file_system")  # the main process
    return DataLoader(dataset, worker_init_fn=use_file_system, **loader_kwargs)  # each worker


def raise_open_files_limit():
    """Raise this process's soft descriptor limit to its hard limit (Linux); return it."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def keep(batch):
    """What to keep of a received batch: private copies, which hold no descriptor."""
    xb, yb = batch
    return xb.clone(), yb.clone()
