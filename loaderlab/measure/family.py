"""A process and all its descendants, measured together (psutil only): what a notebook's run
costs, kernel and every worker, subprocess and torchrun rank it starts.

One implementation for the test suite's notebook budgets (conftest.py) and the recorder
(tools/record.py): ``family_mb`` (memory now), ``FamilyMonitor`` (peak memory over a run, in a
background thread, and the children still alive after it), ``family_cpu_seconds`` (CPU time so
far) and ``machine_busy_seconds`` (the whole machine's, to tell our CPU use from the others').
"""

from __future__ import annotations

import threading
import time

import psutil

from loaderlab.processes import is_multiprocessing_helper

_BUSY = ("user", "nice", "system", "irq", "softirq")


def _family(root: psutil.Process) -> list[psutil.Process]:
    try:
        return [root] + root.children(recursive=True)
    except psutil.Error:
        return []


def family_mb(root: psutil.Process) -> float:
    """Return the memory of ``root`` and all its descendants now, in MB: their summed PSS on Linux
    (shared pages split between the processes that share them, so forked workers are not counted
    twice), their summed RSS elsewhere."""
    total = 0.0
    for proc in _family(root):
        try:
            info = proc.memory_full_info()
        except psutil.Error:
            continue
        total += getattr(info, "pss", info.rss)
    return total / 2**20


def family_cpu_seconds(root: psutil.Process) -> float:
    """Return the CPU seconds (user + system) used so far by ``root`` and its descendants, the
    ones still alive and the ones that have exited and been waited for (a parent's children
    times hold them): a DataLoader's workers, once joined, stay counted."""
    total = 0.0
    for proc in _family(root):
        try:
            t = proc.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0)
    return total


def machine_busy_seconds(cpus: list[int] | None = None) -> float:
    """Return the CPU seconds the whole machine (or only the listed CPUs) spent busy since boot."""
    if cpus is None:
        t = psutil.cpu_times()
        return sum(getattr(t, name, 0.0) for name in _BUSY)
    per_cpu = psutil.cpu_times(percpu=True)
    return sum(getattr(per_cpu[i], name, 0.0) for i in cpus for name in _BUSY)


class FamilyMonitor:
    """Reads the memory of process ``pid`` and its descendants every ``interval_s`` in a background
    thread, from now until ``stop()``; ``peak_mb`` is the highest reading (``family_mb``)."""

    def __init__(self, pid: int, interval_s: float = 0.2) -> None:
        self.root = psutil.Process(pid)
        self.interval_s = interval_s
        self.start = time.perf_counter()
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="loaderlab-family", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, family_mb(self.root))
            self._stop.wait(self.interval_s)

    def stop(self) -> tuple[float, float]:
        """Stop reading (after one last reading); return (seconds since the start, peak MB)."""
        seconds = time.perf_counter() - self.start
        self._stop.set()
        self._thread.join()
        self.peak_mb = max(self.peak_mb, family_mb(self.root))
        return seconds, self.peak_mb

    def leftover(self, wait_s: float = 5.0) -> list[psutil.Process]:
        """Return the descendants still alive (not zombies, not multiprocessing's own helpers)
        after waiting up to ``wait_s`` for them to exit."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                alive = [p for p in self.root.children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE
                         and not is_multiprocessing_helper(p, self.root.pid)]
            except psutil.Error:
                alive = []
            if not alive or time.monotonic() > deadline:
                return alive
            time.sleep(0.1)
