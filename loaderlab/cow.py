"""Copy-on-write memory in DataLoader workers: table layouts, a per-epoch memory probe, plots.

The Dataset classes and the ``worker_init_fn`` live in the package (not in notebook cells) so
that workers started with ``spawn`` or ``forkserver`` can unpickle them.
"""

from __future__ import annotations

import gc
import mmap
import multiprocessing
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from torch.utils.data import DataLoader, Dataset

from loaderlab.datasets import MetadataDataset
from loaderlab.env import can_fork
from loaderlab.loaders import require_positive, stop_workers
from loaderlab.measure import MemoryRecord, WorkerMemorySampler

MB = 1024 * 1024
_GC_HEAD_BYTES = 16  # sizeof(PyGC_Head) on 64-bit CPython: two pointers just before the object


class NoForkHere(RuntimeError):
    """Raised where a measurement asks for fork on a platform that has none (Windows). In
    Jupyter it shows as its one sentence (IPython prints what ``_render_traceback_`` returns)."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


def list_size_mb(rows: list[str]) -> float:
    """Return the memory (MB) a list of str occupies: its pointer array plus every string object.

    Sizes come from ``sys.getsizeof`` (what CPython allocated for each object, before the
    allocator rounds it up), so the figure is the same on every run.
    """
    if not isinstance(rows, list) or not rows or not isinstance(rows[0], str):
        raise TypeError("rows must be a non-empty list of str")
    return (sys.getsizeof(rows) + sum(sys.getsizeof(row) for row in rows)) / MB


def pack_rows(rows: list[str], backend: str = "numpy") -> tuple[Any, Any]:
    """Return ``(buffer, offsets)``: all rows' UTF-8 bytes in one uint8 buffer, and int64
    offsets such that row ``i`` is ``buffer[offsets[i]:offsets[i + 1]]``.

    ``backend`` is ``"numpy"`` (NumPy arrays) or ``"torch"`` (tensors). Two objects hold the
    whole table, whatever its length, and rows may have any length (no padding).
    """
    if backend not in ("numpy", "torch"):
        raise ValueError(f"backend must be 'numpy' or 'torch', got {backend!r}")
    if not isinstance(rows, list) or not rows or not isinstance(rows[0], str):
        raise TypeError("rows must be a non-empty list of str")
    joined = "".join(rows)
    if joined.isascii():  # one byte per character: lengths in characters are lengths in bytes
        lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        data = joined.encode()
    else:
        encoded = [row.encode() for row in rows]
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        data = b"".join(encoded)
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    buffer = np.frombuffer(data, dtype=np.uint8).copy()
    if backend == "torch":
        return torch.from_numpy(buffer), torch.from_numpy(offsets)
    return buffer, offsets


class RowLengths(MetadataDataset):
    """``MetadataDataset`` with a batched fetch: returns row lengths, reading rows read-only.

    ``__getitems__`` (which the DataLoader calls with a whole batch of indices) reads each row
    exactly as ``__getitem__`` does but returns plain ints, which ``default_collate`` turns
    into one LongTensor: an epoch over 10⁵ rows takes a fraction of a second.
    """

    def __getitems__(self, indices: Sequence[int]) -> list[int]:
        rows = self.rows
        return [len(rows[i]) for i in indices]


class PackedRowLengths(Dataset):
    """Rows stored as one byte buffer plus offsets (see ``pack_rows``); returns row lengths.

    Reading a row slices the buffer: no per-row Python object exists, so no reference count
    inside the table is ever written. Works with NumPy arrays or torch tensors.
    """

    def __init__(self, buffer: np.ndarray | torch.Tensor, offsets: np.ndarray | torch.Tensor) -> None:
        if len(offsets) < 2:
            raise ValueError("offsets must hold at least 2 entries (one row)")
        if int(offsets[-1]) != len(buffer):
            raise ValueError(f"offsets end at {int(offsets[-1])} but buffer holds {len(buffer)} bytes")
        self.buffer, self.offsets = buffer, offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def row(self, index: int) -> str:
        """Return row ``index`` decoded to str (a fresh object owned by the caller)."""
        start, end = int(self.offsets[index]), int(self.offsets[index + 1])
        chunk = self.buffer[start:end]
        raw = chunk.numpy().tobytes() if isinstance(chunk, torch.Tensor) else chunk.tobytes()
        return raw.decode()

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor(len(self.row(index)))

    def __getitems__(self, indices: Sequence[int]) -> list[int]:
        return [len(self.row(i)) for i in indices]


class NormalizingRowLengths(Dataset):
    """A NumPy bytes table that is *written*: each row read is upper-cased in place first
    (a lazy "clean the data on first use"). Returns row lengths.

    Every write lands in a page shared with the parent, so the worker gets its own copy of
    that page: the write case of copy-on-write.
    """

    def __init__(self, table: np.ndarray) -> None:
        if not isinstance(table, np.ndarray) or table.dtype.kind != "S" or not len(table):
            raise TypeError("table must be a non-empty NumPy bytes array (e.g. metadata_array(rows))")
        self.table = table

    def __len__(self) -> int:
        return len(self.table)

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor(self.__getitems__([index])[0])

    def __getitems__(self, indices: Sequence[int]) -> list[int]:
        table = self.table
        lengths = []
        for i in indices:
            table[i] = table[i].upper()
            lengths.append(len(table[i]))
        return lengths


def _uss_mb() -> float:
    import psutil

    return psutil.Process().memory_full_info().uss / MB


class _UssNow:
    """Pickles to "read this process's USS": unpickling it returns a float (MB), not itself."""

    def __reduce__(self) -> tuple[Any, tuple]:
        return (_uss_mb, ())


def _rebuild_probe(num_items: int, names: list[str], *readings_and_parts: Any) -> UnpickleCost:
    # readings_and_parts = (uss0, part1, uss1, part2, uss2, ...): each USS reading was taken
    # by the unpickler right after the part before it was rebuilt.
    readings = readings_and_parts[0::2]
    parts = readings_and_parts[1::2]
    probe = UnpickleCost.__new__(UnpickleCost)
    probe.num_items, probe.parts = num_items, dict(zip(names, parts, strict=True))
    probe.cost_mb = [after - before for before, after in zip(readings[:-1], readings[1:], strict=True)]
    return probe


class UnpickleCost(Dataset):
    """A probe Dataset: each item is a FloatTensor of how many MB this process's USS grew while
    each of ``parts`` was unpickled into it (0 in the process that built it).

    Under ``spawn`` or ``forkserver`` every worker receives the Dataset pickled; with
    ``batch_size=1`` and ``num_items == num_workers`` each worker returns its own figures.
    Unpickling reads the USS (Linux/macOS, via psutil) before and after each part.
    """

    def __init__(self, parts: dict[str, Any], num_items: int = 2) -> None:
        if not isinstance(parts, dict) or not parts:
            raise TypeError("parts must be a non-empty dict of name -> object")
        self.num_items = require_positive(num_items, "num_items")
        self.parts = parts
        self.cost_mb = [0.0] * len(parts)

    def __len__(self) -> int:
        return self.num_items

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor(self.cost_mb, dtype=torch.float32)

    def __reduce__(self) -> tuple[Any, tuple]:
        interleaved: list[Any] = [_UssNow()]
        for part in self.parts.values():
            interleaved += [part, _UssNow()]
        return (_rebuild_probe, (self.num_items, list(self.parts), *interleaved))


class WorkerStart:
    """A ``worker_init_fn``: returns None once the new worker may start fetching — after
    ``gate`` (a multiprocessing Event) is set, if given, and a pause of ``pause_s`` seconds —
    having run a full garbage collection there first if ``collect``.

    The gate lets a memory sampler read every worker before it fetches anything, so that
    "growth" is measured from the worker's state right after it was started. ``collect=True``
    does at once what CPython's collector does by itself after enough allocations: a
    full collection, which writes into the header of every tracked container object. Given
    ``collect_mb`` (a shared array of floats, one per worker, e.g. ``multiprocessing.Array``),
    the worker stores there how much its USS grew during that collection alone (MB): read
    just before and just after it, so nothing else the worker or its parent does counts.
    """

    def __init__(
        self, gate: Any = None, collect: bool = False, pause_s: float = 0.0, gate_timeout_s: float = 60.0,
        collect_mb: Any = None,
    ) -> None:
        for name, value in (("pause_s", pause_s), ("gate_timeout_s", gate_timeout_s)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{name} must be a number of seconds >= 0, got {value!r}")
        if not isinstance(collect, bool):
            raise TypeError(f"collect must be a bool, got {type(collect).__name__}")
        if gate is not None and not callable(getattr(gate, "wait", None)):
            raise TypeError(f"gate must be an Event (with .wait), got {type(gate).__name__}")
        if collect_mb is not None and not (collect and hasattr(collect_mb, "__setitem__")):
            raise ValueError("collect_mb needs collect=True and a shared array (one float per worker)")
        self.gate, self.collect, self.collect_mb = gate, collect, collect_mb
        self.pause_s, self.gate_timeout_s = float(pause_s), float(gate_timeout_s)

    def __call__(self, worker_id: int) -> None:
        if self.gate is not None:
            self.gate.wait(self.gate_timeout_s)
        time.sleep(self.pause_s)
        if self.collect:
            before = _uss_mb()
            gc.collect()
            added = _uss_mb() - before
            if self.collect_mb is not None:
                self.collect_mb[worker_id] = added

    def __repr__(self) -> str:
        gated = self.gate is not None
        return f"WorkerStart(gated={gated}, collect={self.collect}, pause_s={self.pause_s})"


def tracked_pages() -> tuple[int, float]:
    """Return ``(objects, mb)``: how many objects the garbage collector tracks in this process,
    and the size (MB) of the distinct memory pages that hold their GC headers.

    A full collection writes into every one of those headers (``update_refs`` in
    ``Modules/gcmodule.c``), so a forked worker that collects copies about ``mb`` of pages.
    Objects moved out of the collector's reach by ``gc.freeze()`` are not counted (nor written).
    """
    objects = gc.get_objects()
    pages = {(id(obj) - _GC_HEAD_BYTES) // mmap.PAGESIZE for obj in objects}
    return len(objects), len(pages) * mmap.PAGESIZE / MB


@dataclass
class EpochMemory:
    """What ``epoch_memory`` measured: the sampler's readings and the figures derived from them."""

    label: str
    num_workers: int
    start_method: str
    records: list[MemoryRecord]
    worker_growth_mb: list[float]
    worker_peak_uss_mb: list[float]
    peak_total_pss_mb: float | None
    seconds: float
    collect_mb: list[float] | None = None  # per worker: USS its full collection added (collect=True)
    tracked_objects: int | None = None  # objects the collector tracked here as the workers started
    tracked_pages_mb: float | None = None  # ... and the pages holding them: what a collection writes

    def worker_records(self) -> list[MemoryRecord]:
        """Return the readings of the workers only (the main process left out)."""
        return [r for r in self.records if r.role == "worker"]

    def total_pss_series(self) -> tuple[list[float], list[float]]:
        """Return ``(times_s, total_pss_mb)``: main + workers' summed PSS at each reading (Linux)."""
        totals: dict[float, float] = {}
        for r in self.records:
            if r.pss_mb is None:
                return [], []
            totals[r.t] = totals.get(r.t, 0.0) + r.pss_mb
        times = sorted(totals)
        return times, [totals[t] for t in times]

    @property
    def min_growth_mb(self) -> float:
        """Return the smallest worker's USS growth (MB) over the epoch."""
        return min(self.worker_growth_mb)

    @property
    def mean_growth_mb(self) -> float:
        """Return the mean USS growth (MB) of the workers over the epoch."""
        return sum(self.worker_growth_mb) / len(self.worker_growth_mb)


