"""Measuring instruments: throughput, per-worker memory, worker timelines, live workers."""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import psutil
from torch.utils.data import DataLoader, default_collate, get_worker_info

from loaderlab._validate import require_loader, require_positive, require_seconds
from loaderlab.loaders import batch_size_of, rebuild, stop_workers

_HELPER_MARKERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


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


def _busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy since boot (all cores)."""
    t = psutil.cpu_times()
    return sum(getattr(t, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq"))


def _own_seconds() -> float:
    """CPU seconds used by this process, its reaped children and its live descendants."""
    me = psutil.Process()
    times = me.cpu_times()
    total = times.user + times.system + times.children_user + times.children_system
    for child in me.children(recursive=True):
        try:
            t = child.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            continue
    return total


class OthersCpu:
    """How many cores the rest of the machine kept busy while a block ran.

    ``with OthersCpu() as others: ...`` then ``others.cores``: the machine's busy CPU time
    minus this process's and its descendants' (workers, a forkserver), per second of the
    block. Start it while the workers you measure are alive (persistent workers): a process
    of ours that starts and exits inside the block is counted as someone else's.
    """

    def __enter__(self) -> OthersCpu:
        self._start = (time.perf_counter(), _busy_seconds(), _own_seconds())
        self.cores = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        t0, busy0, own0 = self._start
        elapsed = time.perf_counter() - t0
        others = (_busy_seconds() - busy0) - (_own_seconds() - own0)
        self.cores = max(0.0, others / elapsed) if elapsed > 0 else 0.0


def wait_for_workers_to_exit(timeout_s: float = 5.0) -> int:
    """Wait up to ``timeout_s`` for worker processes to exit; return how many are still alive."""
    deadline = time.monotonic() + timeout_s
    while True:
        alive = live_workers()
        if not alive or time.monotonic() >= deadline:
            return len(alive)
        time.sleep(0.05)


# ------------------------------------------------------------------------ the pass timer


@dataclass
class Pass:
    """What one pass over a loader saw: ``timed_pass`` and ``timed_batches`` fill it, and every
    instrument (``throughput``, ``Tracer``, ``WorkerMemorySampler.watch``), checker and the
    doctor reads it. Times are seconds since the pass began (just before ``iter()``)."""

    num_workers: int = 0
    requested_s: list[float] = field(default_factory=list, repr=False)  # each next() began
    received_s: list[float] = field(default_factory=list, repr=False)  # ... and returned
    step_end_s: list[float] = field(default_factory=list, repr=False)  # the loop body ended
    sizes: list[int] = field(default_factory=list, repr=False)  # samples per batch
    metas: list[Any] = field(default_factory=list, repr=False)  # TracedCollate's, else None
    values: list[Any] = field(default_factory=list, repr=False)  # the batches (``keep=True``)
    seconds: float = 0.0  # the whole pass, worker shutdown excluded
    finished: bool = False  # the loader ran out: a whole epoch was seen
    error: Exception | None = None  # what ended the pass (``catch=True``), traceback dropped
    raised_at: str | None = None  # its innermost frame: "file.py:LINE in func"
    origin: float = field(default=0.0, repr=False)  # time.perf_counter() when it began

    @property
    def batches(self) -> int:
        return len(self.sizes)

    @property
    def samples(self) -> int:
        return sum(self.sizes)

    @property
    def waits_s(self) -> list[float]:
        """How long each ``next()`` waited for its batch."""
        return [b - a for a, b in zip(self.requested_s, self.received_s, strict=True)]

    @property
    def steps_s(self) -> list[float]:
        """How long the loop body (the training step) ran on each batch."""
        return [e - r for r, e in zip(self.received_s, self.step_end_s, strict=False)]

    @property
    def first_batch_s(self) -> float:
        """Seconds until the first batch arrived (worker start-up included)."""
        return self.received_s[0] if self.received_s else self.seconds

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

    @property
    def step_s(self) -> float:
        """Total time spent in the loop body."""
        return sum(self.steps_s)

    @property
    def steady_samples_per_s(self) -> float | None:
        """Samples per second of waiting once every worker delivered its first batch (start-up
        excluded); None when fewer than 2 batches are left to time."""
        skip = max(1, self.num_workers)  # each worker's first batch includes its start-up
        waits = self.waits_s[skip:]
        if len(waits) < 2 or sum(waits) <= 0:
            return None
        return sum(self.sizes[skip:]) / sum(waits)


def timed_batches(
    batches: Iterable[Any],
    run: Pass,
    max_batches: int | None = None,
    seconds: float | None = None,
    *,
    count_startup: bool = False,
    keep: bool = False,
    catch: bool = False,
    kill: bool = False,
    iterator: Iterator[Any] | None = None,
    before_stop: Callable[[], Any] | None = None,
) -> Iterator[Any]:
    """Yield the batches of one pass over ``batches`` (a DataLoader or any iterable) and record
    in ``run`` when each was asked for, received and done with: the one pass timer.

    The pass stops after ``max_batches``, or once ``seconds`` have passed since the first batch
    arrived (``count_startup``: since the pass began). ``keep`` stores the batches in
    ``run.values``; ``catch`` ends the pass on an error from the loader and stores it in
    ``run.error`` instead of raising. ``iterator``: one already made by ``iter(batches)``.
    Batches of a ``TracedCollate`` are unwrapped (their worker metadata goes to ``run.metas``).

    In a ``finally``, after ``before_stop()``: a DataLoader's workers are shut down, unless they
    persist (then the loader keeps them); ``kill`` terminates the workers of a pass that did not
    finish first (a stuck worker would make the shutdown wait 5 s), persistent or not.
    """
    require_positive(max_batches, "max_batches", allow_none=True)
    if seconds is not None:
        require_seconds(seconds, "seconds")
    run.num_workers = getattr(batches, "num_workers", 0)
    run.origin = origin = time.perf_counter()
    deadline = origin + seconds if seconds is not None and count_startup else float("inf")
    iterator = iter(batches) if iterator is None else iterator
    try:
        while (max_batches is None or run.batches < max_batches) and time.perf_counter() < deadline:
            requested = time.perf_counter()
            try:
                item = next(iterator)
            except StopIteration:
                run.finished = True
                break
            except Exception as exc:
                if not catch:
                    raise
                run.error, run.raised_at = exc, traceback_tail(exc)
                exc.__traceback__ = None  # its frames would keep the iterator, and the workers, alive
                break
            received = time.perf_counter()
            if seconds is not None and not run.received_s and not count_startup:
                deadline = received + seconds
            meta = None
            if isinstance(item, TracedBatch):
                item, meta = item
            run.requested_s.append(requested - origin)
            run.received_s.append(received - origin)
            run.sizes.append(batch_size_of(item))
            run.metas.append(meta)
            if keep:
                run.values.append(item)
            yield item
            run.step_end_s.append(time.perf_counter() - origin)
    finally:
        run.seconds = time.perf_counter() - origin
        if len(run.step_end_s) < run.batches:  # the loop broke out during its body
            run.step_end_s.append(run.seconds)
        try:
            if before_stop is not None:
                before_stop()
        finally:
            if isinstance(batches, DataLoader):
                cut = kill and not run.finished
                if cut or not batches.persistent_workers:
                    stop_workers(iterator, kill=cut)
                if cut and batches._iterator is iterator:
                    batches._iterator = None  # the next pass starts new workers
            del iterator


def timed_pass(
    loader: Iterable[Any],
    max_batches: int | None = None,
    seconds: float | None = None,
    step: Callable[[Any], Any] | float | None = None,
    on_batch: Callable[[int], Any] | None = None,
    **options: Any,
) -> Pass:
    """Return the ``Pass`` of one pass over ``loader``: ``step`` runs on each batch (a callable,
    or seconds of sleep), ``on_batch(n)`` after the n-th batch. ``max_batches``, ``seconds``
    and ``options`` (``count_startup``, ``keep``, ``catch``, ``kill``) as in ``timed_batches``."""
    step_fn = _as_step(step)
    run = Pass()
    batches = timed_batches(loader, run, max_batches, seconds, **options)
    try:
        for batch in batches:
            if on_batch is not None:
                on_batch(run.batches)
            if step_fn is not None:
                step_fn(batch)
    finally:
        batches.close()  # stops the workers now, even when a step raised
    return run


def throughput(
    loader: DataLoader,
    max_batches: int | None = None,
    step: Callable[[Any], Any] | float | None = None,
) -> Pass:
    """Return the ``Pass`` (``samples_per_s``, ``batches_per_s``, ``wait_fraction``, ...) of one
    pass over ``loader`` (at most ``max_batches``), ``step`` running on each batch (a callable,
    or seconds of sleep). For instruments that sweep loaders; in a lesson, write the loop over
    ``Tracer.watch``."""
    require_loader(loader)
    run = timed_pass(loader, max_batches, step=step)
    if not run.batches:
        raise ValueError("loader yielded no batches: nothing to measure")
    return run


def traceback_tail(exc: BaseException) -> str | None:
    """Return the innermost frame of ``exc``'s traceback as ``"file.py:LINE in func"``."""
    tb = exc.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    return f"{os.path.basename(code.co_filename)}:{tb.tb_lineno} in {code.co_name}"


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
                raise RuntimeError(f"{arrived} of {num_workers} workers reached the gate within "
                                   f"{self.timeout_s:.0f} s: build the loader with worker_init_fn=mem.gate")

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


