"""Instruments: they measure loaders a notebook, a checker or the doctor built.

``passes``: the one pass timer (``timed_batches`` / ``timed_pass`` fill a ``Pass``; ``collect_batches``
keeps one pass's batches), ``throughput``,
``Tracer`` and ``Timeline``, ``trace_timeline``, ``overlap_fraction``. ``memory``: ``live_workers``,
``wait_for_workers_to_exit``, ``OthersCpu``, ``WorkerMemorySampler`` (``MemoryGate``,
``MemoryRecord``), ``SharedMemoryWatcher``, ``shared_memory_used_mb``. Everything is importable
from ``loaderlab.measure``.
"""

from loaderlab.measure.memory import (
    BackgroundSampler,
    MemoryGate,
    MemoryRecord,
    OthersCpu,
    SharedMemoryWatcher,
    WorkerMemorySampler,
    live_workers,
    shared_memory_used_mb,
    wait_for_workers_to_exit,
)
from loaderlab.measure.passes import (
    Pass,
    Timeline,
    TracedBatch,
    TracedCollate,
    Tracer,
    collect_batches,
    overlap_fraction,
    throughput,
    timed_batches,
    timed_pass,
    trace_timeline,
    traceback_tail,
)

__all__ = [
    "BackgroundSampler",
    "MemoryGate",
    "MemoryRecord",
    "OthersCpu",
    "SharedMemoryWatcher",
    "WorkerMemorySampler",
    "live_workers",
    "shared_memory_used_mb",
    "wait_for_workers_to_exit",
    "Pass",
    "Timeline",
    "collect_batches",
    "TracedBatch",
    "TracedCollate",
    "Tracer",
    "overlap_fraction",
    "throughput",
    "timed_batches",
    "timed_pass",
    "trace_timeline",
    "traceback_tail",
]
