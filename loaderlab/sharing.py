"""How worker batches reach the main process: shared-memory segments, the file descriptors
that keep them alive, the two sharing strategies of ``torch.multiprocessing``, and
reproductions of "Too many open files" and a full ``/dev/shm`` run in bounded child processes
(``run_child``, built on ``failures.run_bounded``).

Everything a child or a worker runs lives here, so ``spawn`` workers can unpickle it. The
children never change this process: the descriptor limit is lowered inside the child only,
and a small ``/dev/shm`` is a private tmpfs mounted in the child's own mount namespace
(``unshare --mount``), which disappears with the child.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import psutil
import torch
import torch.multiprocessing as torch_mp
from torch.utils.data import DataLoader

from loaderlab.failures import BoundedChild, run_bounded
from loaderlab.loaders import require_loader, require_positive, stop_workers
from loaderlab.workers import (
    SHM_PATH,
    SharedMemoryWatcher,
    SpikyLatencyDataset,
    shared_memory_used_mb,
)

_SEGMENT = re.compile(r"torch_\d+_\d+(_\d+)?")
_PIDS = re.compile(r"\bpid(\(s\))? \d+(, \d+)*")
_WORKER_ID = re.compile(r"\bworker process \d+")


# ------------------------------------------------------------------------------ counting


def open_fds() -> int | None:
    """Return how many file descriptors this process holds open (None where psutil cannot
    count them, e.g. Windows)."""
    try:
        return psutil.Process().num_fds()
    except (AttributeError, psutil.Error):
        return None


def torch_segments(path: str = SHM_PATH) -> int | None:
    """Return how many named torch segments (``torch_<pid>_<n>...`` files) lie in ``path``
    (``/dev/shm``): the ``file_system`` strategy leaves one per shared storage there while it
    is alive; ``file_descriptor`` unlinks each segment at once, so it never shows. None when
    ``path`` does not exist (macOS, Windows)."""
    if not isinstance(path, str):
        raise TypeError(f"path must be a str, got {type(path).__name__}")
    if not os.path.isdir(path):
        return None
    return sum(1 for name in os.listdir(path) if name.startswith("torch_"))


def batch_nbytes(batch: Any) -> int:
    """Return the bytes held by all tensors in ``batch`` (nested tuples, lists, dicts)."""
    if isinstance(batch, torch.Tensor):
        return batch.numel() * batch.element_size()
    if isinstance(batch, dict):
        return sum(batch_nbytes(v) for v in batch.values())
    if isinstance(batch, (list, tuple)):
        return sum(batch_nbytes(v) for v in batch)
    return 0


def shm_needed_bytes(batch_bytes: int, num_workers: int, prefetch_factor: int = 2, held: int = 1) -> int:
    """Return the shared memory a loader needs at its peak: every worker holds up to
    ``prefetch_factor`` finished batches plus the one it is collating (collate writes the
    batch straight into shared memory), and the main process holds ``held`` batches."""
    for name, value in (("batch_bytes", batch_bytes), ("num_workers", num_workers),
                        ("prefetch_factor", prefetch_factor)):
        require_positive(value, name)
    if isinstance(held, bool) or not isinstance(held, int) or held < 0:
        raise ValueError(f"held must be an int >= 0, got {held!r}")
    return batch_bytes * (num_workers * (prefetch_factor + 1) + held)


def shm_manager_running() -> bool:
    """Return True when a ``torch_shm_manager`` process runs on this machine (the
    ``file_system`` strategy starts one to unlink the segments of processes that died)."""
    for proc in psutil.process_iter(["name"]):
        if "torch_shm_manager" in (proc.info.get("name") or ""):
            return True
    return False


def stable_error(text: str) -> str:
    """Return the first and last line of an error message with process ids and segment
    names made stable (``pid N``, ``torch_N``, ``worker process N``): the parts that are the same on every run."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    picked = lines[:1] + (lines[-1:] if len(lines) > 1 else [])
    return "\n".join(
        _WORKER_ID.sub("worker process N", _PIDS.sub("pid N", _SEGMENT.sub("torch_N", line)))
        for line in picked
    )


# ------------------------------------------------------------------------ holding batches


@dataclass
class HoldReport:
    """What ``hold_batches`` saw: batches received and kept, descriptors and named segments
    at each stage, and the error that stopped it (made stable by ``stable_error``)."""

    strategy: str
    batches: int
    fds_before: int | None
    fds_with_workers: int | None
    fds_holding: int | None
    fds_released: int | None
    segments_holding: int | None
    fds_trace: list[int] = field(default_factory=list, repr=False)
    error: str | None = None
    shm_manager: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None

    def fds_per_batch(self) -> float:
        """Return the descriptors added per batch held (slope of ``fds_trace``)."""
        if len(self.fds_trace) < 2:
            raise ValueError("need at least 2 batches in fds_trace")
        return (self.fds_trace[-1] - self.fds_trace[0]) / (len(self.fds_trace) - 1)