# ---------------------------------------------------------------------- worker timeline


class TracedBatch(NamedTuple):
    """What ``TracedCollate`` returns: the batch, and which worker made it and when."""

    batch: Any
    meta: dict[str, Any]


class TracedCollate:
    """A ``collate_fn`` that wraps another (``default_collate`` by default) and returns
    ``TracedBatch(batch, meta)``: the worker id (-1: the main process), its pid and the
    ``time.perf_counter()`` at which the batch was done. ``Tracer.watch`` unwraps it."""

    def __init__(self, collate_fn: Callable[[Any], Any] = default_collate) -> None:
        if not callable(collate_fn):
            raise TypeError(f"collate_fn must be callable, got {type(collate_fn).__name__}")
        self.collate_fn = collate_fn

    def __call__(self, samples: Any) -> TracedBatch:
        batch = self.collate_fn(samples)
        info = get_worker_info()
        meta = {"worker": info.id if info is not None else -1, "pid": os.getpid(),
                "end": time.perf_counter()}
        return TracedBatch(batch, meta)

    def __repr__(self) -> str:
        return f"TracedCollate({getattr(self.collate_fn, '__name__', self.collate_fn)!r})"


@dataclass
class Timeline:
    """What ``Tracer`` recorded. Times are seconds since the loop called ``iter(loader)``.

    ``records`` has one dict per batch: ``batch`` (its position), ``worker`` (-1 = main
    process), ``pid``, ``start``/``end`` (when the worker began and finished it),
    ``requested``/``received`` (when the main process asked and got it), ``wait`` (their
    difference) and ``step_end`` (when the loop body finished). ``epoch_s`` is the wall time
    of the whole pass.

    ``end`` is stamped in the worker. ``start`` follows from how torch hands out work
    (``torch/utils/data/dataloader.py``, ``_MultiProcessingDataLoaderIter``): ``_reset`` sends
    ``prefetch_factor * num_workers`` batch indices at ``iter()``, and ``_process_data`` sends
    one more each time it returns a batch; a worker takes them in order, so it begins batch k
    when index k has arrived and its previous batch is done. A worker's first bar therefore
    includes its start-up (a fork: milliseconds; spawn: importing torch).
    """

    records: list[dict[str, Any]]
    epoch_s: float

    @property
    def wait_s(self) -> float:
        """Total time the main process spent waiting for batches."""
        return sum(r["wait"] for r in self.records)

    @property
    def load_s(self) -> float:
        """Total time the workers spent on batches (bars summed, start-up included)."""
        return sum(r["end"] - r["start"] for r in self.records)

    @property
    def typical_load_s(self) -> float:
        """Median time one batch took to make, once every worker had started."""
        steady = self.records[self.warmup_batches:] or self.records
        return statistics.median(r["end"] - r["start"] for r in steady)

    @property
    def warmup_batches(self) -> int:
        """How many batches it took until every worker had delivered one (1 without workers).

        A worker's first batch is fetched before there is any step to overlap with, and
        carries the new process's start-up (under spawn or forkserver: importing torch):
        the steady state starts after these batches.
        """
        first_seen: dict[int, int] = {}
        for position, r in enumerate(self.records):
            first_seen.setdefault(r["worker"], position)
        return max(first_seen.values(), default=-1) + 1

    def batches_per_worker(self) -> dict[int, int]:
        """Return ``{worker id: batches it made}`` (-1: the main process)."""
        counts: dict[int, int] = {}
        for r in self.records:
            counts[r["worker"]] = counts.get(r["worker"], 0) + 1
        return dict(sorted(counts.items()))


