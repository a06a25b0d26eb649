"""Lab 07 checker: a Dataset that keeps a seed and builds its NumPy generator in the process that
draws (the course's seeding recipe, notebook 07 section 4).

``check_seeded_dataset(Augmented)`` builds its own instances (``Augmented(n, seed=...)``, rows
``[index, worker, draw]`` like notebook 07's ``HeldRng``), draws from them in the main process,
then in real 2-worker DataLoaders (workers forked where fork exists; persistent or not; wrapped
in ``Subset`` and ``ConcatDataset``) and counts repeated draws exactly: two independent float64
draws never collide, so every repeat is a copied or replayed stream. Last, it pickles one, as
spawn sends it to a worker: no generator may travel. Workers are bounded by the DataLoader's
``timeout=``, the answer's code in this process by ``MAIN_BOUND_S``.
"""

from __future__ import annotations

import pickle
import random

import numpy as np
import torch
from torch.utils.data import ConcatDataset, DataLoader, Dataset, Subset

from loaderlab.checks.report import Wrong, bounded, checker, epoch
from loaderlab.env import can_fork
from loaderlab.loaders import stop_workers
from loaderlab.messages import one_line

SECTION = {  # notebook 07's section titles, as the hints quote them
    1: "1, 'How torch seeds each worker today'",
    3: "3, 'The pitfall: a generator held by the Dataset'",
    4: "4, 'Fixes that miss, and the recipe: build the generator in the worker'",
    5: "5, 'A `torch.Generator` held by the Dataset crashes spawned workers'",
    6: "6, 'The same data in two runs: `generator=`, and `num_workers` with it'",
}
BATCH_SIZE, NUM_WORKERS, EPOCHS, N = 2, 2, 2, 16
TIMEOUT_S = 20  # a worker that sends no batch for this long ends the check (DataLoader's timeout=)
MAIN_BOUND_S = 20.0  # the same for the answer's code run in this process (SIGALRM, where it exists)
GENERATORS = (np.random.Generator, np.random.BitGenerator, random.Random, torch.Generator)


def hint(section: int) -> str:
    """Return the hint that points at notebook 07's ``section``."""
    return f"Hint: notebook 07, section {SECTION[section]}."


def draws(
    dataset: Dataset, epochs: int = 1, workers: int = NUM_WORKERS, persistent: bool = False, seed: int = 0
) -> list[torch.Tensor]:
    """Return each epoch's rows ``[index, worker, draw]`` in the order a loader over ``dataset``
    delivered them (``workers`` processes, forked where fork exists; a loader ``generator``
    seeded with ``seed``). The workers are stopped at the end, persistent ones too, even after
    an error; a worker silent for ``TIMEOUT_S`` ends the pass with an error."""
    persistent = persistent and workers > 0
    loader = DataLoader(
        dataset,
        batch_size=BATCH_SIZE,
        num_workers=workers,
        generator=torch.Generator().manual_seed(seed),
        persistent_workers=persistent,
        timeout=TIMEOUT_S if workers else 0,
        multiprocessing_context="fork" if workers and can_fork() else None,
    )
    try:
        return [torch.cat(epoch(loader, stop=not persistent)) for _ in range(epochs)]
    finally:  # persistent workers live in the loader until now
        stop_workers(loader._iterator)
        loader._iterator = None


def repeats(rows: torch.Tensor) -> list[tuple[int, int]]:
    """Return ``(first, later)`` row positions for every draw that equals an earlier one."""
    first: dict[float, int] = {}
    pairs = []
    for position, value in enumerate(rows[:, 2].tolist()):
        if value in first:
            pairs.append((first[value], position))
        else:
            first[value] = position
    return pairs


def repeats_across(earlier: torch.Tensor, later: torch.Tensor) -> int:
    """Return how many draws of ``later`` already came in ``earlier``."""
    seen = set(earlier[:, 2].tolist())
    return sum(value in seen for value in later[:, 2].tolist())


def _build(dataset_class: type, n: int, seed: int) -> Dataset:
    name = dataset_class.__name__
    try:
        return dataset_class(n, seed=seed)
    except TypeError as exc:
        raise Wrong(
            f"{name}({n}, seed={seed}) failed ({one_line(exc)}): keep the lab's "
            f"__init__(self, n, seed), the checker builds its own instances."
        ) from None


def _main_process_rows(dataset: Dataset, name: str) -> torch.Tensor:
    """Two epochs of ``dataset[i]`` in this process, each row checked to be ``[i, -1, draw]``."""
    rows = []
    for _ in range(EPOCHS):
        for index in range(len(dataset)):
            try:
                row = dataset[index]
            except (AttributeError, TypeError) as exc:
                if "NoneType" not in str(exc):
                    raise
                raise Wrong(
                    f"in the main process (num_workers=0) get_worker_info() is None, so your code "
                    f"failed there ({one_line(exc)}): fall back to torch.initial_seed() when it is "
                    f"None. {hint(4)}"
                ) from None
            ok = (
                isinstance(row, torch.Tensor)
                and row.dtype == torch.float64
                and tuple(row.shape) == (3,)
                and row[0].item() == index
                and row[1].item() == -1
            )
            if not ok:
                got = (
                    f"a {row.dtype} tensor of shape {tuple(row.shape)}: {row.tolist()}"
                    if isinstance(row, torch.Tensor) and row.numel() <= 8
                    else type(row).__name__
                )
                raise Wrong(
                    f"{name}(...)[{index}] must be a float64 tensor [index, worker, draw] like "
                    f"HeldRng's (worker -1 in the main process), got {got}: keep the lab's "
                    f"__getitem__."
                )
            rows.append(row)
    return torch.stack(rows)


