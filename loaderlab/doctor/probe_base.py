"""What every probe shares: the loader and its copy, the time budget, the findings, and the
helpers that read samples, samplers and attributes."""

from __future__ import annotations

import itertools
import multiprocessing
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import BatchSampler, DataLoader, IterableDataset

from loaderlab.doctor.findings import Finding, finding
from loaderlab.doctor.workers import (
    identity,
)
from loaderlab.loaders import rebuild
from loaderlab.messages import one_line

MATERIAL_MS = 5.0  # a batch that costs less to make than this gains nothing from more workers
# the probes that start no worker: they run even once the time budget is spent
NO_WORKERS = ("pickling", "samples", "collate", "coverage", "batches", "samplers", "containers")
SPEED_S = 4.0  # the speed probe's timed windows (start-up excluded) take at most this, all passes together
LARGE = 1.5  # a measured gain or loss this large is a warning; a smaller one is a note
SCHEDSTAT = "/proc/self/schedstat"  # cpu_ns run_delay_ns timeslices (Linux)
MAX_DRAWS = 1_000_000  # the coverage probe counts at most this many indices of one epoch


def as_index(key: Any) -> int | None:
    """Return ``key`` as an int when it is one (Python, NumPy or a 0-d integer tensor), else None."""
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return int(key)
    if isinstance(key, torch.Tensor) and key.dim() == 0 and not key.is_floating_point():
        return int(key)
    return None


def hashable(key: Any) -> Any:
    """Return a hashable stand-in for a sampler's key (ints as ints; lists as tuples)."""
    index = as_index(key)
    if index is not None:
        return index
    if isinstance(key, (list, tuple)):
        return tuple(hashable(k) for k in key)
    try:
        hash(key)
        return key
    except TypeError:
        return repr(key)


def samplers_of(loader: DataLoader) -> list[Any]:
    """Return the loader's sampler, batch sampler and the batch sampler's sampler (those set)."""
    found = (loader.sampler, loader.batch_sampler, getattr(loader.batch_sampler, "sampler", None))
    return [s for s in found if s is not None]


def probe_loader(loader: DataLoader, dataset: Any, indices: Sequence[int], **overrides: Any) -> DataLoader:
    """Return a copy of ``loader`` over a probe wrapper, one item per "batch" (no collation)."""
    kwargs = {"dataset": dataset, "batch_size": None, "batch_sampler": None, "sampler": list(indices)}
    return rebuild(loader, **kwargs, **{"drop_last": False, "collate_fn": identity, **overrides})


def fields_of(dataset: Any) -> Iterator[tuple[str, Any]]:
    """Yield ``(name, value)`` for the attributes of the dataset and of a dataset it wraps."""
    for prefix, ds in [("dataset", dataset), ("dataset.dataset", getattr(dataset, "dataset", None))]:
        for name, value in (getattr(ds, "__dict__", None) or {}).items():
            yield f"{prefix}.{name}", value


def tensors_in(obj: Any) -> list[Any]:
    """Return the tensors and arrays in a sample or batch, in a fixed order."""
    if isinstance(obj, (torch.Tensor, np.ndarray)):
        return [obj]
    if isinstance(obj, dict):
        return [t for k in sorted(obj, key=repr) for t in tensors_in(obj[k])]
    if isinstance(obj, (list, tuple)):
        return [t for item in obj for t in tensors_in(item)]
    return []


def length_of(dataset: Any) -> int | None:
    """Return ``len(dataset)``, or None when it has no length."""
    try:
        return len(dataset)
    except TypeError:
        return None


def common_positions(position_sets: list[set[int] | None]) -> tuple[int, int]:
    """Return (how many random positions were equal in every compared pair, pairs compared)."""
    sets = [p for p in position_sets if p is not None]
    return (len(set.intersection(*sets)), len(sets)) if sets else (0, 0)