class Tracer:
    """Times the loop you write over a loader you built, batch by batch.

    ``for xb, yb in tracer.watch(loader): ...`` yields the loader's batches and records when
    each was asked for and received, and when your loop body finished with it; afterwards
    ``tracer.throughput`` has the counts and waits (a ``Pass``). Pass ``collate_fn=tracer.collate``
    (or ``tracer.collate_with(your_collate)``) to the DataLoader and ``tracer.timeline`` also
    says which worker made each batch and when. Each ``watch`` starts a new recording.
    """

    def __init__(self) -> None:
        self.collate = TracedCollate()
        self.run: Pass | None = None
        self._loader: Any = None

    @staticmethod
    def collate_with(collate_fn: Callable[[Any], Any]) -> TracedCollate:
        """Return a collate_fn that runs ``collate_fn`` and tags its batches for the timeline."""
        return TracedCollate(collate_fn)

    def watch(self, batches: Iterable[Any], max_batches: int | None = None) -> Iterator[Any]:
        """Yield the batches of one pass over ``batches`` (a DataLoader or any iterable),
        at most ``max_batches``, timing each ``next()`` and each loop body (``timed_batches``).

        The clock starts before ``iter()``, so worker start-up counts (it is part of every
        epoch unless workers persist), and stops when the pass ends; a DataLoader's workers
        are then shut down (unless they persist), as the end of a ``for`` loop does.
        """
        if not isinstance(batches, Iterable):
            raise TypeError(f"watch() needs a DataLoader or another iterable of batches, got {type(batches).__name__}")
        require_positive(max_batches, "max_batches", allow_none=True)
        self.run, self._loader = Pass(), batches
        return timed_batches(batches, self.run, max_batches)

    def _require_pass(self) -> Pass:
        if self.run is None or not self.run.batches or len(self.run.step_end_s) < self.run.batches:
            raise ValueError("nothing recorded yet: loop over tracer.watch(loader) first "
                             "(and let it yield at least one batch)")
        return self.run

    @property
    def throughput(self) -> Pass:
        """Counts, wall time and waits of the last pass."""
        return self._require_pass()

    @property
    def timeline(self) -> Timeline:
        """Which worker made each batch of the last pass, and when (see ``Timeline``)."""
        run = self._require_pass()
        if any(meta is None for meta in run.metas):
            raise ValueError("the batches carry no worker information: build the DataLoader with "
                             "collate_fn=tracer.collate (or tracer.collate_with(your_collate_fn))")
        loader = self._loader
        if not isinstance(loader, DataLoader):
            raise TypeError("a timeline needs tracer.watch(a DataLoader)")
        in_flight = loader.num_workers * (loader.prefetch_factor or 0)
        last_end: dict[int, float] = {}
        out = []
        for k, meta in enumerate(run.metas):
            worker, end = meta["worker"], meta["end"] - run.origin  # a perf_counter reading
            requested, received = run.requested_s[k], run.received_s[k]
            if worker == -1:
                start = requested
            else:
                sent = 0.0 if k < in_flight else run.received_s[k - in_flight]
                start = max(sent, last_end.get(worker, 0.0))
            last_end[worker] = end
            out.append({"batch": k, "worker": worker, "pid": meta["pid"], "start": min(start, end),
                        "end": end, "requested": requested, "received": received,
                        "wait": received - requested, "step_end": run.step_end_s[k]})
        return Timeline(out, run.seconds)


def trace_timeline(
    loader: DataLoader,
    step: Callable[[Any], Any] | float | None = None,
    max_batches: int | None = None,
) -> Timeline:
    """Run one pass over a copy of ``loader`` whose collate_fn is traced and return its
    ``Timeline`` (``step`` runs on each batch, a callable or seconds of sleep).

    For instruments that sweep loaders; in a lesson, write the loop over ``Tracer.watch``.
    """
    require_loader(loader)
    tracer = Tracer()
    traced = rebuild(loader, collate_fn=tracer.collate_with(loader.collate_fn))
    step_fn = _as_step(step)
    for batch in tracer.watch(traced, max_batches):
        if step_fn is not None:
            step_fn(batch)
    return tracer.timeline
