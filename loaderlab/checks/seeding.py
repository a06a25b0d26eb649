"""Lab 07 checker: a ``worker_init_fn`` that reseeds the dataset's own NumPy generator.

The lab hands over its dataset: notebook 07's ``HeldRng`` (``lesson07.py``), which draws one
random "augmentation" value per sample from its own ``np.random.Generator`` (``self.rng``)
and returns ``[index, worker, draw]``. A forked or spawned worker starts with a *copy* of that
generator, so without reseeding every worker (and, without persistent workers, every epoch)
draws the same values. ``check_worker_init_fn(worker_init_fn, dataset)`` runs the function in
real 2-worker DataLoaders over that dataset and counts duplicated values exactly (two
independent float64 draws never collide).
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


def _draw_of(sample: Any) -> float:
    """The random value of a sample: the sample itself (a number) or its last element."""
    return float(torch.as_tensor(sample, dtype=torch.float64).flatten()[-1])


class _ProbedInit:
    """A ``worker_init_fn`` that calls ``fn`` and notes whether it changed the dataset's
    generator and NumPy's global one (torch has already seeded the latter per worker)."""

    def __init__(self, fn: Callable[[int], Any]) -> None:
        self.fn = fn

    def __call__(self, worker_id: int) -> None:
        global _INIT_REPORT
        dataset = get_worker_info().dataset
        rng_before = getattr(dataset, "rng", None)
        state_before = _generator_state(rng_before)
        np_before = np.random.get_state()[1].copy()
        self.fn(worker_id)
        rng_after = getattr(dataset, "rng", None)
        rng_changed = rng_after is not rng_before or _generator_state(rng_after) != state_before
        np_changed = not np.array_equal(np.random.get_state()[1], np_before)
        _INIT_REPORT = (float(rng_changed), float(np_changed))


def _probe_collate(batch: list[Any]) -> torch.Tensor:
    """Rows ``[draw, worker id, dataset.rng changed, np.random changed]``, one per sample."""
    info = get_worker_info()
    worker = info.id if info is not None else -1
    return torch.tensor([[_draw_of(sample), worker, *_INIT_REPORT] for sample in batch], dtype=torch.float64)


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
        seen: set[float] = set()
        count = 0
        for epoch in self.values:
            count += sum(value in seen for value in epoch)
            seen |= set(epoch)
        return count


def seeding_run(
    worker_init_fn: Callable[[int], Any] | None,
    dataset: Dataset,
    seed: int = 0,
    persistent_workers: bool = False,
    epochs: int = EPOCHS,
) -> SeedingRun:
    """Return the values 2 workers drew from ``dataset`` over ``epochs`` epochs, with a
    ``generator`` seeded with ``seed`` (workers forked when fork exists: the function may be
    defined in a notebook, which spawned workers cannot import)."""
    require_positive(epochs, "epochs")
    loader = DataLoader(
        dataset, batch_size=BATCH_SIZE, num_workers=NUM_WORKERS, collate_fn=_probe_collate,
        worker_init_fn=_ProbedInit(worker_init_fn or _no_reseed), timeout=20,
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
    finally:
        if loader._iterator is not None:  # persistent workers live in the loader until now
            loader._iterator._shutdown_workers()
            loader._iterator = None
    return SeedingRun(values, workers, rng_changed, np_changed)


def _no_reseed(worker_id: int) -> None:
    """A ``worker_init_fn`` that does nothing: the broken baseline."""


def _require_lab_dataset(dataset: Any) -> int:
    """Return the dataset's length; raise Wrong unless it is the lab's dataset (a generator in .rng)."""
    if not isinstance(dataset, Dataset) or not hasattr(dataset, "__len__"):
        raise Wrong(f"check_worker_init_fn(worker_init_fn, dataset) needs the lab's dataset (HeldRng from "
                    f"notebook 07) as dataset, got {type(dataset).__name__}: run the cell that builds it.")
    if not isinstance(getattr(dataset, "rng", None), np.random.Generator) or len(dataset) < MIN_ITEMS:
        raise Wrong(f"dataset must be the lab's HeldRng(16): at least {MIN_ITEMS} samples and a NumPy "
                    f"generator in dataset.rng (kind='numpy'), the generator your worker_init_fn reseeds.")
    return len(dataset)


def _duplicates_wrong(run: SeedingRun, where: str) -> Wrong:
    count = run.duplicates_within_epochs()
    total = sum(len(v) for v in run.values)
    if not run.rng_changed and run.np_changed:
        return Wrong(
            f"you seeded NumPy's global generator (np.random), but the dataset draws from its own "
            f"generator dataset.rng, which stayed the same copy in both workers: {count} of "
            f"{total} values were duplicates {where}. {HINT}"
        )
    if not run.rng_changed:
        return Wrong(
            f"dataset.rng was not reseeded, so both workers draw from identical copies of it: "
            f"{count} of {total} values were duplicates {where}. "
            f"Hint: in worker_init_fn, set get_worker_info().dataset.rng; {HINT[6:]}"
        )
    return Wrong(
        f"both workers got the same seed (a constant?): {count} of {total} "
        f"values were duplicates {where}: seed from get_worker_info().seed, which differs per "
        f"worker and per epoch. {HINT}"
    )


@checker
def check_worker_init_fn(candidate: Callable[[int], Any], dataset: Dataset) -> str:
    """Return a confirmation if ``candidate`` makes 2 workers draw distinct augmentation values
    from ``dataset``, different every epoch (persistent workers or not), and the same values
    for the same seed."""
    n = _require_lab_dataset(dataset)
    if not can_fork() and "__main__" in (candidate.__module__, type(dataset).__module__):
        raise Wrong(
            "here workers start with spawn and cannot import a function defined in a notebook: "
            "write worker_init_fn with the lab's %%writefile lab07.py cell, import it and check that"
        )
    first = seeding_run(candidate, dataset, seed=0)
    if first.duplicates_within_epochs():
        raise _duplicates_wrong(first, "within an epoch")
    if first.duplicates_across_epochs():
        raise Wrong(
            f"the values repeat from one epoch to the next ({first.duplicates_across_epochs()} of "
            f"{n} values of epoch 2 already came in epoch 1): your seed does not change "
            f"between epochs (the worker id only?), get_worker_info().seed does. {HINT}"
        )
    again = seeding_run(candidate, dataset, seed=0)
    if again.values != first.values:
        differ = sum(a != b for a, b in zip(first.values[0], again.values[0], strict=True))
        raise Wrong(
            f"two runs with the same generator seed gave different values ({differ} of {n} "
            f"differ in epoch 1): your seed is not reproducible (time? os.urandom?); derive it from "
            f"get_worker_info().seed, which the loader's generator decides. {HINT_RUNS}"
        )
    persistent = seeding_run(candidate, dataset, seed=0, persistent_workers=True)
    if persistent.duplicates_within_epochs():
        raise _duplicates_wrong(persistent, "with persistent_workers=True")
    if persistent.duplicates_across_epochs():
        raise Wrong(
            f"with persistent_workers=True, {persistent.duplicates_across_epochs()} values of epoch "
            f"2 repeat epoch 1. {HINT}"
        )
    return (
        f"{NUM_WORKERS} workers drew {n * EPOCHS} distinct values over {EPOCHS} epochs "
        f"(persistent workers or not), and the same generator seed gave the same values"
    )
