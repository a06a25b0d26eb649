"""Checker for lab 11: an IterableDataset sharded by rank *and* DataLoader worker.

Ranks are simulated in one process (``make_dataset(n, rank=r, world_size=w)`` for every ``r``,
each read by its own real DataLoader); workers are real worker processes, started like the
session's (the student's class lives in ``lab11.py``, which spawned workers import; a class
still defined in the notebook is forked, or read by workers simulated in this process where
fork does not exist). Every item of ``range(n)`` must arrive exactly once over all ranks and
workers.
"""

from __future__ import annotations

import collections
import contextlib
import operator
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch
from torch.utils.data import DataLoader, IterableDataset
from torch.utils.data._utils import worker as _worker

from loaderlab.checks.loops import worker_start_method
from loaderlab.checks.report import Wrong, checker
from loaderlab.measure import timed_pass

HINT_WORKERS = "Hint: notebook 11, section '2. Shard the stream per worker'."
HINT_RANKS = "Hint: notebook 11, section '5. Distributed: shard by rank *and* worker'."
N = 29  # prime: divisible by no world size, no worker count and no product of them
WORLD_SIZES = (1, 2)
NUM_WORKERS = (0, 1, 2, 3)
TIMEOUT_S = 30.0  # per batch; spawned workers import torch before their first item


def _item(value: Any, where: str) -> int:
    """Return one yielded item as an int: ints, NumPy ints and 0-d integer tensors pass."""
    if isinstance(value, torch.Tensor):
        if value.dim() == 0 and not value.is_floating_point() and value.dtype != torch.bool:
            return int(value)
        kind = f"a tensor of shape {tuple(value.shape)}, dtype {value.dtype}"
    elif isinstance(value, bool):
        kind = f"{value!r}"
    else:
        try:
            return operator.index(value)
        except TypeError:
            kind = f"{value!r} ({type(value).__name__})"
    raise Wrong(f"{where} yielded {kind}: yield one int per item (a 0-d integer tensor is "
                f"accepted too), not floats, lists or batches. {HINT_WORKERS}")


@contextlib.contextmanager
def _simulated_worker(dataset: IterableDataset, worker_id: int, num_workers: int) -> Iterator[None]:
    # What torch.utils.data._utils.worker._worker_loop sets in a real worker, so that
    # get_worker_info() answers the same in this process (used only for a class defined in the
    # notebook where fork does not exist: Windows).
    _worker._worker_info = _worker.WorkerInfo(
        id=worker_id, num_workers=num_workers, seed=worker_id, dataset=dataset)
    try:
        yield
    finally:
        _worker._worker_info = None


def _read(dataset: IterableDataset, num_workers: int, limit: int, where: str) -> list[int]:
    """Return the items a DataLoader with ``num_workers`` delivers from ``dataset`` (at most
    ``limit``, so that a stream that never ends cannot hang the checker)."""
    method = worker_start_method(dataset) if num_workers else None
    if num_workers and method is None:
        readers: list[Any] = []
        for w in range(num_workers):
            with _simulated_worker(dataset, w, num_workers):
                readers.extend(_take(iter(dataset), limit - len(readers), where))
        return readers
    # Workers start like the session's; a class defined in a notebook cell lives in __main__,
    # which spawned workers cannot import, so it is forked (a copy instead of a pickle).
    context = {"multiprocessing_context": method, "timeout": TIMEOUT_S} if num_workers else {}
    with warnings.catch_warnings():
        # 3 workers on a 2-core machine warn; the warning depends on the machine, not the answer
        warnings.filterwarnings("ignore", message="This DataLoader will create")
        loader = DataLoader(dataset, batch_size=None, num_workers=num_workers, **context)
        # the pass timer stops the workers, also when a worker raised or the stream ran on
        return _take(timed_pass(loader, limit + 1, keep=True).values, limit, where)


def _take(iterator: Iterable[Any], limit: int, where: str) -> list[int]:
    items = []
    for value in iterator:
        items.append(_item(value, where))
        if len(items) > limit:
            raise Wrong(f"{where} delivered more than {limit} items for n={N}: the stream must "
                        f"end after its share. {HINT_WORKERS}")
    return items