class ProbeBase:
    """The state of one ``doctor(...)`` call that every probe reads; ``work`` is the loader over
    the copies (or None)."""

    def __init__(
        self,
        loader: DataLoader,
        work: DataLoader | None,
        copy_problem: str | None,
        budget_s: float,
        max_batches: int,
        workers: Sequence[int] | None,
        step_s: float,
        between_epochs: Callable[[DataLoader, int], Any] | None,
        shm_bytes: int | None,
    ) -> None:
        self.loader, self._work, self.copy_problem = loader, work, copy_problem
        self.end, self.max_batches, self.workers = time.perf_counter() + budget_s, max_batches, workers
        self.step_s, self.between_epochs, self.shm_bytes = step_s, between_epochs, shm_bytes
        self.iterable = isinstance(loader.dataset, IterableDataset)
        try:
            self.n = None if self.iterable else len(loader.dataset)
        except TypeError:
            self.n = None
        ctx = loader.multiprocessing_context  # a context (torch converts a name) or None
        self.method = ctx.get_start_method() if ctx else multiprocessing.get_start_method()
        self.findings: list[Finding] = []
        self.figures: dict[str, dict[str, Any]] = {}
        self.workers_ok = self.batches_ok = True  # False once workers cannot start / batches cannot collate
        self.stream_duplicates = False
        self.startup_s = 0.0  # longest wait seen for a first item from new workers
        self.bad: set[int] = set()  # indices the samples probe found unreadable (they raise or are None)
        self.causes: list[str] = []  # errors already reported with their root cause (one finding each)
        self.key_problem = self._key_problem()

    @property
    def copied(self) -> bool:
        """Whether the user's objects could be copied (else only pickling and containers run)."""
        return self._work is not None

    @property
    def work(self) -> DataLoader:
        """The loader over the copies: every probe but pickling and containers uses it, and
        ``Doctor.why_not`` runs none of those without it."""
        if self._work is None:
            raise LookupError(f"no copy of the loader: the dataset {self.copy_problem}")
        return self._work

    @property
    def dataset(self) -> Any:
        """The copy of the user's dataset (any object with ``__getitem__``/``__iter__``): the probes
        fetch from it alone."""
        return self.work.dataset

    def _key_problem(self) -> str | None:
        """Return why the probes cannot fetch ``dataset[i]`` for an int ``i`` (the sampler hands
        ``__getitem__`` something else: tuples, strings, lists with batch_size=None), else None."""
        if self._work is None or self.iterable or not self.n:
            return None
        work = self._work
        custom = work.batch_sampler is not None and type(work.batch_sampler) is not BatchSampler
        try:
            first = next(iter(work.batch_sampler if custom else work.sampler), None)
        except Exception as exc:  # noqa: BLE001 - the user's sampler failing is said, not raised
            return f"its sampler raises {one_line(exc)}"
        if custom and isinstance(first, (list, tuple)) and first:
            first = first[0]
        if first is None or as_index(first) is not None:
            return None
        if isinstance(first, list) and work.batch_size is not None:
            return None  # batches of batches: reported by the coverage probe; dataset[i] still reads
        return f"the sampler yields {type(first).__name__} keys, not int indices"

    def spread(self, most: int = 16) -> list[int]:
        """Return up to ``most`` readable indices spread over the dataset (first and last included)."""
        n = self.n or 0
        picked = sorted({(j * n) // most for j in range(min(n, most))} | ({n - 1} if n else set()))
        good = [i for i in picked if i not in self.bad]
        if len(good) < min(n, most) // 2:  # most of those are unreadable: take readable ones in order
            good += itertools.islice((i for i in range(n) if i not in self.bad), most - len(good))
        return sorted(set(good))[:most]

    def left(self) -> float:
        """Return the seconds left of the time budget."""
        return self.end - time.perf_counter()

    def add(self, code: str, severity: str | None = None, **figures: Any) -> None:
        self.findings.append(finding(code, severity, **figures))

    def started(self, seconds: float) -> None:
        """Note how long new workers took to deliver their first item (start-up included)."""
        self.startup_s = max(self.startup_s, seconds)

    def _hook(self, loader: DataLoader, epoch: int) -> None:
        if self.between_epochs is not None:
            self.between_epochs(loader, epoch)
