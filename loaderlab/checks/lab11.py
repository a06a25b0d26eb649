"""Checker for lab 11: an IterableDataset sharded by rank *and* DataLoader worker.

Ranks are simulated in one process (``make_dataset(n, rank=r, world_size=w)`` for every ``r``, each
read by its own DataLoader); workers are real, started like the session's (a class still defined in
the notebook is forked, or read by workers simulated in-process where fork does not exist). Every
item of ``range(n)`` must arrive exactly once over all ranks and workers.
"""

from __future__ import annotations

import collections
import operator
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.utils.data import DataLoader, IterableDataset
from torch.utils.data._utils import worker as _worker

from loaderlab.checks.report import Wrong, checker
from loaderlab.env import worker_start_method
from loaderlab.measure import timed_pass

HINT_WORKERS = "Hint: notebook 11, section '2. Shard the stream per worker'."
HINT_RANKS = "Hint: notebook 11, section '5. Distributed: shard by rank *and* worker'."
N = 29  # prime: divisible by no world size, no worker count and no product of them
WORLD_SIZES = (1, 2)
NUM_WORKERS = (0, 1, 2, 3)
TIMEOUT_S = 30.0  # per batch; spawned workers import torch before their first item


def _take(iterator: Iterable[Any], limit: int, where: str) -> list[int]:
    """Return the yielded items as ints (ints, NumPy ints, 0-d integer tensors); raise Wrong for
    another kind of item or for more than ``limit`` items (a stream that never ends)."""
    items = []
    for value in iterator:
        try:
            if isinstance(value, bool) or (
                isinstance(value, torch.Tensor)
                and (value.dim() or value.is_floating_point() or value.dtype == torch.bool)
            ):
                raise TypeError
            items.append(operator.index(value))
        except TypeError:
            kind = (
                f"a tensor of shape {tuple(value.shape)}, dtype {value.dtype}"
                if isinstance(value, torch.Tensor)
                else f"{value!r}"
                if isinstance(value, bool)
                else f"{value!r} ({type(value).__name__})"
            )
            raise Wrong(
                f"{where} yielded {kind}: yield one int per item (a 0-d integer tensor is "
                f"accepted too), not floats, lists or batches. {HINT_WORKERS}"
            ) from None
        if len(items) > limit:
            raise Wrong(
                f"{where} delivered more than {limit} items for n={N}: the stream must "
                f"end after its share. {HINT_WORKERS}"
            )
    return items


def _read(dataset: IterableDataset, num_workers: int, limit: int, where: str) -> list[int]:
    """Return the items a DataLoader with ``num_workers`` delivers from ``dataset`` (at most ``limit``)."""
    method = worker_start_method(dataset) if num_workers else None
    if num_workers and method is None:  # a notebook class and no fork (Windows): simulate the workers
        readers: list[int] = []
        for w in range(num_workers):  # what _worker_loop sets, so that get_worker_info() answers
            _worker._worker_info = _worker.WorkerInfo(id=w, num_workers=num_workers, seed=w, dataset=dataset)
            try:
                readers.extend(_take(iter(dataset), limit - len(readers), where))
            finally:
                _worker._worker_info = None
        return readers
    context = {"multiprocessing_context": method, "timeout": TIMEOUT_S} if num_workers else {}
    with warnings.catch_warnings():
        # 3 workers on a 2-core machine warn; the warning depends on the machine, not the answer
        warnings.filterwarnings("ignore", message="This DataLoader will create")
        loader = DataLoader(dataset, batch_size=None, num_workers=num_workers, **context)
        # the pass timer stops the workers, also when a worker raised or the stream ran on
        return _take(timed_pass(loader, limit + 1, keep=True).values, limit, where)


