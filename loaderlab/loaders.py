"""Inspecting, rebuilding and stopping DataLoaders without touching the caller's loader, and
comparing batches: used by the instruments, the checkers and the doctor; notebooks 00-04 import
``same_batches``."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch.utils.data import DataLoader, IterableDataset

from loaderlab._validate import require_loader

_KILLED_JOIN_S = 2.0  # how long a terminated worker gets to exit before SIGKILL


def stop_workers(iterator: Any, kill: bool = False) -> None:
    """Shut down the worker processes of a DataLoader iterator now (no-op for one without
    workers, or for anything that is not a DataLoader iterator).

    An iterator stops its workers in ``__del__``, that is at the next garbage collection when
    a traceback or a frame still holds it; ``_shutdown_workers``
    (``torch/utils/data/dataloader.py``, ``_MultiProcessingDataLoaderIter``) does it at once.
    ``kill``: terminate them first. A worker that is stuck, or still starting (under spawn it
    imports torch), does not answer the shutdown request, and ``_shutdown_workers`` would wait
    ``MP_STATUS_CHECK_INTERVAL`` (5 s) for each; torch's own last resort, in its ``finally``,
    is the same ``terminate()``. A worker killed while it held the lock of the iterator's
    ``_workers_done_event`` leaves it locked, and ``_shutdown_workers`` would wait for it
    forever (``_replace_orphaned_done_event``).
    """
    shutdown = getattr(iterator, "_shutdown_workers", None)
    if shutdown is None:
        return
    if kill and not iterator._shutdown:
        from torch.utils.data._utils import signal_handling

        if iterator._worker_pids_set:  # stop the SIGCHLD handler from reporting the kills
            signal_handling._remove_worker_pids(id(iterator))
            iterator._worker_pids_set = False
        for worker in iterator._workers:
            if worker.is_alive():
                worker.terminate()
        for worker in iterator._workers:
            worker.join(timeout=_KILLED_JOIN_S)
            if worker.is_alive():
                worker.kill()
                worker.join()
        _replace_orphaned_done_event(iterator)
    shutdown()


def _replace_orphaned_done_event(iterator: Any) -> None:
    """Give a DataLoader iterator whose workers are all dead a new ``_workers_done_event`` if a
    killed worker died holding the old one's lock.

    Each worker calls ``done_event.is_set()`` for every index it receives
    (``torch/utils/data/_utils/worker.py``, ``_worker_loop``), and ``is_set`` holds the event's
    lock, a POSIX semaphore, which nobody releases when its holder dies. The first thing
    ``_shutdown_workers`` does is ``_workers_done_event.set()``, which takes that lock: the
    "hanging in Event.set()" its own comment warns about. With every worker dead, only this
    process still uses the event, so a ``threading.Event`` serves as well.
    """
    lock = iterator._workers_done_event._cond._lock
    if lock.acquire(timeout=0.5):
        lock.release()
    else:  # its owner is dead (releasing it from here would break the lock's own bookkeeping)
        iterator._workers_done_event = threading.Event()


def rebuild(loader: DataLoader, **overrides: Any) -> DataLoader:
    """Return a new DataLoader like ``loader`` (the same batches) with ``overrides`` applied
    (e.g. ``num_workers``). The sampler / batch sampler objects are shared, not copied, so the
    new loader draws from the same generator; ``prefetch_factor`` and ``persistent_workers``
    are dropped when it has no workers."""
    require_loader(loader)
    kwargs: dict[str, Any] = dict(
        dataset=loader.dataset,
        num_workers=loader.num_workers,
        collate_fn=loader.collate_fn,
        pin_memory=loader.pin_memory,
        timeout=loader.timeout,
        worker_init_fn=loader.worker_init_fn,
        multiprocessing_context=loader.multiprocessing_context,
        generator=loader.generator,
        prefetch_factor=loader.prefetch_factor,
        persistent_workers=loader.persistent_workers,
        in_order=getattr(loader, "in_order", True),
    )
    if isinstance(loader.dataset, IterableDataset):
        kwargs.update(batch_size=loader.batch_size, drop_last=loader.drop_last)
    elif loader.batch_sampler is not None:
        kwargs.update(batch_sampler=loader.batch_sampler)
    else:
        kwargs.update(batch_size=None, sampler=loader.sampler)
    kwargs.update(overrides)
    if kwargs.get("num_workers", 0) == 0:
        kwargs["prefetch_factor"] = None
        kwargs["persistent_workers"] = False
    return DataLoader(**kwargs)


def batch_size_of(batch: Any) -> int:
    """Return the number of samples in a collated batch (tensor, sequence or dict of them)."""
    if isinstance(batch, torch.Tensor):
        return int(batch.shape[0]) if batch.dim() > 0 else 1
    if isinstance(batch, Mapping):
        for value in batch.values():
            return batch_size_of(value)
        return 0
    if isinstance(batch, Sequence) and not isinstance(batch, (str, bytes)):
        if len(batch) and isinstance(batch[0], (torch.Tensor, Mapping)):
            return batch_size_of(batch[0])
        if len(batch) and isinstance(batch[0], Sequence) and not isinstance(batch[0], str):
            return batch_size_of(batch[0])
        return len(batch)
    return 1


def same_batch(a: Any, b: Any) -> bool:
    """Return True if two collated batches are equal element by element (tensors compared
    exactly; tuples, lists and dicts compared recursively)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (
            isinstance(a, torch.Tensor)
            and isinstance(b, torch.Tensor)
            and a.shape == b.shape
            and a.dtype == b.dtype
            and torch.equal(a, b)
        )
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_batch(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_batch(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def same_batches(a: Any, b: Any) -> bool:
    """Return True if two iterables of batches (e.g. two loaders) yield equal batches, same count."""
    a, b = list(a), list(b)
    return len(a) == len(b) and all(same_batch(x, y) for x, y in zip(a, b, strict=True))