def hold_batches(loader: DataLoader, max_batches: int | None = None, keep: int | None = None) -> HoldReport:
    """Return a HoldReport of one pass over ``loader`` that keeps received batches alive
    (all of them, or the last ``keep``), counting this process's descriptors after each batch.

    Errors are caught and reported. The workers are shut down and the batches released
    before returning; ``fds_released`` is counted after that.
    """
    require_loader(loader)
    require_positive(max_batches, "max_batches", allow_none=True)
    require_positive(keep, "keep", allow_none=True)
    strategy = torch_mp.get_sharing_strategy()
    before = open_fds()
    held: list[Any] = []
    trace: list[int] = []
    error = None
    count = 0
    iterator = iter(loader)
    with_workers = open_fds()
    try:
        while max_batches is None or count < max_batches:
            try:
                batch = next(iterator)
            except StopIteration:
                break
            count += 1
            held.append(batch)
            if keep is not None and len(held) > keep:
                held.pop(0)
            del batch
            fds = open_fds()
            if fds is not None:
                trace.append(fds)
    except Exception as exc:  # the error is the measurement
        error = stable_error(f"{type(exc).__name__}: {exc}")
        exc.__traceback__ = None  # frames would keep the iterator, and its workers, alive
    holding = open_fds()
    segments = torch_segments()
    manager = shm_manager_running()
    stop_workers(iterator)
    del iterator
    held.clear()
    return HoldReport(strategy, count, before, with_workers, holding, open_fds(), segments,
                      trace, error, manager)


def use_file_system_strategy(worker_id: int) -> None:
    """A ``worker_init_fn`` that switches the worker to the ``file_system`` strategy.

    The strategy is chosen by the process that *sends* a tensor (``reduce_storage`` runs in
    the worker), and it is a module global: forked workers inherit the main process's choice,
    but ``spawn``/``forkserver`` workers import torch afresh and start at the default.
    """
    torch_mp.set_sharing_strategy("file_system")


# ------------------------------------------------------------------------ child experiments


def _limit_fds(limit: int) -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))


FD_RUNS = (
    {"label": "default strategy", "strategy": "file_descriptor", "in_workers": False, "start": "fork"},
    {"label": "file_system, set in main (fork)", "strategy": "file_system", "in_workers": False, "start": "fork"},
    {"label": "file_system, set in main (forkserver)", "strategy": "file_system", "in_workers": False,
     "start": "forkserver"},
    {"label": "file_system, main + worker_init_fn (forkserver)", "strategy": "file_system",
     "in_workers": True, "start": "forkserver"},
)


def fd_limit_experiment(limit: int = 256, n_batches: int = 300,
                        runs: Sequence[dict[str, Any]] = FD_RUNS) -> list[dict[str, Any]]:
    """Return one HoldReport (as a dict, with the run's ``label``) per run: a 2-worker loader
    whose batches are all kept, in a process whose descriptor limit is ``limit``.

    Each run sets ``strategy`` in the main process, also in the workers when ``in_workers``
    (``worker_init_fn=use_file_system_strategy``), and starts workers with ``start``. Run it
    in a child only (``run_child``): it lowers this process's limit and its strategy.
    """
    import multiprocessing

    from loaderlab.datasets import LatencyDataset

    require_positive(limit, "limit")
    require_positive(n_batches, "n_batches")
    methods = multiprocessing.get_all_start_methods()
    if any(run["start"] == "forkserver" for run in runs) and "forkserver" in methods:
        # the server imports torch once (started now, it does so while the first runs go on);
        # the workers it forks start fast
        from multiprocessing import forkserver

        multiprocessing.get_context("forkserver").set_forkserver_preload(["loaderlab.sharing"])
        forkserver.ensure_running()
    _limit_fds(limit)
    reports = []
    for run in runs:
        if run["start"] not in methods:
            continue
        torch_mp.set_sharing_strategy(run["strategy"])
        dataset = LatencyDataset(n=4 * n_batches, latency_s=0.0, dim=4)
        init = use_file_system_strategy if run["in_workers"] else None
        loader = DataLoader(dataset, batch_size=4, num_workers=2, worker_init_fn=init, timeout=60,
                            multiprocessing_context=run["start"])
        report = asdict(hold_batches(loader))
        report.pop("fds_trace")
        reports.append({"label": run["label"], "start": run["start"], **report})
    return reports


@dataclass
class ShmRun:
    """One loader run inside a small ``/dev/shm``: its settings, the batches it delivered, the
    peak use of that ``/dev/shm`` in MB and its error (None when it finished)."""

    label: str
    strategy: str
    batch_size: int
    prefetch_factor: int
    batch_mb: float
    batches: int
    peak_shm_mb: float | None
    error: str | None


