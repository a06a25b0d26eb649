"""Measuring instruments: throughput, per-worker memory, worker timelines, live workers."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import psutil
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

from loaderlab.datasets import AttributeForwarding
from loaderlab.loaders import batch_size_of, rebuild, require_loader, require_positive, stop_workers

_HELPER_MARKERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


def simulated_step(seconds: float) -> None:
    """Stand in for a training step on an accelerator: the main process waits ``seconds``
    while its CPU stays free (as it does while a GPU computes)."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"seconds must be a number, got {type(seconds).__name__}")
    if seconds < 0:
        raise ValueError(f"seconds must be >= 0, got {seconds}")
    time.sleep(seconds)


def _as_step(step: Callable[[Any], Any] | float | None) -> Callable[[Any], Any] | None:
    if step is None or callable(step):
        return step
    if isinstance(step, bool) or not isinstance(step, (int, float)):
        raise TypeError(f"step must be a callable or a number of seconds, got {type(step).__name__}")
    if step < 0:
        raise ValueError(f"step must be >= 0 seconds, got {step}")
    seconds = float(step)
    return lambda _batch: time.sleep(seconds)


def _is_helper(proc: psutil.Process, parent_pid: int) -> bool:
    # The resource tracker and the forkserver are direct children of the process that uses
    # them. Forkserver *workers* carry the forkserver's command line too, but are its children.
    try:
        cmdline = " ".join(proc.cmdline())
        return proc.ppid() == parent_pid and any(marker in cmdline for marker in _HELPER_MARKERS)
    except (psutil.Error, OSError):
        return False


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
            if child.is_running() and child.status() != psutil.STATUS_ZOMBIE and not _is_helper(child, me):
                alive.append(child)
        except psutil.Error:
            continue
    return alive


def wait_for_workers_to_exit(timeout_s: float = 5.0) -> int:
    """Wait up to ``timeout_s`` for worker processes to exit; return how many are still alive."""
    deadline = time.monotonic() + timeout_s
    while True:
        alive = live_workers()
        if not alive or time.monotonic() >= deadline:
            return len(alive)
        time.sleep(0.05)


# --------------------------------------------------------------------------- throughput


@dataclass
class Throughput:
    """What ``throughput`` measured: counts, wall time and the main process's waits."""

    batches: int
    samples: int
    seconds: float
    first_batch_s: float
    waits_s: list[float] = field(repr=False)

    @property
    def samples_per_s(self) -> float:
        return self.samples / self.seconds

    @property
    def batches_per_s(self) -> float:
        return self.batches / self.seconds

    @property
    def wait_s(self) -> float:
        """Total time the main process spent waiting for batches."""
        return sum(self.waits_s)

    @property
    def wait_fraction(self) -> float:
        """Share of the wall time spent waiting for data (0 = never starved)."""
        return self.wait_s / self.seconds


def throughput(
    loader: DataLoader,
    max_batches: int | None = None,
    step: Callable[[Any], Any] | float | None = None,
) -> Throughput:
    """Return samples/s and batches/s of one pass over ``loader`` (at most ``max_batches``).

    The clock starts before ``iter(loader)``, so worker start-up counts (it is part of every
    epoch unless workers persist), and stops at the last batch, before workers shut down. ``step`` is called on each batch (a callable, or seconds
    for ``simulated_step``); the time spent inside ``next()`` is recorded per batch.
    """
    require_loader(loader)
    require_positive(max_batches, "max_batches", allow_none=True)
    step_fn = _as_step(step)
    waits: list[float] = []
    samples = 0
    start = time.perf_counter()
    end = start
    iterator = iter(loader)
    try:
        while max_batches is None or len(waits) < max_batches:
            t0 = time.perf_counter()
            try:
                batch = next(iterator)
            except StopIteration:
                break
            waits.append(time.perf_counter() - t0)
            samples += batch_size_of(batch)
            if step_fn is not None:
                step_fn(batch)
        end = time.perf_counter()  # the pass ends here; shutting workers down is not part of it
    finally:
        if not loader.persistent_workers:
            stop_workers(iterator)
        del iterator
    seconds = end - start
    if not waits:
        raise ValueError("loader yielded no batches: nothing to measure")
    first = waits[0]
    return Throughput(len(waits), samples, seconds, first, waits)


# ------------------------------------------------------------------------ memory sampler


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


class WorkerMemorySampler(BackgroundSampler):
    """Context manager that samples USS, PSS and RSS of this process and its workers.

    A background thread reads every live worker (``live_workers()``) and the main process
    every ``interval_s`` seconds. PSS exists on Linux only (None elsewhere). Use
    ``records`` (tidy rows), ``peak_uss_by_worker()`` and ``worker_uss_growth_mb()``.
    """

    thread_name = "loaderlab-memory"

    def __init__(self, interval_s: float = 0.05, include_main: bool = True) -> None:
        super().__init__(interval_s)
        self.include_main = include_main
        self.records: list[MemoryRecord] = []
        self._t0 = 0.0
        self._baseline_uss_mb: float | None = None

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
        procs = [(p, "worker") for p in live_workers()]
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


# ---------------------------------------------------------------------- worker timeline

_TRACE_STATE: dict[str, float | None] = {"start": None}


