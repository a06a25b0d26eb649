"""The pass timer and what is built on it: ``timed_batches`` / ``timed_pass`` fill a ``Pass``
(used by ``throughput``, ``Tracer``, ``WorkerMemorySampler.watch``, the checkers and the doctor);
``Tracer`` and its ``Timeline`` (notebooks 00, 01, 03, 04, 16); ``overlap_fraction`` (01)."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from torch.utils.data import DataLoader, default_collate, get_worker_info

from loaderlab._validate import require_loader, require_positive, require_seconds
from loaderlab.loaders import batch_size_of, rebuild, stop_workers


def _as_step(step: Callable[[Any], Any] | float | None) -> Callable[[Any], Any] | None:
    if step is None or callable(step):
        return step
    if isinstance(step, bool) or not isinstance(step, (int, float)):
        raise TypeError(f"step must be a callable or a number of seconds, got {type(step).__name__}")
    if step < 0:
        raise ValueError(f"step must be >= 0 seconds, got {step}")
    seconds = float(step)
    return lambda _batch: time.sleep(seconds)


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
    close: bool = False,
    iterator: Iterator[Any] | None = None,
    before_stop: Callable[[], Any] | None = None,
) -> Generator[Any, None, None]:
    """Yield the batches of one pass over ``batches`` (a DataLoader or any iterable) and record
    in ``run`` when each was asked for, received and done with: the one pass timer.

    The pass stops after ``max_batches``, or once ``seconds`` have passed since the first batch
    arrived (``count_startup``: since the pass began). ``keep`` stores the batches in
    ``run.values``; ``catch`` ends the pass on an error from the loader and stores it in
    ``run.error`` instead of raising. ``iterator``: one already made by ``iter(batches)``.
    Batches of a ``TracedCollate`` are unwrapped (their worker metadata goes to ``run.metas``).

    In a ``finally``, after ``before_stop()``: a DataLoader's workers are shut down, unless they
    persist (then the loader keeps them; ``close`` shuts them down too); ``kill`` terminates the
    workers of a pass that did not finish first (a stuck worker would make the shutdown wait
    5 s), persistent or not.
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
                if cut or close or not batches.persistent_workers:
                    stop_workers(iterator, kill=cut)
                    if batches._iterator is iterator:
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
    and ``options`` (``count_startup``, ``keep``, ``catch``, ``kill``, ``close``, ``iterator``) as
    in ``timed_batches``."""
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


def collect_batches(loader: DataLoader) -> list[Any]:
    """Return all batches of one pass over ``loader``; its workers are stopped after, also when
    the pass raises or they persist."""
    return timed_pass(loader, keep=True, close=True).values


def throughput(
    loader: DataLoader,
    max_batches: int | None = None,
    step: Callable[[Any], Any] | float | None = None,
) -> Pass:
    """Return the ``Pass`` (``samples_per_s``, ``wait_fraction``, ``first_batch_s``, ...) of one
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
        meta = {"worker": info.id if info is not None else -1, "pid": os.getpid(), "end": time.perf_counter()}
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
        steady = self.records[self.warmup_batches :] or self.records
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
            raise TypeError(
                f"watch() needs a DataLoader or another iterable of batches, got {type(batches).__name__}"
            )
        require_positive(max_batches, "max_batches", allow_none=True)
        self.run, self._loader = Pass(), batches
        return timed_batches(batches, self.run, max_batches)

    def _require_pass(self) -> Pass:
        if self.run is None or not self.run.batches or len(self.run.step_end_s) < self.run.batches:
            raise ValueError(
                "nothing recorded yet: loop over tracer.watch(loader) first "
                "(and let it yield at least one batch)"
            )
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
            raise ValueError(
                "the batches carry no worker information: build the DataLoader with "
                "collate_fn=tracer.collate (or tracer.collate_with(your_collate_fn))"
            )
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
            out.append(
                {
                    "batch": k,
                    "worker": worker,
                    "pid": meta["pid"],
                    "start": min(start, end),
                    "end": end,
                    "requested": requested,
                    "received": received,
                    "wait": received - requested,
                    "step_end": run.step_end_s[k],
                }
            )
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


def overlap_fraction(timeline: Timeline) -> float:
    """Return the share of batch-loading time (workers' fetch + collate) that ran while the
    main process was running its step: 0 when loading and computing take turns, near 1 when
    loading is hidden behind computing.

    Steady state only: the batches before every worker has delivered one
    (``timeline.warmup_batches``) are left out, since they load before any step exists and,
    under spawn, carry each new worker's start-up costs.
    """
    if not isinstance(timeline, Timeline):
        raise TypeError(f"timeline must be a Timeline from trace_timeline, got {type(timeline).__name__}")
    records = timeline.records[timeline.warmup_batches :]
    steps = [(r["received"], r["step_end"]) for r in timeline.records]
    loading = overlapped = 0.0
    for r in records:
        start, end = r["start"], r["end"]
        loading += end - start
        overlapped += sum(max(0.0, min(end, b) - max(start, a)) for a, b in steps)
    return overlapped / loading if loading > 0 else 0.0
