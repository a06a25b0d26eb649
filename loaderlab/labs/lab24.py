"""Lab 24's scaffolding: ``worker_pools(worker_init_fn)`` starts a 2-worker loader with that
``worker_init_fn`` and returns, for each worker, the native thread pools it runs with (torch's and
those ``threadpoolctl`` sees: BLAS, OpenMP) and the thread variables in its environment. The main
process's BLAS is raised to ``MAIN_THREADS`` threads while the workers start, so a forked worker
has threads to limit even on a 1-core machine (notebook 24). The checker
(``loaderlab.checks.lab24``) judges the report."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch
from torch.utils.data import DataLoader, get_worker_info

from loaderlab.loaders import stop_workers

MAIN_THREADS = 2
NUM_WORKERS = 2
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def pools() -> dict[str, Any]:
    """Return this process's thread pools: torch's, each threadpoolctl pool by API, and the
    thread variables set in its environment."""
    from threadpoolctl import threadpool_info

    found: dict[str, Any] = {"torch": torch.get_num_threads(), "blas": [], "openmp": []}
    for pool in threadpool_info():
        found.setdefault(pool["user_api"], []).append(pool["num_threads"])
    found["env"] = {name: os.environ[name] for name in THREAD_VARIABLES if name in os.environ}
    info = get_worker_info()
    found["worker"] = info.id if info is not None else None
    return found


def _report(index: int) -> dict[str, Any]:
    return pools()


def no_init(worker_id: int) -> None:
    """A worker_init_fn that does nothing: the workers as torch starts them."""


def worker_pools(worker_init_fn: Callable[[int], Any] | None,
                 timeout_s: float = 30.0) -> list[dict[str, Any]]:
    """Return ``pools()`` as seen inside each worker of a 2-worker loader built with
    ``worker_init_fn`` (the main process's BLAS has ``MAIN_THREADS`` threads while they start)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=MAIN_THREADS, user_api="blas"):
        # forked where the platform can: a worker_init_fn written in a notebook cell reaches the workers
        loader = DataLoader(range(NUM_WORKERS), batch_size=None, num_workers=NUM_WORKERS,
                            collate_fn=_report, worker_init_fn=worker_init_fn, timeout=timeout_s,
                            multiprocessing_context="fork" if hasattr(os, "fork") else None)
        iterator = iter(loader)
        try:
            return list(iterator)
        finally:  # also when worker_init_fn raised: the workers stop now, not when the traceback goes
            stop_workers(iterator)
