"""Process and memory instruments: ``live_workers``, ``wait_for_workers_to_exit``, ``OthersCpu``
(notebook 03), ``WorkerMemorySampler`` with its ``MemoryGate`` (06, the lab 06 checker, the
doctor), and ``SharedMemoryWatcher`` / ``shared_memory_used_mb`` (03, 15)."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import psutil
from torch.utils.data import DataLoader

from loaderlab._validate import require_loader, require_positive
from loaderlab.loaders import stop_workers
from loaderlab.measure.family import FamilyCpu, usable_cpus
from loaderlab.measure.family import machine_busy_seconds as _busy_seconds
from loaderlab.measure.passes import Pass, timed_batches
from loaderlab.processes import is_multiprocessing_helper

SHM_PATH = "/dev/shm"


def live_workers() -> list[psutil.Process]:
    """Return the worker processes alive under this process (multiprocessing's resource
    tracker and forkserver, which serve every worker, are not counted; the workers that a
    forkserver starts are)."""
    me = os.getpid()
    try:
        children = psutil.Process(me).children(recursive=True)
    except psutil.Error:
        return []
    alive = []
    for child in children:
        try:
            alive_now = child.is_running() and child.status() != psutil.STATUS_ZOMBIE
            if alive_now and not is_multiprocessing_helper(child, me):
                alive.append(child)
        except psutil.Error:
            continue
    return alive


class OthersCpu:
    """How many cores the rest of the machine kept busy while a block ran.

    ``with OthersCpu() as others: ...`` then ``others.cores``: the machine's busy CPU time
    minus this process's and its descendants' (workers, a forkserver, the ones that exited and
    were waited for), per second of the block. ``start()`` and ``stop()`` do the same where the
    window is not a block (from a loop's first batch to its end). A descendant whose parent
    exits before it does is followed from one reading to the next: ``interval_s`` reads the
    family that often from a background thread, so such a process is lost for at most that long.

    ``OthersCpu(usable_only=True)`` counts only the CPUs this process may run on (its affinity,
    e.g. ``taskset -c 0``), and ``free`` is then how many of those the others left: what a
    loader of ours could have used.
    """

    cores = 0.0
    free = 0.0

    def __init__(self, usable_only: bool = False, interval_s: float | None = None):
        self.usable_only = usable_only
        self.interval_s = interval_s
        self._reader: threading.Thread | None = None
        self._done = threading.Event()

    def start(self) -> OthersCpu:
        """Start the window now; return self."""
        self._cpus = usable_cpus() if self.usable_only else None
        self._ours = FamilyCpu(psutil.Process())
        self._start = (time.perf_counter(), _busy_seconds(self._cpus))
        self.cores = self.free = 0.0
        if self.interval_s:
            self._done.clear()
            self._reader = threading.Thread(target=self._read_family, name="loaderlab-others", daemon=True)
            self._reader.start()
        return self

    def _read_family(self) -> None:
        while not self._done.wait(self.interval_s):
            self._ours.sample()

    def stop(self) -> float:
        """End the window; set and return ``cores``, the others' busy cores during it."""
        if not hasattr(self, "_start"):
            raise RuntimeError("OthersCpu.stop() needs a start() first")
        if self._reader is not None:
            self._done.set()
            self._reader.join()
            self._reader = None
        t0, busy0 = self._start
        elapsed = time.perf_counter() - t0
        others = (_busy_seconds(self._cpus) - busy0) - self._ours.sample()
        self.cores = max(0.0, others / elapsed) if elapsed > 0 else 0.0
        counted = len(self._cpus) if self._cpus is not None else len(psutil.cpu_times(percpu=True))
        self.free = max(0.0, counted - self.cores)
        return self.cores

    def __enter__(self) -> OthersCpu:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_for_workers_to_exit(timeout_s: float = 5.0) -> int:
    """Wait up to ``timeout_s`` for worker processes to exit; return how many are still alive."""
    deadline = time.monotonic() + timeout_s
    while True:
        alive = live_workers()
        if not alive or time.monotonic() >= deadline:
            return len(alive)
        time.sleep(0.05)


@dataclass
class MemoryRecord:
    """One reading of one process: seconds since the sampler started, and memory in MB."""

    t: float
    pid: int
    role: str  # "main" or "worker"
    rss_mb: float
    uss_mb: float
    pss_mb: float | None


_Sampler = TypeVar("_Sampler", bound="BackgroundSampler")


class BackgroundSampler:
    """Base of the instruments that read something every ``interval_s`` seconds in a
    background thread while a ``with`` block runs: subclasses define ``sample()`` (one
    reading) and may override ``_begin()`` (baseline readings, taken before the thread starts).
    """

    thread_name = "loaderlab-sampler"

    def __init__(self, interval_s: float) -> None:
        require_positive(interval_s, "interval_s", integer=False)
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        """Take one reading now."""
        raise NotImplementedError

    def _begin(self) -> None:
        """Reset and take baselines; called on entering the ``with`` block."""

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)

    def __enter__(self: _Sampler) -> _Sampler:
        self._begin()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