def _within_epoch(rows: torch.Tensor, where: str, concat_half: int | None = None) -> None:
    """Raise Wrong, with the reason, when draws of one epoch repeat."""
    pairs = repeats(rows)
    if not pairs:
        return
    count = f"{len(pairs)} of {len(rows)} values repeated {where}"
    workers = rows[:, 1].tolist()
    same_worker = [(a, b) for a, b in pairs if workers[a] == workers[b]]
    if not same_worker:
        raise Wrong(
            f"the two workers drew the same values ({count}): each got a copy of a generator made "
            f"before they started (in __init__, or by a draw in the main process), in the same "
            f"state; build it in the worker, again whenever get_worker_info().seed changes. "
            f"{hint(3)}"
        )
    if concat_half is not None and all(
        (a < concat_half) != (b < concat_half)  # rows in index order
        for a, b in same_worker
    ):
        raise Wrong(
            f"two datasets with different seeds, joined by a ConcatDataset, replayed each other's "
            f"draws in the same worker ({count}): get_worker_info().seed alone is the same for "
            f"both, mix the dataset's own seed (self.seed) into it. {hint(4)}"
        )
    raise Wrong(
        f"one worker drew the same value twice ({count}): the generator is rebuilt (or reset) for "
        f"every sample; build it once per seed and keep drawing from it. {hint(4)}"
    )


@checker
def check_seeded_dataset(dataset_class: type) -> str:
    """Return a confirmation if ``dataset_class(n, seed=...)`` draws distinct values in 2 workers,
    new ones every epoch (persistent workers or not), inside a Subset and in a ConcatDataset of
    two seeds, and in the main process; the same values again for the same loader seed; and if,
    pickled, it carries no generator."""
    if not (isinstance(dataset_class, type) and issubclass(dataset_class, Dataset)):
        what = type(dataset_class).__name__ if not isinstance(dataset_class, type) else dataset_class.__name__
        raise Wrong(
            f"check_seeded_dataset(Augmented) needs your Dataset class (from lab07.py), got {what}: "
            f"pass the class itself, not an instance or a function."
        )
    name = dataset_class.__name__
    if not can_fork() and dataset_class.__module__ == "__main__":
        raise Wrong(
            f"here workers start with spawn and cannot import a class defined in a notebook: write "
            f"{name} with the lab's %%writefile lab07.py cell, import it and check that."
        )
    dataset = _build(dataset_class, N, seed=0)
    slow = (
        f"{N * EPOCHS} draws in the main process took more than {MAIN_BOUND_S:.0f} s: does "
        f"generator() loop forever?"
    )
    with bounded(MAIN_BOUND_S, slow):
        main = _main_process_rows(dataset, name)  # first: a generator made here must not reach the workers
    if repeats(main):
        raise Wrong(
            f"in the main process (num_workers=0) {len(repeats(main))} of {len(main)} values "
            f"repeated over {EPOCHS} epochs: build the generator once per seed and keep drawing "
            f"from it. {hint(4)}"
        )

    run = draws(dataset, epochs=EPOCHS)
    for rows in run:
        _within_epoch(rows, "within an epoch")
    again = repeats_across(*run)
    if again:
        raise Wrong(
            f"{again} of {N} values of epoch 2 repeated epoch 1: your seed does not change between "
            f"epochs (the worker id alone?); get_worker_info().seed does, the loader draws a new "
            f"base seed every epoch. {hint(1)}"
        )
    kept = draws(dataset, epochs=EPOCHS, persistent=True)
    for rows in kept:
        _within_epoch(rows, "within an epoch with persistent_workers=True")
    again = repeats_across(*kept)
    if again:
        raise Wrong(
            f"with persistent_workers=True, {again} of {N} values of epoch 2 repeated epoch 1: the "
            f"workers' seed stays the same, so keep drawing from the generator you built. {hint(4)}"
        )
    _within_epoch(draws(Subset(dataset, range(N)))[0], "inside a Subset")
    joined = ConcatDataset([_build(dataset_class, N // 2, seed=1), _build(dataset_class, N // 2, seed=2)])
    _within_epoch(draws(joined)[0], "in a ConcatDataset", concat_half=N // 2)

    rerun = draws(dataset)[0]  # epoch 1 again, same loader seed
    if not torch.equal(run[0], rerun):
        differ = int((run[0][:, 2] != rerun[:, 2]).sum())
        raise Wrong(
            f"two runs with DataLoader(generator=torch.Generator().manual_seed(0)) drew different "
            f"values ({differ} of {N} differ in epoch 1): your seed is not the loader's (the clock? "
            f"os.urandom? default_rng() without a seed?); build the generator from "
            f"get_worker_info().seed. {hint(6)}"
        )

    with bounded(MAIN_BOUND_S, f"pickling {name} took more than {MAIN_BOUND_S:.0f} s"):
        copy = pickle.loads(pickle.dumps(dataset))  # as spawn sends the dataset to each worker
    held = [key for key, value in getattr(copy, "__dict__", {}).items() if isinstance(value, GENERATORS)]
    if held:
        raise Wrong(
            f"pickled, as spawn sends it to each worker, {name} still carries its generator "
            f"({held[0]}): leave it out in __getstate__, each worker builds its own. {hint(5)}"
        )
    try:
        copy[0]
    except Exception as exc:
        raise Wrong(
            f"pickled and unpickled, as spawn sends it to each worker, {name} fails "
            f"({one_line(exc)}): __getstate__ returns the instance's __dict__ with the generator "
            f"left out. {hint(5)}"
        ) from None
    return (
        f"{NUM_WORKERS} workers drew {N * EPOCHS} distinct values over {EPOCHS} epochs (persistent "
        f"workers or not), distinct inside a Subset and a ConcatDataset of two seeds and in the main "
        f"process; the same loader seed gave the same values"
    )