def epoch_memory(
    dataset: Dataset,
    num_workers: int,
    label: str = "",
    batch_size: int = 10_000,
    step_s: float = 0.0,
    context: str | None = None,
    collect: bool = False,
    seed: int = 0,
) -> EpochMemory:
    """Return per-worker USS growth, peak USS and peak total PSS over one shuffled epoch.

    The loader uses ``shuffle=True`` (seeded), ``batch_size`` and ``num_workers`` workers
    started with ``context`` (None = this process's start method; ``"fork"`` raises
    ``NoForkHere`` on Windows). Each worker waits at a gate until the sampler has read it
    once, so that reading precedes any fetch (then runs a full garbage collection if
    ``collect``, and reports the USS that collection alone added: ``collect_mb``, to compare
    with ``tracked_pages_mb``, see ``WorkerStart`` and ``tracked_pages``); the main process
    waits ``step_s`` per batch (a training step) and takes a last reading after the final
    batch, while the workers are still alive. A full garbage collection runs here first.
    """
    require_positive(num_workers, "num_workers")
    require_positive(batch_size, "batch_size")
    if context == "fork" and not can_fork():
        raise NoForkHere("this platform has no fork (Windows), so workers never share this process's "
                         "memory: there is no copy-on-write to measure (notebook 06, section 7 runs here)")
    if context is not None and context not in multiprocessing.get_all_start_methods():
        raise ValueError(f"context {context!r} is not available here: {multiprocessing.get_all_start_methods()}")
    mp = multiprocessing.get_context(context)
    gate, collected = mp.Event(), mp.Array("d", num_workers) if collect else None
    loader = DataLoader(
        dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
        generator=torch.Generator().manual_seed(seed), multiprocessing_context=context,
        worker_init_fn=WorkerStart(gate, collect, collect_mb=collected),
    )
    # Collect here first: a worker inherits the collector's counters, and a full collection
    # that was nearly due would otherwise run in the worker before its first reading.
    gc.collect()
    tracked = tracked_pages() if collect else (None, None)
    start = time.perf_counter()
    iterator = iter(loader)  # starts the workers, which wait at the gate
    try:
        with WorkerMemorySampler() as sampler:
            sampler.sample()
            gate.set()
            for _ in range(len(loader)):
                next(iterator)
                time.sleep(step_s)
            sampler.sample()  # the last reading, while the workers are still alive
        # Stop them only now, unobserved: while one worker exits, the pages it still shared
        # with the other (not with this process, which wrote its own copy) become the
        # other's alone, so its USS jumps by megabytes that no reading of the epoch saw.
    finally:
        stop_workers(iterator)
        del iterator
    seconds = time.perf_counter() - start
    growth = sampler.worker_uss_growth_mb()
    peaks = sampler.peak_uss_by_worker()
    pids = sampler.worker_pids()
    if len(pids) != num_workers:
        raise RuntimeError(f"the sampler saw {len(pids)} workers, expected {num_workers}")
    return EpochMemory(
        label=label or f"{type(dataset).__name__}, {num_workers} workers",
        num_workers=num_workers,
        start_method=context or multiprocessing.get_start_method(),
        records=sampler.records,
        worker_growth_mb=[growth[p] for p in pids],
        worker_peak_uss_mb=[peaks[p] for p in pids],
        peak_total_pss_mb=sampler.peak_total_pss_mb(),
        seconds=seconds,
        collect_mb=list(collected) if collected is not None else None,
        tracked_objects=tracked[0],
        tracked_pages_mb=tracked[1],
    )


