"""Written by notebook 15, section 4: loaders in a small /dev/shm (a child with its own /dev/shm runs it)."""

import shutil

import torch.multiprocessing as torch_mp
from lesson15_fd_limit import use_file_system
from lesson15_samples import Samples
from torch.utils.data import DataLoader


def keep_latest(configs: list[dict], watch, n: int = 192, dim: int = 2**17,
                timeout_s: float = 15) -> list[dict]:
    """For each config, pass once over a 2-worker loader of n samples of dim float32 values, keeping
    only the latest batch.

    `watch()` opens an instrument around each pass that records the peak growth of /dev/shm
    (`peak_growth_mb`).
    """
    results = []
    for config in configs:
        torch_mp.set_sharing_strategy(config["strategy"])
        loader = DataLoader(Samples(n, dim), batch_size=config["batch_size"], num_workers=2,
                            prefetch_factor=config["prefetch_factor"], timeout=timeout_s,
                            worker_init_fn=use_file_system if config["strategy"] == "file_system" else None)
        batches, error = 0, None
        with watch() as shm:
            try:
                batches = sum(1 for _batch in loader)  # only the latest batch is alive
            except RuntimeError as exc:
                error = f"{type(exc).__name__}: {exc}"
                exc.__traceback__ = None  # its frames hold the loader's iterator: now it stops its workers
        results.append({**config, "batches": batches, "error": error, "peak_mb": shm.peak_growth_mb,
                        "shm_mb": shutil.disk_usage("/dev/shm").total / 2**20})
    return results
