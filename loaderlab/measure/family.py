"""A process and all its descendants, measured together (psutil only): what a notebook's run
costs, kernel and every worker, subprocess and torchrun rank it starts.

One implementation for the test suite's notebook budgets (conftest.py) and the recorder
(tools/record.py), and for ``loaderlab.OthersCpu``: ``FamilyMonitor`` (peak memory over a run,
in a background thread, and the children still alive after it), ``FamilyCpu`` (CPU time used
since a start, reaped and orphaned descendants included), ``machine_busy_seconds`` (the whole
machine's, to tell our CPU use from the others') and ``usable_cpus``.
"""

from __future__ import annotations

import os
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


def _pss_mb(procs: list[psutil.Process]) -> float:
    """The memory of ``procs`` now, in MB: their summed PSS on Linux (shared pages split between
    the processes that share them, so forked workers are not counted twice), their summed RSS
    elsewhere."""
    total = 0.0
    for proc in procs:
        try:
            info = proc.memory_full_info()
        except psutil.Error:
            continue
        total += getattr(info, "pss", info.rss)
    return total / 2**20


def _rss_mb(procs: list[psutil.Process]) -> float:
    total = 0.0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            continue
    return total / 2**20


def usable_cpus() -> list[int]:
    """Return the CPUs this process may run on (its affinity: taskset, a cpuset), among those that
    exist; all of them where the affinity cannot be read (macOS, Windows)."""
    existing = range(len(psutil.cpu_times(percpu=True)))
    if not hasattr(os, "sched_getaffinity"):
        return list(existing)
    return sorted(set(os.sched_getaffinity(0)) & set(existing)) or list(existing)


def _cpu(proc: psutil.Process) -> tuple[float, float, int] | None:
    """(own CPU seconds, reaped children's CPU seconds, parent pid) of ``proc``, None once gone."""
    try:
        with proc.oneshot():
            t, ppid = proc.cpu_times(), proc.ppid()
    except psutil.Error:
        return None
    return t.user + t.system, getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0), ppid


class FamilyCpu:
    """The CPU seconds ``root`` and its descendants used since this object was made.

    Each ``sample()`` reads every process of the family, and keeps following those that left it
    (a grandchild whose parent exited is adopted by init). A process's CPU counts once: while it
    lives, by its own times; once its parent reaps it, in the parent's reaped-children times (so
    a worker that starts and exits between two samples is counted); an orphan reaped by init,
    by its times at the last sample (what it used after that is lost: sample often, e.g. every
    0.2 s from a thread, when the family starts processes that outlive their parents).
    """

    def __init__(self, root: psutil.Process) -> None:
        self.root = root
        self._since = time.time()
        self._procs: dict[tuple[int, float], psutil.Process] = {}
        self._last: dict[tuple[int, float], tuple[float, float, int]] = {}  # own, reaped, ppid
        self._base: dict[tuple[int, float], float] = {}  # CPU used before we started counting
        self._retired = 0.0  # what the processes that are gone still count
        self._lock = threading.Lock()
        self.sample()

    def sample(self) -> float:
        """Read the family now; return the CPU seconds it used since this object was made."""
        with self._lock:
            for proc in _family(self.root):
                try:
                    key = (proc.pid, proc.create_time())
                except psutil.Error:
                    continue
                self._procs.setdefault(key, proc)
            alive: dict[tuple[int, float], tuple[float, float, int]] = {}
            for key, proc in self._procs.items():
                now = _cpu(proc)
                if now is None:
                    continue
                last = self._last.get(key)
                if last is None:  # new: what it used before we started is not ours
                    self._base[key] = sum(now[:2]) if key[1] < self._since else 0.0
                else:  # times only grow (a zombie may read lower)
                    now = (max(now[0], last[0]), max(now[1], last[1]), now[2])
                alive[key] = now
            living_pids = {pid for pid, _ in alive}
            for key in [k for k in self._procs if k not in alive]:
                last = self._last.get(key)
                if last is not None:
                    reaped_by_family = last[2] in living_pids
                    # reaped by a parent we follow: its whole life is now in that parent's
                    # reaped-children times, less what it used before we started
                    self._retired += -self._base[key] if reaped_by_family else sum(last[:2]) - self._base[key]
                del self._procs[key]
                self._last.pop(key, None)
                self._base.pop(key, None)
            self._last.update(alive)
            return self._retired + sum(sum(v[:2]) - self._base[k] for k, v in self._last.items())


def machine_busy_seconds(cpus: list[int] | None = None) -> float:
    """Return the CPU seconds the whole machine (or only the listed CPUs) spent busy since boot."""
    if cpus is None:
        t = psutil.cpu_times()
        return sum(getattr(t, name, 0.0) for name in _BUSY)
    per_cpu = psutil.cpu_times(percpu=True)
    return sum(getattr(per_cpu[i], name, 0.0) for i in cpus for name in _BUSY)


class FamilyMonitor:
    """Reads the memory of process ``pid`` and its descendants every ``interval_s`` in a background
    thread, from now until ``stop()``; ``peak_mb`` is the highest reading (summed PSS, ``_pss_mb``)."""

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
            self.read()
            self._stop.wait(self.interval_s)

    def read(self) -> None:
        """One reading. A process's PSS never exceeds its RSS, so when the family's summed RSS
        (0.02 ms a process) is no higher than the peak, its PSS (2.6 ms a process that imported
        torch: the kernel walks every mapping) cannot raise the peak and is not read."""
        family = _family(self.root)
        if _rss_mb(family) > self.peak_mb:
            self.peak_mb = max(self.peak_mb, _pss_mb(family))

    def stop(self) -> tuple[float, float]:
        """Stop reading (after one last reading); return (seconds since the start, peak MB)."""
        seconds = time.perf_counter() - self.start
        self._stop.set()
        self._thread.join()
        self.read()
        return seconds, self.peak_mb

    def leftover(self, wait_s: float = 5.0) -> list[psutil.Process]:
        """Return the descendants still alive (not zombies, not multiprocessing's own helpers)
        after waiting up to ``wait_s`` for them to exit."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                alive = [
                    p
                    for p in self.root.children(recursive=True)
                    if p.status() != psutil.STATUS_ZOMBIE and not is_multiprocessing_helper(p, self.root.pid)
                ]
            except psutil.Error:
                alive = []
            if not alive or time.monotonic() > deadline:
                return alive
            time.sleep(0.1)
