"""Lab 07 checker: a ``worker_init_fn`` that reseeds the dataset's own NumPy generator.

The lab's dataset (notebook 07's ``HeldRng``) draws one value per sample from ``self.rng``; each
worker starts with a copy of it. ``check_worker_init_fn(worker_init_fn, dataset)`` runs the function
in real 2-worker DataLoaders and counts duplicated values exactly (float64 draws never collide).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

from loaderlab._validate import require_positive
from loaderlab.checks.report import Wrong, checker
from loaderlab.env import can_fork
from loaderlab.loaders import stop_workers
from loaderlab.measure import timed_pass

HINT = "Hint: notebook 07, section 'Fixes: reseed in `worker_init_fn`, or build the generator in the worker'"
HINT_RUNS = "Hint: notebook 07, section 'The same data in two runs: `generator=`, and `num_workers` with it'"
BATCH_SIZE, NUM_WORKERS, EPOCHS = 2, 2, 2
MIN_ITEMS = 8

# In a worker: what the probed worker_init_fn changed (dataset.rng, np.random); read by the collate.
_INIT_REPORT: tuple[float, float] = (0.0, 0.0)


def _generator_state(rng: Any) -> Any:
    bit_generator = getattr(rng, "bit_generator", None)
    return bit_generator.state if bit_generator is not None else None


class _ProbedInit:
    """A ``worker_init_fn`` that calls ``fn`` (none: the broken baseline) and notes whether it
    changed the dataset's generator and NumPy's global one."""

    def __init__(self, fn: Callable[[int], Any] | None) -> None:
        self.fn = fn

    def __call__(self, worker_id: int) -> None:
        global _INIT_REPORT
        dataset = get_worker_info().dataset
        rng_before = getattr(dataset, "rng", None)
        state_before = _generator_state(rng_before)
        np_before = np.random.get_state()[1].copy()
        if self.fn is not None:
            self.fn(worker_id)
        rng_after = getattr(dataset, "rng", None)
        rng_changed = rng_after is not rng_before or _generator_state(rng_after) != state_before
        _INIT_REPORT = (float(rng_changed), float(not np.array_equal(np.random.get_state()[1], np_before)))


def _probe_collate(batch: list[Any]) -> torch.Tensor:
    """Rows ``[draw, worker id, dataset.rng changed, np.random changed]``, one per sample (the draw:
    the sample itself or its last element)."""
    info = get_worker_info()
    worker = info.id if info is not None else -1
    draws = [float(torch.as_tensor(sample, dtype=torch.float64).flatten()[-1]) for sample in batch]
    return torch.tensor([[draw, worker, *_INIT_REPORT] for draw in draws], dtype=torch.float64)


@dataclass
class SeedingRun:
    """What ``seeding_run`` collected: per epoch, the samples' values and workers in index order."""

    values: list[list[float]]  # [epoch][index]
    workers: list[list[int]]
    rng_changed: bool  # dataset.rng was replaced or reseeded in some worker
    np_changed: bool  # np.random's global state was changed by the worker_init_fn

    def duplicates_within_epochs(self) -> int:
        """Return how many values repeat an earlier value of the same epoch (summed over epochs)."""
        return sum(len(v) - len(set(v)) for v in self.values)

    def duplicates_across_epochs(self) -> int:
        """Return how many values of a later epoch already appeared in an earlier epoch."""
        seen = [set().union(*self.values[:e]) for e in range(len(self.values))]
        return sum(value in seen[e] for e, epoch in enumerate(self.values) for value in epoch)