def _open_batch() -> None:
    if _TRACE_STATE["start"] is None:
        _TRACE_STATE["start"] = time.perf_counter()


class _TracedDataset(AttributeForwarding, Dataset):
    """Wraps a map-style dataset to note when a worker starts fetching a batch.

    Attribute reads and writes go to the wrapped dataset, so a ``worker_init_fn`` that sets
    ``get_worker_info().dataset.rng`` still reaches the user's dataset.
    """

    def __init__(self, dataset: Dataset) -> None:
        object.__setattr__(self, "_inner", dataset)

    def __len__(self) -> int:
        return len(self._inner)  # type: ignore[arg-type]

    def __getitem__(self, index: Any) -> Any:
        _open_batch()
        return self._inner[index]

    def __getitems__(self, indices: list) -> list:
        _open_batch()
        inner = getattr(self._inner, "__getitems__", None)
        return inner(indices) if inner else [self._inner[i] for i in indices]


class _TracedIterable(IterableDataset):
    def __init__(self, dataset: IterableDataset) -> None:
        self.inner = dataset

    def __iter__(self) -> Iterator[Any]:
        for item in self.inner:
            _open_batch()
            yield item


class _TracedCollate:
    """Wraps collate_fn: returns ``(batch, meta)`` with the worker id, pid and fetch times."""

    def __init__(self, collate_fn: Callable[[Any], Any]) -> None:
        self.collate_fn = collate_fn

    def __call__(self, samples: Any) -> tuple[Any, dict[str, Any]]:
        _open_batch()
        batch = self.collate_fn(samples)
        end = time.perf_counter()
        info = get_worker_info()
        meta = {
            "worker": info.id if info is not None else -1,
            "pid": os.getpid(),
            "start": _TRACE_STATE["start"],
            "end": end,
        }
        _TRACE_STATE["start"] = None
        return batch, meta


@dataclass
class Timeline:
    """What ``trace_timeline`` recorded. Times are seconds since ``iter(loader)`` was called.

    ``records`` has one dict per batch: ``batch`` (its position), ``worker`` (-1 = main
    process), ``pid``, ``start``/``end`` (when the worker fetched and collated it),
    ``requested``/``received`` (when the main process asked and got it), ``wait`` (their
    difference) and ``step_end``. ``epoch_s`` is the wall time of the whole pass.
    """

    records: list[dict[str, Any]]
    epoch_s: float

    @property
    def wait_s(self) -> float:
        return sum(r["wait"] for r in self.records)

    @property
    def load_s(self) -> float:
        """Total fetch+collate time summed over batches (all workers)."""
        return sum(r["end"] - r["start"] for r in self.records)

    @property
    def warmup_batches(self) -> int:
        """How many batches it took until every worker had delivered one (1 without workers).

        A worker's first batch is fetched before there is any step to overlap with, and
        under spawn or forkserver it carries the new process's one-time costs (importing
        torch, first decode): the steady state starts after these batches.
        """
        first_seen: dict[int, int] = {}
        for position, r in enumerate(self.records):
            first_seen.setdefault(r["worker"], position)
        return max(first_seen.values(), default=-1) + 1

    def batches_per_worker(self) -> dict[int, int]:
        counts: dict[int, int] = {}
        for r in self.records:
            counts[r["worker"]] = counts.get(r["worker"], 0) + 1
        return dict(sorted(counts.items()))


def trace_timeline(
    loader: DataLoader,
    step: Callable[[Any], Any] | float | None = None,
    max_batches: int | None = None,
) -> Timeline:
    """Run one pass over a copy of ``loader`` and return which worker made each batch, when,
    and how long the main process waited for it.

    The copy yields the same batches (same sampler, collate_fn, workers); only its dataset and
    collate_fn are wrapped with timestamps. ``step`` runs on each batch as in ``throughput``.
    """
    require_loader(loader)
    require_positive(max_batches, "max_batches", allow_none=True)
    step_fn = _as_step(step)
    dataset = loader.dataset
    traced = _TracedIterable(dataset) if isinstance(dataset, IterableDataset) else _TracedDataset(dataset)
    traced_loader = rebuild(loader, dataset=traced, collate_fn=_TracedCollate(loader.collate_fn))
    records: list[dict[str, Any]] = []
    origin = time.perf_counter()
    iterator = iter(traced_loader)
    try:
        while max_batches is None or len(records) < max_batches:
            requested = time.perf_counter()
            try:
                batch, meta = next(iterator)
            except StopIteration:
                break
            received = time.perf_counter()
            if step_fn is not None:
                step_fn(batch)
            records.append(
                {
                    "batch": len(records),
                    "worker": meta["worker"],
                    "pid": meta["pid"],
                    "start": meta["start"] - origin,
                    "end": meta["end"] - origin,
                    "requested": requested - origin,
                    "received": received - origin,
                    "wait": received - requested,
                    "step_end": time.perf_counter() - origin,
                }
            )
        epoch_s = time.perf_counter() - origin  # worker shutdown below is not part of the pass
    finally:
        stop_workers(iterator)
        del iterator
    if not records:
        raise ValueError("loader yielded no batches: nothing to trace")
    return Timeline(records, epoch_s)