def shm_experiment(configs: Sequence[dict[str, Any]], n: int = 192, dim: int = 2**17,
                   keep: int = 1, timeout_s: float = 15.0) -> dict[str, Any]:
    """Return ``{"shm_mb": size of /dev/shm, "runs": [ShmRun as dict, ...]}``: one pass per
    config (keys ``label``, ``strategy``, ``batch_size``, ``prefetch_factor``) over ``n``
    float32 samples of ``dim`` values, with 2 workers, keeping the last ``keep`` batches.
    Each loader gives up after ``timeout_s`` seconds without a batch: when ``/dev/shm`` is
    full, a worker can also fail *while sending* a batch (in its queue's feeder thread, which
    only prints the error), and that batch never arrives.
    Run it in a child with a private small ``/dev/shm`` (``run_child(..., shm_mb=64)``); its
    workers use the platform's default start method (``LOADERLAB_START_METHOD`` is ignored:
    a private ``/dev/shm`` exists on Linux only)."""
    require_positive(n, "n")
    require_positive(dim, "dim")
    dataset = SpikyLatencyDataset(n=n, base_s=0.0, spike_s=0.0, dim=dim)
    runs = []
    baseline = shared_memory_used_mb() or 0.0
    for config in configs:
        # The segments of a failed run go when its workers have exited (seconds on a busy
        # machine); a run that started before would find /dev/shm still partly full.
        _wait_for_shm(baseline + 1.0, timeout_s=30.0)
        strategy = config["strategy"]
        torch_mp.set_sharing_strategy(strategy)
        init = use_file_system_strategy if strategy == "file_system" else None
        loader = DataLoader(dataset, batch_size=config["batch_size"], num_workers=2,
                            prefetch_factor=config["prefetch_factor"], worker_init_fn=init,
                            timeout=timeout_s)
        with SharedMemoryWatcher(interval_s=0.002) as watcher:
            report = hold_batches(loader, keep=keep)
        batch_mb = config["batch_size"] * (dim * 4 + 8) / 2**20
        runs.append(asdict(ShmRun(config["label"], strategy, config["batch_size"],
                                  config["prefetch_factor"], round(batch_mb, 1), report.batches,
                                  watcher.peak_growth_mb, report.error)))
    usage = shutil.disk_usage(SHM_PATH)
    return {"shm_mb": usage.total / 2**20, "runs": runs}


def _wait_for_shm(mb: float, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while (shared_memory_used_mb() or 0.0) > mb:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


_PRIVATE_SHM: dict[int, list[str] | None] = {}


def private_shm_prefix(shm_mb: int = 64) -> list[str] | None:
    """Return the command prefix that runs a program with its own ``shm_mb`` MB tmpfs on
    ``/dev/shm`` (a private mount namespace: the real ``/dev/shm`` is never touched), or None
    where that is impossible (not Linux, no ``unshare``, no right to mount)."""
    require_positive(shm_mb, "shm_mb")
    if shm_mb in _PRIVATE_SHM:
        return _PRIVATE_SHM[shm_mb]
    prefix = None
    if sys.platform.startswith("linux") and shutil.which("unshare") and os.path.isdir(SHM_PATH):
        mount = f"mount -t tmpfs -o size={shm_mb}m loaderlab-shm {SHM_PATH} && exec \"$@\""
        for flags in (["--mount"], ["--user", "--map-root-user", "--mount"]):
            candidate = ["unshare", *flags, "--propagation", "private", "sh", "-c", mount, "sh"]
            try:
                probe = subprocess.run([*candidate, "true"], capture_output=True, timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if probe.returncode == 0:
                prefix = candidate
                break
    _PRIVATE_SHM[shm_mb] = prefix
    return prefix


def run_child(function: str, timeout_s: float = 90.0, shm_mb: int | None = None,
              **kwargs: Any) -> BoundedChild:
    """Return a started ``failures.BoundedChild`` that runs ``loaderlab.sharing.<function>(**kwargs)``
    in a fresh Python (optionally with a private ``shm_mb`` MB ``/dev/shm``), stopped with all
    its processes after ``timeout_s`` seconds; call ``.result()``. Its workers use Python's
    default start method."""
    target = globals().get(function) if isinstance(function, str) else None
    if not callable(target) or getattr(target, "__module__", None) != __name__:
        raise ValueError(f"function must name a function of loaderlab.sharing, got {function!r}")
    require_positive(timeout_s, "timeout_s", integer=False)
    prefix = None
    if shm_mb is not None:
        prefix = private_shm_prefix(shm_mb)
        if prefix is None:
            raise RuntimeError("a private /dev/shm cannot be mounted here (needs Linux and unshare)")
    return run_bounded(target, bound_s=timeout_s, start_method=None, prefix=prefix, **kwargs)