def seeding_run(worker_init_fn: Callable[[int], Any] | None, dataset: Dataset, seed: int = 0,
                persistent_workers: bool = False, epochs: int = EPOCHS) -> SeedingRun:
    """Return the values 2 workers drew from ``dataset`` over ``epochs`` epochs, with a
    ``generator`` seeded with ``seed`` (workers forked where fork exists: the function may be
    defined in a notebook)."""
    require_positive(epochs, "epochs")
    loader = DataLoader(
        dataset, batch_size=BATCH_SIZE, num_workers=NUM_WORKERS, collate_fn=_probe_collate,
        worker_init_fn=_ProbedInit(worker_init_fn), timeout=20,
        generator=torch.Generator().manual_seed(seed), persistent_workers=persistent_workers,
        multiprocessing_context="fork" if can_fork() else None,
    )
    values, workers, rng_changed, np_changed = [], [], False, False
    try:
        for _ in range(epochs):  # the pass timer stops workers that do not persist, even after an error
            rows = torch.cat(timed_pass(loader, keep=True).values)
            values.append(rows[:, 0].tolist())
            workers.append([int(w) for w in rows[:, 1].tolist()])
            rng_changed |= bool(rows[:, 2].any())
            np_changed |= bool(rows[:, 3].any())
    finally:  # persistent workers live in the loader until now
        stop_workers(loader._iterator)
        loader._iterator = None
    return SeedingRun(values, workers, rng_changed, np_changed)


@checker
def check_worker_init_fn(candidate: Callable[[int], Any], dataset: Dataset) -> str:
    """Return a confirmation if ``candidate`` makes 2 workers draw distinct augmentation values
    from ``dataset``, different every epoch (persistent workers or not), and the same values
    for the same seed."""
    if not isinstance(dataset, Dataset) or not hasattr(dataset, "__len__"):
        raise Wrong(f"check_worker_init_fn(worker_init_fn, dataset) needs the lab's dataset (HeldRng from "
                    f"notebook 07) as dataset, got {type(dataset).__name__}: run the cell that builds it.")
    n = len(dataset)
    if not isinstance(getattr(dataset, "rng", None), np.random.Generator) or n < MIN_ITEMS:
        raise Wrong(f"dataset must be the lab's HeldRng(16): at least {MIN_ITEMS} samples and a NumPy "
                    f"generator in dataset.rng (kind='numpy'), the generator your worker_init_fn reseeds.")
    if not can_fork() and "__main__" in (candidate.__module__, type(dataset).__module__):
        raise Wrong("here workers start with spawn and cannot import a function defined in a notebook: "
                    "write worker_init_fn with the lab's %%writefile lab07.py cell, import it and check that")
    for where, persistent in (("within an epoch", False), ("with persistent_workers=True", True)):
        run = seeding_run(candidate, dataset, seed=0, persistent_workers=persistent)
        count, total = run.duplicates_within_epochs(), sum(len(v) for v in run.values)
        duplicates = f"{count} of {total} values were duplicates {where}"
        if count and run.np_changed and not run.rng_changed:
            raise Wrong(f"you seeded NumPy's global generator (np.random), but the dataset draws from its "
                        f"own generator dataset.rng, which stayed the same copy in both workers: "
                        f"{duplicates}. {HINT}")
        if count and not run.rng_changed:
            raise Wrong(f"dataset.rng was not reseeded, so both workers draw from identical copies of it: "
                        f"{duplicates}. Hint: in worker_init_fn, set get_worker_info().dataset.rng; "
                        f"{HINT[6:]}")
        if count:
            raise Wrong(f"both workers got the same seed (a constant?): {duplicates}: seed from "
                        f"get_worker_info().seed, which differs per worker and per epoch. {HINT}")
        repeats = run.duplicates_across_epochs()
        if repeats and persistent:
            raise Wrong(f"with persistent_workers=True, {repeats} values of epoch 2 repeat epoch 1. {HINT}")
        if repeats:
            raise Wrong(f"the values repeat from one epoch to the next ({repeats} of {n} values of epoch 2 "
                        f"already came in epoch 1): your seed does not change between epochs (the worker "
                        f"id only?), get_worker_info().seed does. {HINT}")
        if not persistent:
            first, again = run, seeding_run(candidate, dataset, seed=0)
            if again.values != first.values:
                differ = sum(a != b for a, b in zip(first.values[0], again.values[0], strict=True))
                raise Wrong(f"two runs with the same generator seed gave different values ({differ} of "
                            f"{n} differ in epoch 1): your seed is not reproducible (time? os.urandom?); "
                            f"derive it from get_worker_info().seed, which the loader's generator "
                            f"decides. {HINT_RUNS}")
    return (f"{NUM_WORKERS} workers drew {n * EPOCHS} distinct values over {EPOCHS} epochs "
            f"(persistent workers or not), and the same generator seed gave the same values")
