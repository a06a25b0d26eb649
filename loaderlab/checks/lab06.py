"""Lab 06 checker: a Dataset that keeps its table shared by forked workers (copy-on-write).

``check_cow_fix(FixedDataset)`` checks that ``FixedDataset(rows)`` returns exactly ``rows[i]`` (a
list of str), then measures under ``WorkerMemorySampler`` how much each of 2 forked workers' private
memory (USS) grows over one shuffled epoch: per-row Python objects are copied page by page into
every worker that reads them, one shared buffer is not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from loaderlab._validate import require_positive
from loaderlab.checks.report import NotCheckable, Wrong, checker
from loaderlab.env import can_fork
from loaderlab.labs.lab06 import N_ROWS, caption_rows, list_bytes
from loaderlab.measure import WorkerMemorySampler
from loaderlab.units import MB

GROWTH_LIMIT = 0.10  # a fix may grow a worker by at most 10 % of the list's size
HINT = "Hint: notebook 06, section 'Fixes that keep the table shared'"


@dataclass
class WorkerGrowth:
    """What ``worker_growth`` measured: items in index order and each worker's USS growth (MB)."""

    items: list[Any]
    growth_mb: list[float]


def worker_growth(
    dataset: Dataset, num_workers: int = 2, batch_size: int = 500, seed: int = 0
) -> WorkerGrowth:
    """Return the items of one shuffled epoch over ``dataset`` in forked workers (inherited, not
    pickled: it may be defined in a notebook), and each worker's USS growth in MB from the gate."""
    require_positive(num_workers, "num_workers")
    require_positive(batch_size, "batch_size")
    # A fixed shuffled order (a list is a valid sampler), so items can be put back by index.
    order = torch.randperm(len(dataset), generator=torch.Generator().manual_seed(seed)).tolist()
    mem = WorkerMemorySampler(interval_s=0.05, include_main=False)
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=order,
        num_workers=num_workers,
        worker_init_fn=mem.gate,
        collate_fn=list,
        multiprocessing_context="fork",
        timeout=60,
    )
    items = [item for batch in mem.watch(loader) for item in batch]  # only this loader's workers
    growth = mem.worker_uss_growth_mb()
    pids = mem.worker_pids()
    if len(pids) != num_workers:
        raise RuntimeError(f"the memory sampler saw {len(pids)} workers, expected {num_workers}")
    by_index: list[Any] = [None] * len(items)
    for index, item in zip(order, items, strict=True):
        by_index[index] = item
    return WorkerGrowth(by_index, [growth[p] for p in pids])


def _check_rows(get: Callable[[int], Any], indices: range | list[int], rows: list[str], where: str) -> None:
    """Raise Wrong naming the first row ``i`` in ``indices`` for which ``get(i)`` is not ``rows[i]``."""
    for i in indices:
        item, row = get(i), rows[i]
        if isinstance(item, str) and item == row:
            continue
        if isinstance(item, (bytes, np.bytes_)):
            why = "returns bytes instead of str (decode the row with .decode())"
        elif not isinstance(item, str):
            why = f"returns {type(item).__name__} instead of the row's str"
        elif item == row.strip():
            why = "strips the row (it loses the trailing space the original row has)"
        elif row.startswith(item):
            why = f"truncates the row to {len(item)} of its {len(row)} characters (a fixed width too small?)"
        else:
            why = "returns a different row"
        raise Wrong(f"row {i}{where}: your dataset {why}. {HINT}")


def _culprit(dataset: Dataset) -> str:
    """Return which attribute of ``dataset`` still holds one Python object per row (for the message)."""
    for name, value in vars(dataset).items():
        if isinstance(value, np.ndarray) and value.dtype == object:
            return f"`{name}` is a NumPy array of dtype=object, which stores one Python object per row"
        if isinstance(value, (list, tuple)) and len(value) > 1000:
            kind = type(value[0]).__name__
            return f"`{name}` is still a {type(value).__name__} of {kind} (one Python object per row)"
    return "the rows are still separate Python objects"


@checker
def check_cow_fix(candidate: Callable[[list[str]], Dataset], n_rows: int = N_ROWS) -> str:
    """Return a confirmation if ``candidate(rows)`` returns every row exactly and keeps the
    table shared by 2 forked workers (USS growth < 10 % of the list's size)."""
    rows = caption_rows(n_rows)
    dataset = candidate(rows)
    if not isinstance(dataset, Dataset):
        raise Wrong(
            f"{getattr(candidate, '__name__', 'your class')}(rows) returned a "
            f"{type(dataset).__name__}, not a torch Dataset. Hint: subclass torch.utils.data.Dataset"
        )
    if len(dataset) != len(rows):
        raise Wrong(f"your dataset has {len(dataset)} items but the table has {len(rows)} rows. {HINT}")
    fork = can_fork()
    # With fork the workers' items are all compared below; first a quick look at a spread of rows.
    indices = range(len(rows)) if not fork else sorted({*range(1000), *range(0, len(rows), 101)})
    _check_rows(lambda i: dataset[i], indices, rows, "")
    if not fork:  # the rows are right, but what the lab is about cannot be measured: not a pass
        raise NotCheckable(
            f"no fork (all {len(rows):,} rows returned exactly, but whether forked "
            "workers share the table can only be measured where fork exists: Linux "
            "or macOS, or WSL on Windows)"
        )
    size_mb = list_bytes(rows) / MB
    measured = worker_growth(dataset)
    _check_rows(measured.items.__getitem__, range(len(rows)), rows, " read in a worker")
    if max(measured.growth_mb) >= GROWTH_LIMIT * size_mb:
        raise Wrong(
            f"a forked worker's private memory grew by {max(measured.growth_mb):.0f} MB while reading "
            f"the {size_mb:.0f} MB table (limit {GROWTH_LIMIT * size_mb:.0f} MB): {_culprit(dataset)}, "
            f"and every read writes the reference count of the row's object, so its page is copied. {HINT}"
        )
    return (
        f"all {len(rows):,} rows returned exactly, and 2 forked workers each grew by less than "
        f"{GROWTH_LIMIT:.0%} of the {size_mb:.0f} MB list"
    )