class MemoryGate:
    """A ``worker_init_fn`` that holds each new worker until the sampler that made it has
    read it once (``WorkerMemorySampler.gate``), so that first reading precedes any fetch.

    It pickles (an Event of the spawn context, which fork, spawn and forkserver workers all
    accept). Call it from your own ``worker_init_fn`` to run more code after the gate.
    """

    def __init__(self, timeout_s: float = 60.0) -> None:
        import multiprocessing

        require_positive(timeout_s, "timeout_s", integer=False)
        context = multiprocessing.get_context("spawn")
        self.timeout_s = timeout_s
        self._event, self._arrived = context.Event(), context.Semaphore(0)

    def __call__(self, worker_id: int) -> None:
        self._arrived.release()
        self._event.wait(self.timeout_s)

    def wait_for(self, num_workers: int) -> None:
        """Return once ``num_workers`` workers wait at the gate; raise after ``timeout_s``."""
        deadline = time.monotonic() + self.timeout_s
        for arrived in range(num_workers):
            if not self._arrived.acquire(timeout=max(0.0, deadline - time.monotonic())):
                raise RuntimeError(
                    f"{arrived} of {num_workers} workers reached the gate within "
                    f"{self.timeout_s:.0f} s: build the loader with worker_init_fn=mem.gate"
                )

    def open(self) -> None:
        """Let the waiting workers (and every later one) go on."""
        self._event.set()

    def close(self) -> None:
        """Make workers started from now on wait again."""
        self._event.clear()
        while self._arrived.acquire(block=False):  # arrivals of an earlier pass
            pass

    def __repr__(self) -> str:
        return f"MemoryGate(open={self._event.is_set()})"


