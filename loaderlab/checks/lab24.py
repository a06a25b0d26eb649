"""Checker for lab 24: every worker's native thread pools (NumPy's BLAS, OpenMP) run one thread,
so ``num_workers`` workers use ``num_workers`` cores, not ``num_workers × cores`` threads
(notebook 24). The lab's experiment (``loaderlab.labs.lab24.worker_pools``) reports what each
worker runs with; this judges the report."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loaderlab.checks.report import NotCheckable, Wrong, checker
from loaderlab.labs.lab24 import MAIN_THREADS, NUM_WORKERS, no_init, pools, worker_pools

HINT = "Hint: notebook 24, sections 1 and 3, and its 'In your own code'"


@checker
def check_one_thread_workers(worker_init_fn: Callable[[int], Any]) -> str:
    """Return a confirmation if every worker of a 2-worker loader built with ``worker_init_fn``
    runs its BLAS and OpenMP pools on one thread; raise Wrong otherwise (NotCheckable where a
    worker's BLAS starts with one thread anyway)."""
    before = pools()
    if not before["blas"]:
        raise NotCheckable("threadpoolctl finds no BLAS library in NumPy here")
    control = worker_pools(no_init)
    if max(max(w["blas"]) for w in control) <= 1:
        raise NotCheckable(
            f"a worker's BLAS starts with one thread here (asked for {MAIN_THREADS}): nothing to limit"
        )
    workers = worker_pools(worker_init_fn)
    if len(workers) != NUM_WORKERS:
        raise Wrong(f"the loader returned {len(workers)} reports for {NUM_WORKERS} workers. {HINT}")
    blas = max(max(w["blas"]) for w in workers)
    openmp = max(max(w["openmp"], default=1) for w in workers)
    if blas > 1:
        if any(w["env"] for w in workers):
            raise Wrong(
                f"NumPy's BLAS still runs {blas} threads in each worker: an environment variable set "
                "in a running worker comes too late (the library read it when it was imported); "
                f"call threadpoolctl's threadpool_limits(limits=1) there instead. {HINT}"
            )
        raise Wrong(
            f"NumPy's BLAS still runs {blas} threads in each worker (torch.set_num_threads limits "
            "only torch's own pool, and a `with threadpool_limits(...)` block gives the threads back "
            f"when it ends): call threadpool_limits(limits=1) in the worker_init_fn. {HINT}"
        )
    if openmp > 1:
        raise Wrong(
            f"the workers' OpenMP pool runs {openmp} threads: limit every pool "
            f"(threadpool_limits(limits=1), no user_api). {HINT}"
        )
    return (
        f"each of the {NUM_WORKERS} workers runs BLAS and OpenMP on one thread (they started with "
        f"{max(max(w['blas']) for w in control)}); the main process keeps {max(before['blas'])}"
    )