def _readings(make_dataset: Callable[..., Any]) -> dict[tuple[int, int], list[list[int]]]:
    """Return, per (world_size, num_workers), the items each rank's loader delivered."""
    readings = {}
    for world in WORLD_SIZES:
        for workers in NUM_WORKERS:
            per_rank = []
            for rank in range(world):
                where = f"rank {rank} of {world} with num_workers={workers}"
                dataset = make_dataset(N) if world == 1 else make_dataset(
                    N, rank=rank, world_size=world)
                if not isinstance(dataset, IterableDataset):
                    raise Wrong(f"make_dataset returned {type(dataset).__name__}: return an "
                                f"IterableDataset (a class with __iter__). {HINT_WORKERS}")
                try:
                    per_rank.append(_read(dataset, workers, 4 * N, where))
                except AttributeError as exc:
                    if workers == 0 and "NoneType" in str(exc):
                        raise Wrong(
                            f"with num_workers=0 your dataset raised AttributeError ({exc}): "
                            f"get_worker_info() returns None in the main process — treat that "
                            f"as worker 0 of 1. {HINT_WORKERS}") from None
                    raise
            readings[world, workers] = per_rank
    return readings


def _diagnose(readings: dict[tuple[int, int], list[list[int]]]) -> None:
    """Raise Wrong with the first problem in ``readings``, checked in teaching order."""
    within = [(key, rank, item, n) for key, ranks in readings.items()
              for rank, items in enumerate(ranks)
              for item, n in collections.Counter(items).items() if n > 1]
    across = []
    for (world, workers), ranks in readings.items():
        seen: dict[int, int] = {}
        for rank, items in enumerate(ranks):
            for item in set(items):
                if item in seen:
                    across.append(((world, workers), seen[item], rank, item))
                seen.setdefault(item, rank)
    if within and across and readings[2, 0][0] == readings[2, 0][1]:
        raise Wrong(f"your stream is not sharded: every worker of every rank yields all {N} "
                    f"items — split it by rank and by get_worker_info(). {HINT_RANKS}")
    if within:
        (world, workers), rank, item, n = within[0]
        raise Wrong(f"with num_workers={workers} item {item} arrives {n} times from one rank: "
                    f"the workers of a rank yield the same items — split the stream by "
                    f"get_worker_info().id and .num_workers too. {HINT_WORKERS}")
    if across:
        (world, workers), first, second, item = across[0]
        raise Wrong(f"with world_size={world} and num_workers={workers} ranks {first} and "
                    f"{second} both yield item {item}: the ranks duplicate each other — there "
                    f"are world_size × num_workers readers, number them rank * num_workers + "
                    f"worker id. {HINT_RANKS}")
    for (world, workers), ranks in readings.items():
        delivered = sorted(item for items in ranks for item in items)
        outside = [i for i in delivered if not 0 <= i < N]
        if outside:
            raise Wrong(f"with world_size={world} and num_workers={workers} your stream yields "
                        f"{outside[0]}, which is not in range({N}). {HINT_WORKERS}")
        missing = sorted(set(range(N)) - set(delivered))
        if missing:
            readers = world * max(workers, 1)
            remainder = N % readers
            why = (f"blocks of n // {readers} lose the last {remainder} item(s) — give the "
                   f"remainder to some readers (or deal items round-robin)"
                   if missing == list(range(N - remainder, N)) else
                   "every item must reach exactly one reader")
            raise Wrong(f"with world_size={world} and num_workers={workers}, {len(missing)} of "
                        f"{N} items never arrive (e.g. item {missing[-1]}): {why}. {HINT_RANKS}")


@checker
def check_sharded_iterable(make_dataset: Callable[..., Any]) -> str:
    """Return a confirmation if ``make_dataset(n, rank=0, world_size=1)`` yields ``range(n)``
    exactly once over all ranks and workers; raise Wrong with the first problem found.

    Tried: n=29, world sizes 1 and 2 (ranks simulated in this process), num_workers 0-3 (real
    workers started like the session's; a class defined in the notebook is forked, or read by
    workers simulated in-process where fork does not exist), and a second epoch. Items may be
    ints or 0-d integer tensors.
    """
    readings = _readings(make_dataset)
    _diagnose(readings)
    dataset = make_dataset(N)
    _read(dataset, 0, 4 * N, "the first epoch")
    again = _read(dataset, 0, 4 * N, "a second epoch")
    if sorted(again) != list(range(N)):
        raise Wrong(f"a second epoch over the same dataset delivered {len(again)} of {N} "
                    f"items: create the iterator inside __iter__, not in __init__. "
                    f"{HINT_WORKERS}")
    method = worker_start_method(dataset)
    how = (f"real workers started by {method}" if method else
           "workers simulated in-process: your class is defined in the notebook and this platform cannot fork")
    return (f"all {N} items arrive exactly once for world sizes {list(WORLD_SIZES)} × "
            f"num_workers {list(NUM_WORKERS)} ({len(readings)} setups, {how})")