def plot_total_pss(results: Sequence[EpochMemory], title: str, ax: Axes | None = None) -> Axes:
    """Line plot of the total PSS (main + workers, MB) of each run over its epoch (Linux)."""
    if not results:
        raise ValueError("results must hold at least one EpochMemory")
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.5))
    for r in results:
        times, totals = r.total_pss_series()
        if times:
            ax.plot(times, totals, marker=".", label=r.label)
    ax.set_xlabel("time since the epoch started (s)")
    ax.set_ylabel("total PSS, main + workers (MB)")
    ax.set_title(title)
    ax.legend(loc="best", fontsize="small")
    ax.figure.tight_layout()
    return ax


def plot_growth(
    results: Sequence[EpochMemory], reference_mb: float, title: str, ax: Axes | None = None
) -> Axes:
    """Bar chart of each run's mean worker USS growth (MB), with the table's size as a line."""
    if not results:
        raise ValueError("results must hold at least one EpochMemory")
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.5))
    labels = [r.label for r in results]
    values = [r.mean_growth_mb for r in results]
    bars = ax.barh(labels, values, color=["tab:red" if v > reference_mb / 2 else "tab:green" for v in values])
    ax.bar_label(bars, fmt="%.0f MB", padding=3, fontsize="small")
    ax.axvline(reference_mb, color="k", linestyle=":", label=f"size of the Python list ({reference_mb:.0f} MB)")
    ax.invert_yaxis()
    ax.set_xlabel("USS growth per worker over one epoch (MB)")
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize="small")
    ax.figure.tight_layout()
    return ax