class WorkerMemorySampler(BackgroundSampler):
    """Context manager that samples USS, PSS and RSS of this process and its workers.

    A background thread reads every live worker (``live_workers()``) and the main process
    every ``interval_s`` seconds. PSS exists on Linux only (None elsewhere). Use
    ``records`` (tidy rows), ``peak_uss_by_worker()`` and ``worker_uss_growth_mb()``.

    Around one epoch of a loader you built: pass ``worker_init_fn=mem.gate`` and loop over
    ``mem.watch(loader)``; each worker is then read once before it fetches anything, and
    the readings stop before the workers do (see ``watch``).
    """

    thread_name = "loaderlab-memory"

    def __init__(self, interval_s: float = 0.05, include_main: bool = True) -> None:
        super().__init__(interval_s)
        self.include_main = include_main
        self.records: list[MemoryRecord] = []
        self._t0 = 0.0
        self._baseline_uss_mb: float | None = None
        self._gate: MemoryGate | None = None
        self._ignored: set[int] = set()

    @property
    def gate(self) -> MemoryGate:
        """The ``worker_init_fn`` to pass to the loader that ``watch`` runs: a worker waits
        there until the sampler has read it once (``watch`` opens it)."""
        if self._gate is None:
            self._gate = MemoryGate()
        return self._gate

    def watch(self, loader: DataLoader, max_batches: int | None = None) -> Iterator[Any]:
        """Yield the batches of one pass over ``loader`` while sampling, and stop the workers
        only after the last reading.

        A garbage collection runs here first (a worker inherits the collector's counters, so a
        nearly-due full collection would otherwise run in a worker before its first reading).
        Workers alive before ``iter(loader)`` are not read. If the loader was built with
        ``worker_init_fn=self.gate``, every worker is read once when all wait at the gate
        (started, nothing fetched yet), and the gate opens. After the last batch one more reading is taken and
        sampling stops; then the workers are shut down (unless they persist), unobserved
        (for a loader without a length, torch shuts them down as the pass ends, before it):
        while one worker exits, pages it still shared with another become the other's alone,
        a jump in USS that the epoch did not cause.
        """
        require_loader(loader)
        require_positive(max_batches, "max_batches", allow_none=True)
        return self._watch(loader, max_batches)

    def _watch(self, loader: DataLoader, max_batches: int | None) -> Iterator[Any]:
        import gc

        if self._gate is not None:
            self._gate.close()
        self._ignored = {p.pid for p in live_workers()}
        gc.collect()
        iterator = iter(loader)  # starts the workers; with the gate they wait there
        try:
            if self._gate is not None:
                self._gate.wait_for(loader.num_workers)
        except BaseException:
            stop_workers(iterator)
            raise
        # Ask for exactly len(loader) batches: the next() that raises StopIteration would shut
        # the workers down (``_next_data``) before the last reading.
        total = len(loader) if hasattr(loader.dataset, "__len__") else None
        if max_batches is not None:
            total = max_batches if total is None else min(total, max_batches)
        self.__enter__()
        self.sample()
        if self._gate is not None:
            self._gate.open()

        def last_reading() -> None:  # while the workers are still alive, then stop sampling
            try:
                self.sample()
            finally:
                self.__exit__()

        yield from timed_batches(loader, Pass(), total, iterator=iterator, before_stop=last_reading)

    def _read(self, proc: psutil.Process, role: str, t: float) -> MemoryRecord | None:
        try:
            info = proc.memory_full_info()
        except (psutil.Error, OSError):
            return None
        mb = 1024 * 1024
        pss = getattr(info, "pss", None)
        return MemoryRecord(
            t, proc.pid, role, info.rss / mb, info.uss / mb, pss / mb if pss is not None else None
        )

    def sample(self) -> None:
        """Take one reading now (the thread calls this; call it yourself for an extra point)."""
        t = time.perf_counter() - self._t0
        procs = [(p, "worker") for p in live_workers() if p.pid not in self._ignored]
        if self.include_main:
            procs.append((psutil.Process(), "main"))
        for proc, role in procs:
            record = self._read(proc, role, t)
            if record is not None:
                self.records.append(record)

    def _begin(self) -> None:
        self._t0 = time.perf_counter()
        main = self._read(psutil.Process(), "main", 0.0)
        self._baseline_uss_mb = main.uss_mb if main else None

    def worker_pids(self) -> list[int]:
        """Return the PIDs of the workers seen, in order of first appearance."""
        return list(dict.fromkeys(r.pid for r in self.records if r.role == "worker"))

    def peak_uss_by_worker(self) -> dict[int, float]:
        """Return each worker's peak USS (MB): memory that is the worker's alone."""
        peaks: dict[int, float] = {}
        for r in self.records:
            if r.role == "worker":
                peaks[r.pid] = max(peaks.get(r.pid, 0.0), r.uss_mb)
        return peaks

    def worker_uss_growth_mb(self) -> dict[int, float]:
        """Return each worker's USS growth (MB): its peak minus its first reading."""
        first: dict[int, float] = {}
        for r in self.records:
            if r.role == "worker":
                first.setdefault(r.pid, r.uss_mb)
        return {pid: peak - first[pid] for pid, peak in self.peak_uss_by_worker().items()}

    def peak_total_pss_mb(self) -> float | None:
        """Return the peak, over readings, of the summed PSS of main + workers (Linux only)."""
        totals: dict[float, float] = {}
        for r in self.records:
            if r.pss_mb is None:
                return None
            totals[r.t] = totals.get(r.t, 0.0) + r.pss_mb
        return max(totals.values()) if totals else None


def shared_memory_used_mb() -> float | None:
    """Return the MB used in ``/dev/shm`` (where workers put batches on Linux), or None when
    the system has no ``/dev/shm`` (macOS, Windows)."""
    if not os.path.isdir(SHM_PATH):
        return None
    return shutil.disk_usage(SHM_PATH).used / 2**20


class SharedMemoryWatcher(BackgroundSampler):
    """Context manager that records the peak growth of ``/dev/shm`` use while it is open.

    Batches made by workers travel to the main process through shared memory; batches
    prefetched but not yet consumed sit there. ``peak_growth_mb`` is None where there is no
    ``/dev/shm``. The figure is machine-wide: other programs using shared memory add to it.
    """

    thread_name = "loaderlab-shm"

    def __init__(self, interval_s: float = 0.005) -> None:
        super().__init__(interval_s)
        self.baseline_mb: float | None = None
        self.peak_growth_mb: float | None = None

    def sample(self) -> None:
        """Take one reading now."""
        used = shared_memory_used_mb()
        if used is None or self.baseline_mb is None:
            return
        growth = max(0.0, used - self.baseline_mb)
        self.peak_growth_mb = max(self.peak_growth_mb or 0.0, growth)

    def _begin(self) -> None:
        self.baseline_mb = shared_memory_used_mb()
        self.peak_growth_mb = 0.0 if self.baseline_mb is not None else None