def _readings(make_dataset: Callable[..., Any]) -> dict[tuple[int, int], list[list[int]]]:
    """Return, per (world_size, num_workers), the items each rank's loader delivered."""
    readings = {}
    for world in WORLD_SIZES:
        for workers in NUM_WORKERS:
            per_rank = []
            for rank in range(world):
                dataset = make_dataset(N) if world == 1 else make_dataset(N, rank=rank, world_size=world)
                if not isinstance(dataset, IterableDataset):
                    raise Wrong(
                        f"make_dataset returned {type(dataset).__name__}: return an "
                        f"IterableDataset (a class with __iter__). {HINT_WORKERS}"
                    )
                try:
                    setup = f"rank {rank} of {world} with num_workers={workers}"
                    per_rank.append(_read(dataset, workers, 4 * N, setup))
                except AttributeError as exc:
                    if workers == 0 and "NoneType" in str(exc):
                        raise Wrong(
                            f"with num_workers=0 your dataset raised AttributeError ({exc}): "
                            f"get_worker_info() returns None in the main process — treat that "
                            f"as worker 0 of 1. {HINT_WORKERS}"
                        ) from None
                    raise
            readings[world, workers] = per_rank
    return readings


def _diagnose(readings: dict[tuple[int, int], list[list[int]]]) -> None:
    """Raise Wrong with the first problem in ``readings``, checked in teaching order."""
    within = [
        (key, item, n)
        for key, ranks in readings.items()
        for items in ranks
        for item, n in collections.Counter(items).items()
        if n > 1
    ]
    across = []
    for key, ranks in readings.items():
        seen: dict[int, int] = {}
        for rank, items in enumerate(ranks):
            across += [(key, seen[item], rank, item) for item in set(items) if item in seen]
            seen.update((item, rank) for item in items if item not in seen)
    if within and across and readings[2, 0][0] == readings[2, 0][1]:
        raise Wrong(
            f"your stream is not sharded: every worker of every rank yields all {N} "
            f"items — split it by rank and by get_worker_info(). {HINT_RANKS}"
        )
    if within:
        (_, workers), item, n = within[0]
        raise Wrong(
            f"with num_workers={workers} item {item} arrives {n} times from one rank: "
            f"the workers of a rank yield the same items — split the stream by "
            f"get_worker_info().id and .num_workers too. {HINT_WORKERS}"
        )
    if across:
        (world, workers), first, second, item = across[0]
        raise Wrong(
            f"with world_size={world} and num_workers={workers} ranks {first} and "
            f"{second} both yield item {item}: the ranks duplicate each other — there "
            f"are world_size × num_workers readers, number them rank * num_workers + "
            f"worker id. {HINT_RANKS}"
        )
    for (world, workers), ranks in readings.items():
        delivered = sorted(item for items in ranks for item in items)
        setup = f"with world_size={world} and num_workers={workers}"
        outside = [i for i in delivered if not 0 <= i < N]
        if outside:
            raise Wrong(
                f"{setup} your stream yields {outside[0]}, which is not in range({N}). {HINT_WORKERS}"
            )
        missing = sorted(set(range(N)) - set(delivered))
        if missing:
            readers = world * max(workers, 1)
            remainder = N % readers
            why = (
                f"blocks of n // {readers} lose the last {remainder} item(s) — give the "
                f"remainder to some readers (or deal items round-robin)"
                if missing == list(range(N - remainder, N))
                else "every item must reach exactly one reader"
            )
            raise Wrong(
                f"{setup}, {len(missing)} of {N} items never arrive (e.g. item {missing[-1]}): "
                f"{why}. {HINT_RANKS}"
            )


@checker
def check_sharded_iterable(make_dataset: Callable[..., Any]) -> str:
    """Return a confirmation if ``make_dataset(n, rank=0, world_size=1)`` yields ``range(n)``
    exactly once over all ranks and workers (n=29, world sizes 1-2, num_workers 0-3, two epochs)."""
    readings = _readings(make_dataset)
    _diagnose(readings)
    dataset = make_dataset(N)
    _read(dataset, 0, 4 * N, "the first epoch")
    again = _read(dataset, 0, 4 * N, "a second epoch")
    if sorted(again) != list(range(N)):
        raise Wrong(
            f"a second epoch over the same dataset delivered {len(again)} of {N} "
            f"items: create the iterator inside __iter__, not in __init__. {HINT_WORKERS}"
        )
    method = worker_start_method(dataset)
    how = (
        f"real workers started by {method}"
        if method
        else "workers simulated in-process: your class is defined in the notebook and this platform "
        "cannot fork"
    )
    return (
        f"all {N} items arrive exactly once for world sizes {list(WORLD_SIZES)} × "
        f"num_workers {list(NUM_WORKERS)} ({len(readings)} setups, {how})"
    )
