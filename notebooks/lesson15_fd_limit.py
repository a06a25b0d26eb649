"""Written by notebook 15, section 3: keep every batch under a lowered descriptor limit (in a child)."""

import glob
import multiprocessing
import resource

import psutil
import torch.multiprocessing as torch_mp
from lesson15_samples import Samples, keep_every_batch, open_fds
from torch.utils.data import DataLoader


def use_file_system(worker_id: int) -> None:
    """worker_init_fn: this worker sends its batches by name (a spawn or forkserver worker starts at
    the default)."""
    torch_mp.set_sharing_strategy("file_system")


def keep_under_limit(runs: list[dict], limit: int = 256, n_batches: int = 200) -> list[dict]:
    """Lower this process's descriptor limit to `limit`; for each run, keep every batch of a 2-worker
    loader."""
    # a forkserver imports torch once, not every worker
    multiprocessing.set_forkserver_preload(["lesson15_fd_limit"])
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    results = []
    for run in runs:
        torch_mp.set_sharing_strategy(run["strategy"])  # in this process, the main one
        loader = DataLoader(Samples(4 * n_batches), batch_size=4, num_workers=2, timeout=60,
                            multiprocessing_context=run["start"],
                            worker_init_fn=use_file_system if run["in_workers"] else None)
        kept, error = [], None
        try:
            keep_every_batch(loader, kept)
        except (RuntimeError, OSError) as exc:  # "Too many open files"
            error = f"{type(exc).__name__}: {exc}"
            exc.__traceback__ = None  # its frames hold the loader's iterator: now it stops its workers
        running = {p.info["name"] for p in psutil.process_iter(["name"])}
        results.append({**run, "batches": len(kept), "error": error, "fds_holding": open_fds(),
                        "segments_holding": len(glob.glob("/dev/shm/torch_*")),
                        "shm_manager": "torch_shm_manager" in running})
    return results
